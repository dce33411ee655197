#pragma once
/// @file
/// @brief keras.layers.Add: the sum of its inputs (two or more, broadcast together), as in a
/// residual connection.
///
///     auto z = layers::Add{}(x, y);

#include <ctflow/keras/layers/merge.hpp>

namespace ctflow::keras::layers {

namespace detail {
inline constexpr char add_name[] = "Add";
struct add_inputs {
  template <class... X> auto operator()(const X&... x) const { return (x + ...); }
};
}  // namespace detail

/// @brief keras.layers.Add().
struct Add {
  CTFLOW_KERAS_LAYER_SPEC("Add");
  /// @brief Keras's get_config: no arguments of its own.
  void get_config(config_dict&) const {}
  /// @brief Its inputs broadcast together (the functional API checks them, naming their layers).
  static constexpr bool broadcasts_inputs = true;
  template <class T, ShapeType... In> using built = typename detail::elementwise_merge<detail::add_name, detail::add_inputs>::template built_on<T, cpu, In...>;
  template <class T, class D, ShapeType... In> using built_on = typename detail::elementwise_merge<detail::add_name, detail::add_inputs>::template built_on<T, D, In...>;
};

}  // namespace ctflow::keras::layers
