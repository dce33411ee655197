// Gradient checking against central finite differences in double precision: both forms of the
// gradient (value_and_grad's tensors and grad's expressions) must match the numeric derivative
// of the loss with respect to every element of every variable, on the variables' device.
#pragma once

#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

#include <cmath>
#include <cstdint>
#include <tuple>

namespace gradcheck {

/// A double tensor of static shape S, uniform in [lo, hi), from a seed.
template <class S> ctflow::Tensor<double, S> uniform(std::uint64_t seed, double lo = -1, double hi = 1) { return ctflow::random_uniform<double, S>(seed, lo, hi); }

template <class E> double value(const E& loss) {
  const ctflow::Tensor<double, ctflow::Shape<>, ctflow::placed_device_t<ctflow::device_t<E>>> t = loss;
  return t.data()[0];
}

/// Numeric d(loss)/d(v) by central differences, element by element (the loss reads v by reference).
template <class L, class V> auto numeric(const L& loss, V& v, double h) {
  ctflow::Tensor<double, ctflow::shape_t<V>, ctflow::device_t<V>> g(v.dims());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double keep = v.data()[i];
    v.data()[i] = keep + h;
    const double up = value(loss);
    v.data()[i] = keep - h;
    const double down = value(loss);
    v.data()[i] = keep;
    g.data()[i] = (up - down) / (2 * h);
  }
  return g;
}

template <class A, class N> void require_close(const A& analytic, const N& num, double tol, const char* what) {
  REQUIRE(analytic.dims() == num.dims());
  for (std::size_t i = 0; i < num.size(); ++i) {
    INFO(what << " element " << i << ": analytic " << analytic.data()[i] << " numeric " << num.data()[i]);
    REQUIRE(std::abs(analytic.data()[i] - num.data()[i]) <= tol * (1 + std::abs(num.data()[i])));
  }
}

/// Checks value_and_grad and grad of `loss` with respect to vs against finite differences.
template <class L, class... V> void check(const L& loss, V&... vs) {
  constexpr double h = 1e-6, tol = 1e-6;
  auto both = ctflow::value_and_grad(loss, vs...);
  REQUIRE(std::get<0>(both) == Approx(value(loss)).epsilon(1e-12));
  auto symbolic = ctflow::grad(loss, vs...);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto one = [&](auto& v, const auto& fast, const auto& expr) {
      const auto num = numeric(loss, v, h);
      require_close(fast, num, tol, "value_and_grad");
      const ctflow::Tensor<double, ctflow::shape_t<decltype(v)>, ctflow::device_t<decltype(v)>> lazy = expr;
      require_close(lazy, num, tol, "grad");
    };
    (one(vs, std::get<I + 1>(both), std::get<I>(symbolic)), ...);
  }(std::index_sequence_for<V...>{});
}

}  // namespace gradcheck
