#pragma once
/// @file
/// @brief What every Keras model offers about its weights, whatever its kind (Sequential,
/// functional Model): its variables (`trainable_variables()`, `non_trainable_variables()`), their
/// values (`get_weights()`, `set_weights()`), the gradients of the last backward pass, the
/// regularizers' penalties (`losses()`) and Keras's weight files (`save_weights`,
/// `load_weights`), all from the run-time description of its layers (`layer_info`).

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/core/shape.hpp>
#include <ctflow/keras/layer_info.hpp>
#include <ctflow/keras/saving.hpp>

namespace ctflow::keras {

namespace detail {

/// The message of a model of class Cls whose Input takes dtype T and shape S, called on X.
template <class Cls, class T, class S, class X> constexpr auto model_input_message() {
  using ctflow::detail::concat;
  using ctflow::detail::fixed_string;
  using ctflow::detail::fixed_string_of;
  return concat(fixed_string("ctflow::keras::"), fixed_string_of<[] { return Cls::class_name; }>(), fixed_string(": its Input takes "),
                fixed_string_of<dtype_name<T>>(), fixed_string(" "), shape_string_v<S>, fixed_string("; the call gives "),
                fixed_string_of<dtype_name<value_t<X>>>(), fixed_string(" "), shape_string_v<shape_t<X>>);
}

/// Whether an expression X can be a model's input of dtype T, shape S on device D (its static
/// extents; dyn ones are checked at run time).
template <class T, class S, class D, class X> inline constexpr bool takes_model_input =
    std::is_same_v<value_t<X>, T> && same_device_v<device_t<X>, D> && S::rank == shape_t<X>::rank && []() {
      if constexpr (S::rank != shape_t<X>::rank) return false;
      else {
        for (int i = 0; i < S::rank; ++i) {
          const auto a = S::extents[std::size_t(i)], b = shape_t<X>::extents[std::size_t(i)];
          if (a != b && a != dyn && b != dyn) return false;
        }
        return true;
      }
    }();

/// Whether X is a tensor that owns its memory (contiguous: a model views it, with no copy).
template <class X> concept whole_tensor = is_leaf_v<std::remove_cvref_t<X>> && requires { requires !std::remove_cvref_t<X>::is_view; };

/// The run-time check of a model's input: the error names the model (its class and name) and its
/// input layer, and both shapes.
template <class S, std::size_t R>
void check_model_input(const char* cls, const std::string& model, const std::string& input, const dims_t<R>& d) {
  if (!matches_static<S>(d))
    throw shape_error(std::string("ctflow::keras::") + cls + " '" + model + "': its input " + input + " (InputLayer) takes " + format_dims(S::extents) +
                      "; the call gives " + format_dims(d));
}

}  // namespace detail

/// @brief The methods every model shares. Derived (the model, a CRTP argument) gives `layers()`
/// (its layer_info list), `name` and `trainable`; T is its weights' dtype. They read the model's
/// table of variables (keras::detail::weight_table), built on first use.
template <class Derived, class T> class model_base {
 public:
  /// @brief Keras's trainable_variables: the weights that train (the model, their layers and the
  /// weight itself trainable), in Keras's order; a view of the model's table.
  variable_list<T> trainable_variables() { return table().select(self().trainable, true); }
  /// @brief Keras's non_trainable_variables: the others (moving statistics, frozen layers).
  variable_list<T> non_trainable_variables() { return table().select(self().trainable, false); }
  /// @brief Every variable (Keras's model.weights), trainable or not, in Keras's order.
  std::span<variable_ref<T>> weights() { return table().all(); }

  /// @brief The gradients of the last backward pass, in trainable_variables()'s order (zeros for
  /// a weight the output did not reach): flat views of the memory the pass left them in, valid
  /// until the next backward pass.
  std::span<const TensorView<const T, Shape<dyn>>> gradients() { return table().gradients(self().trainable); }

  /// @brief Keras's get_weights: every weight's value, in weights()'s order.
  std::vector<weight_value<T>> get_weights() {
    std::vector<weight_value<T>> out;
    for (const auto& w : table().all()) out.push_back({w.shape, std::vector<T>(w.values.begin(), w.values.end())});
    return out;
  }
  /// @brief Keras's set_weights: as many values as weights, each of its weight's shape (checked
  /// for all before any weight changes).
  void set_weights(const std::vector<weight_value<T>>& values) {
    auto& all = table().all();
    for (std::size_t i = 0; i < all.size() && i < values.size(); ++i)
      if (values[i].shape != all[i].shape || values[i].values.size() != all[i].size())
        throw shape_error("ctflow::keras::set_weights: layer " + all[i].path.substr(0, all[i].path.rfind('/')) + ", weight " + all[i].name() + ": shape " + format_dims(values[i].shape) + " given for a weight of shape " +
                          format_dims(all[i].shape));
    if (values.size() != all.size())
      throw value_error("ctflow::keras::set_weights: the model has " + std::to_string(all.size()) + " weights, " + std::to_string(values.size()) +
                        " values were given");
    for (std::size_t i = 0; i < all.size(); ++i) std::copy(values[i].values.begin(), values[i].values.end(), all[i].values.begin());
  }

  /// @brief The weight regularizers' penalties (Keras's model.losses), one per regularized weight.
  std::vector<double> losses() {
    std::vector<double> out;
    for (const auto& w : table().all())
      if (w.regularizer) out.push_back((*w.regularizer)(w.value()));
    return out;
  }

  /// @brief Names the weights for train::Checkpoint (`train::Checkpoint ckpt{{"model", model}}`):
  /// each layer by its key in Keras 3's weight files (its class, numbered: "dense", "dense_1";
  /// fixed by the model's structure, not by its layers' names), each weight under it by its name
  /// ("model/dense_1/kernel", a nested model's "model/functional/dense/kernel"), trainable or not.
  template <class V> void track(V& v) { detail::track_layers(self().layers(), v); }

  /// @brief Keras's save_weights / load_weights: `.weights.h5` (Keras 3's layout) or
  /// `.safetensors`; load_weights also reads legacy `.h5` files and `.keras` archives.
  void save_weights(const std::string& path) { keras::save_weights(self(), path); }
  void load_weights(const std::string& path, const load_options& options = {}) { keras::load_weights(self(), path, options); }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  detail::weight_table<T>& table() {
    if (!table_.built()) table_.build(self().layers());
    return table_;
  }
  detail::weight_table<T> table_;
};

}  // namespace ctflow::keras
