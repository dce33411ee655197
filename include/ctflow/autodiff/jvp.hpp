#pragma once
/// @file
/// @brief Forward mode: `ctflow::jvp(e, dual(x, t)...)`, the transpose of the transposed
/// derivative (the rules of grad, applied twice).

#include <ctflow/autodiff/symbolic.hpp>

namespace ctflow {

/// @brief A variable with the tangent (direction) jvp differentiates it along.
template <class X, class T> struct dual_t {
  const X& x;
  const T& t;
};

/// @brief Pairs a variable with its tangent for `jvp`; both have one dtype and shape.
template <Expression X, Expression T> dual_t<X, T> dual(const X& x, const T& t) {
  CTFLOW_STATIC_CHECK((std::is_same_v<value_t<X>, value_t<T>> && detail::same_extents<shape_t<X>, shape_t<T>>()),
                      detail::concat(detail::fixed_string("ctflow::jvp: a tangent must have its variable's dtype and shape: "),
                                     shape_string_v<shape_t<X>>, detail::fixed_string(" x "), shape_string_v<shape_t<T>>));
  if (x.dims() != t.dims()) throw_shape_error("ctflow::jvp", "a tangent must have its variable's shape", x.dims(), t.dims());
  return {x, t};
}

/// @brief Forward mode: the derivative of expression e along the given tangents,
/// sum_i (de/dx_i) t_i, with e's dtype and shape (tf.autodiff.ForwardAccumulator's jvp).
/// Computed as the transpose of the transposed derivative: the rules of grad, applied twice.
template <Expression E, class... X, class... T> auto jvp(const E& e, const dual_t<X, T>&... ds) {
  using V = value_t<E>;
  using S = shape_t<E>;
  static_assert(sizeof...(X) > 0, "ctflow::jvp: give at least one dual(variable, tangent)");
  using D = autodiff::device_of<E>;
  Tensor<V, S, D> u(e.dims());  // J^T u is linear in u: its value does not matter
  auto pullback = grad(reduce_sum(e * u), ds.x...);
  auto along = std::apply([&](const auto&... g) { return (reduce_sum(g * ds.t) + ...); }, pullback);
  auto [jt] = grad(along, u);
  return Tensor<V, S, D>(jt);
}

}  // namespace ctflow
