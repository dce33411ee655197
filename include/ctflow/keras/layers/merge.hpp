#pragma once
/// @file
/// @brief What the merge layers share (keras.layers.Add, Multiply, Concatenate): a call on two
/// or more tensors of one dtype, `built<T, In...>` for their shapes (`built_on<T, D, In...>` on
/// device D), no weights. They are layers
/// of functional models, where a layer takes several tensors.

#include <tuple>

#include <ctflow/core/errors.hpp>
#include <ctflow/core/shape.hpp>
#include <ctflow/keras/config_dict.hpp>
#include <ctflow/keras/layer.hpp>

namespace ctflow::keras::layers::detail {

/// An element-wise merge (Add, Multiply) of Name over inputs of shapes In... on device D: F folds
/// them.
template <const char* Name, class F> struct elementwise_merge {
  template <class T, class D, ShapeType... In> struct built_on {
    static_assert(sizeof...(In) >= 2, "ctflow::keras: a merge layer is called on two tensors or more");
    static constexpr bool ok = keras::detail::broadcast_together<In...>();
    static constexpr bool checked = [] {
      CTFLOW_STATIC_CHECK(ok, ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::keras::"), ctflow::detail::fixed_string_of<[] { return Name; }>(),
                                                     ctflow::detail::fixed_string(": inputs differ: "), keras::detail::shapes_text<In...>()));
      return ok;
    }();
    static constexpr const char* class_name = Name;
    static constexpr bool merges_masks = true;  // the OR of its inputs' masks, as Keras's merges
    using value_type = T;
    using device_type = D;
    using input_shapes = std::tuple<In...>;
    using input_shape = std::tuple_element_t<0, input_shapes>;
    template <class Spec> explicit built_on(const Spec&) {}
    auto weights() { return std::tuple<>(); }
    /// The inputs, then `training`.
    template <class... A> auto call(const A&... a) const {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        const auto args = std::forward_as_tuple(a...);
        return F{}(std::get<I>(args)...);
      }(std::make_index_sequence<sizeof...(A) - 1>{});
    }
  };
};

}  // namespace ctflow::keras::layers::detail
