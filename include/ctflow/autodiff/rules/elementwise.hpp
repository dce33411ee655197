#pragma once
// Gradient rules of element-wise nodes: every math function, arithmetic with broadcasting,
// `where` and `cast`. Each adjoint is an element-wise expression of the upstream adjoint g, the
// operand x and the value y, so backward chains fuse into one loop like forward ones.
// Derivatives follow TensorFlow's registered gradients (relu's at 0 is 0, maximum sends ties to
// its first operand, pow's exponent gradient is 0 where the base is not positive).

#include <type_traits>

#include <ctflow/autodiff/rule.hpp>

namespace ctflow::autodiff {

namespace detail {

/// d/dx of unary functor F: `apply(f, x, y, g)` is g * F'(x), written with ctflow ops so that it
/// can be differentiated again.
template <class F> struct unary_vjp { static constexpr bool differentiable = false; };

#define CTFLOW_UNARY_VJP(FN, ...)                                                                  \
  template <> struct unary_vjp<ops::FN> {                                                          \
    static constexpr bool differentiable = true;                                                   \
    template <class X, class Y, class G>                                                           \
    static auto apply([[maybe_unused]] const ops::FN& f, [[maybe_unused]] const X& x,              \
                      [[maybe_unused]] const Y& y, const G& g) { return __VA_ARGS__; }             \
  }

CTFLOW_UNARY_VJP(negative_fn, -g);
CTFLOW_UNARY_VJP(abs_fn, g * sign(x));
CTFLOW_UNARY_VJP(square_fn, g * (x * 2));
CTFLOW_UNARY_VJP(sign_fn, g * 0);
CTFLOW_UNARY_VJP(relu_fn, where(x > 0, g, 0));
CTFLOW_UNARY_VJP(relu6_fn, where(logical_and(x > 0, x < 6), g, 0));
CTFLOW_UNARY_VJP(exp_fn, g * y);
CTFLOW_UNARY_VJP(log_fn, g / x);
CTFLOW_UNARY_VJP(log1p_fn, g / (x + 1));
CTFLOW_UNARY_VJP(expm1_fn, g * (y + 1));
CTFLOW_UNARY_VJP(sqrt_fn, g * 0.5 / y);
CTFLOW_UNARY_VJP(rsqrt_fn, g * -0.5 * (y * y * y));
CTFLOW_UNARY_VJP(sin_fn, g * cos(x));
CTFLOW_UNARY_VJP(cos_fn, -(g * sin(x)));
CTFLOW_UNARY_VJP(tanh_fn, g * (1 - y * y));
CTFLOW_UNARY_VJP(sigmoid_fn, g * (y * (1 - y)));
CTFLOW_UNARY_VJP(softsign_fn, g / square(abs(x) + 1));
CTFLOW_UNARY_VJP(swish_fn, g * (sigmoid(x) * (1 + x * (1 - sigmoid(x)))));
CTFLOW_UNARY_VJP(softplus_fn, g * sigmoid(x));
CTFLOW_UNARY_VJP(elu_fn, where(x > 0, g, g * (y + 1)));
CTFLOW_UNARY_VJP(selu_fn, where(x > 0, g * 1.0507009873554804934193349852946,
                                g * (y + 1.0507009873554804934193349852946 * 1.6732632423543772848170429916717)));
CTFLOW_UNARY_VJP(gelu_fn, g * (0.5 * (1 + erf(x * 0.70710678118654752440084436210485)) +
                               x * 0.39894228040143267793994605993438 * exp(square(x) * -0.5)));
CTFLOW_UNARY_VJP(erf_fn, g * (1.1283791670955125738961589031215 * exp(-square(x))));
CTFLOW_UNARY_VJP(leaky_relu_fn, where(x > 0, g, g * f.alpha));

#undef CTFLOW_UNARY_VJP

// floor, ceil, round, sign's neighbours: TensorFlow registers no gradient (None) for
// floor/ceil/round; logical_not and stop_gradient pass none by definition.

/// Casts between floating dtypes carry the adjoint back in the operand's dtype.
template <class To> struct unary_vjp<ops::cast_fn<To>> {
  static constexpr bool differentiable = std::is_floating_point_v<compute_t<To>>;
  template <class X, class Y, class G> static auto apply(const ops::cast_fn<To>&, const X&, const Y&, const G& g) {
    return cast<value_t<X>>(g);
  }
};

/// g where flag is set, 0 elsewhere (flag: a number that is 0 or 1). Gradients of one variable
/// among several of the same type pass through it.
struct gate_fn {
  static constexpr const char* name = "ctflow::grad";
  template <class T> using result = T;
  template <class T> static constexpr bool packet_ok = std::is_floating_point_v<T>;
  static constexpr const char* source = "return math::select(b != X(0), a, X(0));";  // b: the flag
  template <class X> X operator()(const X& a, const X& b) const { return math::select(b != X(0), a, X(0)); }
};

template <class G> auto gate(const G& g, bool on) {
  return expr::Binary<gate_fn, G, expr::Scalar<value_t<G>>>{{}, g, {compute_t<value_t<G>>(on ? 1 : 0)}};
}

/// A view that is the operand when open and zeros of the given extents when closed (the
/// operand then need not have those extents: it is another variable of the same type). Its zero
/// is in host memory; a device whose memory the host does not hold reads one of its own.
template <std::size_t R> struct gate_map : ops::view_base<R> {
  bool on = false;
  template <class T> bool map(const expr::strided_view<T, R>& in, expr::strided_view<T, R>& out) const {
    static const T zero{};
    if (on) out = in;
    else out = {&zero, this->out_dims, {}};
    return true;
  }
};

template <class G, std::size_t R> auto gate_view(const G& g, bool on, const dims_t<R>& dims) {
  gate_map<R> m;
  m.on = on;
  m.out_dims = dims;
  return ops::make_view<shape_t<G>>(m, G(g));
}

}  // namespace detail

template <class F, class E> struct rule<expr::Unary<F, E>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = detail::unary_vjp<F>::differentiable && is_floating_v<value_t<E>>;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y& y) {
    return detail::unary_vjp<F>::apply(n.f, n.e, y, g);
  }
};

