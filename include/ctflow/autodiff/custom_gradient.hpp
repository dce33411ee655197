#pragma once
/// @file
/// @brief `ctflow::custom_gradient(x, f, vjp)`: the value f(x), whose gradient with respect to x
/// is vjp(x, g) instead of what the rules would derive (tf.custom_gradient: numerically stable
/// derivatives, gradient clipping, straight-through estimators).

#include <utility>

#include <ctflow/autodiff/rule.hpp>
#include <ctflow/autodiff/rules/elementwise.hpp>

namespace ctflow {

namespace ops {

/// The identity on f(x)'s elements; it carries x and the user's vjp for autodiff.
template <class X, class Vjp> struct custom_gradient_fn {
  template <class T> using result = T;
  template <class T> static constexpr bool packet_ok = true;
  static constexpr const char* source = "return x;";
  stored_t<X> x;
  Vjp vjp;
  template <class V> V operator()(const V& v) const { return v; }
};

}  // namespace ops

namespace autodiff {

// Autodiff sees x as the node's operand: the adjoint goes to x, through vjp.
template <class X, class Vjp, class Y> struct node_shape<expr::Unary<ops::custom_gradient_fn<X, Vjp>, Y>> {
  static constexpr std::size_t arity = 1;
  using operands = std::tuple<X>;
};

namespace detail {
template <class X, class Vjp> struct unary_vjp<ops::custom_gradient_fn<X, Vjp>> {
  static constexpr bool differentiable = true;
  template <class E, class Y, class G> static auto apply(const ops::custom_gradient_fn<X, Vjp>& f, const E&, const Y&, const G& g) {
    auto adj = f.vjp(f.x, g);
    using A = decltype(adj);
    CTFLOW_STATIC_CHECK((std::is_same_v<value_t<A>, value_t<X>> && ctflow::detail::same_extents<shape_t<A>, shape_t<X>>()),
                        ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::custom_gradient: vjp must return x's dtype and shape: "),
                                               shape_string_v<shape_t<A>>, ctflow::detail::fixed_string(" x "), shape_string_v<shape_t<X>>));
    return adj;
  }
};
}  // namespace detail

}  // namespace autodiff

/// @brief The value of f(x); its gradient with respect to x is vjp(x, g), g being the adjoint of
/// f(x). f and vjp take expressions and return expressions:
/// `custom_gradient(x, [](auto& x) { return log1p(exp(x)); }, [](auto& x, auto& g) { return g * sigmoid(x); })`.
template <Expression X, class F, class Vjp> auto custom_gradient(X&& x, F&& f, Vjp vjp) {
  auto y = std::forward<F>(f)(x);
  static_assert(Expression<decltype(y)>, "ctflow::custom_gradient: f must return an expression");
  using Y = decltype(y);
  return expr::Unary<ops::custom_gradient_fn<X, Vjp>, Y>{{std::forward<X>(x), std::move(vjp)}, std::move(y)};
}

/// @brief The value of e, with the adjoint that reaches e replaced by vjp(e, g) before it goes
/// further down (gradient clipping: `custom_gradient(h, [](auto&, auto& g) { return clip_by_value(g, -1.f, 1.f); })`).
template <Expression E, class Vjp> auto custom_gradient(E&& e, Vjp vjp) {
  return custom_gradient(std::forward<E>(e), [](auto& x) { return stop_gradient(x); }, std::move(vjp));
}

}  // namespace ctflow

