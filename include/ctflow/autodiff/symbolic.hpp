#pragma once
/// @file
/// @brief `ctflow::grad`: the gradients of a loss as expressions, built by the rules from the
/// loss's type: lazy, fusable into what reads them, differentiable again.

#include <tuple>

#include <ctflow/autodiff/checks.hpp>

namespace ctflow {

namespace autodiff {

/// A sum of adjoint terms being built; none_t terms vanish.
template <class E> struct term { E value; };
template <class A, class B> auto operator+(term<A>&& a, term<B>&& b) {
  if constexpr (std::is_same_v<A, none_t>) return std::move(b);
  else if constexpr (std::is_same_v<B, none_t>) return std::move(a);
  else {
    auto sum = std::move(a.value) + std::move(b.value);
    return term<decltype(sum)>{std::move(sum)};
  }
}

/// The adjoint expression that reaches v from node n given n's adjoint g (none_t if none can).
/// Each leaf of v's type contributes through a gate that is open only for v itself; when the
/// loss holds several leaves of that type (Many), closed gates also take v's extents.
template <bool Many, class N, class G, class V> auto adjoint(const N& n, const G& g, const V& v) {
  using T = std::remove_cvref_t<N>;
  if constexpr (!holds_leaf<T, V>()) {
    return none_t{};
  } else if constexpr (is_leaf_v<T>) {
    if constexpr (Many) return detail::gate_view(g, same_leaf(n, v), v.dims());
    else return detail::gate(g, same_leaf(n, v));
  } else {
    using R = rule<T>;
    CTFLOW_STATIC_CHECK(R::known, ctflow::detail::fixed_string("ctflow::grad: an op of the loss has no gradient rule"));
    if constexpr (!R::known) {
      return none_t{};
    } else {
      auto one = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) {
        if constexpr (holds_leaf<operand_t<J, T>, V>() && R::template differentiable<J>)
          return term<decltype(adjoint<Many>(operand<J>(n), R::template vjp<J>(n, g, n), v))>{adjoint<Many>(operand<J>(n), R::template vjp<J>(n, g, n), v)};
        else return term<none_t>{};
      };
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return (term<none_t>{} + ... + one(std::integral_constant<std::size_t, I>{})).value;
      }(std::make_index_sequence<arity_v<T>>{});
    }
  }
}

}  // namespace autodiff

/// @brief The gradients of a scalar loss with respect to variables or tensors, as expressions
/// (one per argument, with its dtype and shape; structured bindings or std::get). They are lazy:
/// assign them, fuse them into an update (`w -= 0.1f * gw`), or differentiate them again.
/// A variable used several times accumulates; one that does not occur in the loss at run time
/// follows `u` (an error by default).
template <Expression L, class... V> auto grad(const L& loss, unconnected_gradients u, const V&... vs) {
  autodiff::check_grad<L, V...>();
  if constexpr (autodiff::grad_rules<L, V...>::ok) {
    std::size_t i = 0;
    auto one = [&](const auto& v) {
      if (!autodiff::reaches(loss, std::make_tuple(&v)) && u == unconnected_gradients::none) autodiff::unconnected(autodiff::describe(v, i));
      ++i;
      constexpr bool many = autodiff::count_leaf<L, std::remove_cvref_t<decltype(v)>>() > 1;
      auto g = autodiff::adjoint<many>(loss, expr::Scalar<value_t<L>>{compute_t<value_t<L>>(1)}, v);
      CTFLOW_STATIC_CHECK((!std::is_same_v<decltype(g), autodiff::none_t>),
                          detail::fixed_string("ctflow::grad: no differentiable path from the loss to a variable"));
      // A closed gate over another variable of v's type and other extents cannot give v's zeros.
      if constexpr (!std::is_same_v<decltype(g), autodiff::none_t>)
        if (g.dims() != v.dims()) autodiff::unconnected(autodiff::describe(v, i - 1));
      return g;
    };
    return std::tuple{one(vs)...};
  } else {
    return std::tuple<>{};
  }
}

/// @brief grad(loss, vs...): a variable the loss does not reach is an error.
template <Expression L, class... V> requires(Expression<V> && ...)
auto grad(const L& loss, const V&... vs) { return grad(loss, unconnected_gradients::none, vs...); }

}  // namespace ctflow
