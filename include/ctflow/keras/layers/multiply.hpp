#pragma once
/// @file
/// @brief keras.layers.Multiply: the element-wise product of its inputs (two or more, broadcast
/// together), as in a gate.
///
///     auto gated = layers::Multiply{}(x, layers::Activation<activations::sigmoid>{}(g));

#include <ctflow/keras/layers/merge.hpp>

namespace ctflow::keras::layers {

namespace detail {
inline constexpr char multiply_name[] = "Multiply";
struct multiply_inputs {
  template <class... X> auto operator()(const X&... x) const { return (x * ...); }
};
}  // namespace detail

/// @brief keras.layers.Multiply().
struct Multiply {
  CTFLOW_KERAS_LAYER_SPEC("Multiply");
  /// @brief Keras's get_config: no arguments of its own.
  void get_config(config_dict&) const {}
  /// @brief Its inputs broadcast together (the functional API checks them, naming their layers).
  static constexpr bool broadcasts_inputs = true;
  template <class T, ShapeType... In> using built =
      typename detail::elementwise_merge<detail::multiply_name, detail::multiply_inputs>::template built_on<T, cpu, In...>;
  template <class T, class D, ShapeType... In> using built_on =
      typename detail::elementwise_merge<detail::multiply_name, detail::multiply_inputs>::template built_on<T, D, In...>;
};

}  // namespace ctflow::keras::layers
