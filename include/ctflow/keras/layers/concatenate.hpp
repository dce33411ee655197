#pragma once
/// @file
/// @brief keras.layers.Concatenate(axis=-1): its inputs (two or more) joined along Axis; they
/// agree on every other axis.
///
///     auto both = layers::Concatenate<>{}(x, y);           // the last axis
///     auto rows = layers::Concatenate<1>{}(a, b);

#include <ctflow/keras/layers/merge.hpp>
#include <ctflow/ops/array.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.Concatenate(axis).
template <int Axis = -1> struct Concatenate {
  CTFLOW_KERAS_LAYER_SPEC("Concatenate");
  /// @brief Keras's get_config: axis.
  void get_config(config_dict& c) const { c.set("axis", Axis); }
  template <class T, class D, ShapeType... In> struct built_on {
    static_assert(sizeof...(In) >= 2, "ctflow::keras::Concatenate: it is called on two tensors or more");
    using S0 = std::tuple_element_t<0, std::tuple<In...>>;
    static constexpr int axis = normalize_axis(Axis, S0::rank);
    static constexpr bool ok = axis >= 0 && ops::concat_ok<(axis < 0 ? 0 : axis), In...>();
    static constexpr bool checked = [] {
      CTFLOW_STATIC_CHECK(ok, ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::keras::Concatenate: inputs differ off the axis: "),
                                                     keras::detail::shapes_text<In...>()));
      return ok;
    }();
    static constexpr const char* class_name = "Concatenate";
    // Joined along the features, the OR of its inputs' masks (Keras's); along another axis it drops them.
    static constexpr bool merges_masks = axis == S0::rank - 1;
    using value_type = T;
    using device_type = D;
    using input_shapes = std::tuple<In...>;
    using input_shape = S0;
    using output_shape = std::conditional_t<ok, shape_of<ops::concat_extents<(axis < 0 ? 0 : axis), In...>()>, S0>;
    explicit built_on(const Concatenate&) {}
    auto weights() { return std::tuple<>(); }
    /// The inputs, then `training`.
    template <class... A> auto call(const A&... a) const {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        const auto args = std::forward_as_tuple(a...);
        return ctflow::concat<axis>(std::get<I>(args)...);
      }(std::make_index_sequence<sizeof...(A) - 1>{});
    }
  };
  /// The same on cpu.
  template <class T, ShapeType... In> using built = built_on<T, cpu, In...>;
};

}  // namespace ctflow::keras::layers