namespace detail {

template <class F> struct binary_vjp { static constexpr bool differentiable = false; };

#define CTFLOW_BINARY_VJP(FN, LEFT, RIGHT)                                                         \
  template <> struct binary_vjp<ops::FN> {                                                         \
    static constexpr bool differentiable = true;                                                   \
    template <std::size_t I, class L, class R, class Y, class G>                                   \
    static auto apply([[maybe_unused]] const L& l, [[maybe_unused]] const R& r,                    \
                      [[maybe_unused]] const Y& y, const G& g) {                                   \
      if constexpr (I == 0) return LEFT;                                                           \
      else return RIGHT;                                                                           \
    }                                                                                              \
  }

CTFLOW_BINARY_VJP(add_fn, G(g), G(g));
CTFLOW_BINARY_VJP(subtract_fn, G(g), -g);
CTFLOW_BINARY_VJP(multiply_fn, g * r, g * l);
CTFLOW_BINARY_VJP(divide_fn, g / r, -(g * l) / (r * r));
CTFLOW_BINARY_VJP(pow_fn, g * r * pow(l, r - 1), g * y * where(l > 0, log(l), 0));
CTFLOW_BINARY_VJP(maximum_fn, where(l >= r, g, 0), where(l >= r, 0, g));
CTFLOW_BINARY_VJP(minimum_fn, where(l <= r, g, 0), where(l <= r, 0, g));

#undef CTFLOW_BINARY_VJP

template <> struct binary_vjp<gate_fn> {
  static constexpr bool differentiable = true;
  template <std::size_t I, class L, class R, class Y, class G> static auto apply(const L&, const R& r, const Y&, const G& g) {
    static_assert(I == 0, "the gate's flag has no gradient");
    return gate(g, r.value != 0);
  }
};

}  // namespace detail

template <class F, class L, class R> struct rule<expr::Binary<F, L, R>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable =
      detail::binary_vjp<F>::differentiable && is_floating_v<value_t<L>> && !(std::is_same_v<F, detail::gate_fn> && I == 1);
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y& y) {
    if constexpr (I == 0) return unbroadcast<shape_t<R>>(n.l, detail::binary_vjp<F>::template apply<0>(n.l, n.r, y, g));
    else return unbroadcast<shape_t<L>>(n.r, detail::binary_vjp<F>::template apply<1>(n.l, n.r, y, g));
  }
};

/// where(c, a, b): the adjoint goes to a where c holds and to b elsewhere; none to c.
template <class C, class A, class B> struct rule<expr::Select<C, A, B>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = I != 0 && is_floating_v<value_t<A>>;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    if constexpr (I == 1) return unbroadcast<broadcast_shape_t<shape_t<C>, shape_t<B>>>(n.a, where(n.c, g, 0));
    else return unbroadcast<broadcast_shape_t<shape_t<C>, shape_t<A>>>(n.b, where(n.c, 0, g));
  }
};

}  // namespace ctflow::autodiff
