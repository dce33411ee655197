#pragma once
/// @file
/// @brief Element-wise math: arithmetic and comparison with NumPy/TensorFlow broadcasting,
/// `where`, `cast`, and the activation and rounding functions of `tf.math` / `tf.nn`.
/// C++ numbers adopt the tensor's dtype (`x * 2` on float32 multiplies by 2.f); tensors of two
/// dtypes do not mix: convert one with `ctflow::cast<T>`.

#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include <ctflow/core/math.hpp>
#include <ctflow/core/tensor.hpp>
#include <ctflow/expr/elementwise.hpp>

namespace ctflow {

namespace detail {

template <class T> using keep_dtype = T;
template <class T> using to_bool = bool;

template <class E, fixed_string Op> constexpr bool require_floating() {
  CTFLOW_STATIC_CHECK(is_floating_v<value_t<E>>,
                      concat(Op, fixed_string(": needs a floating dtype, got "), fixed_string_of<dtype_name<value_t<E>>>(),
                             fixed_string("; convert with ctflow::cast<float>")));
  return is_floating_v<value_t<E>>;
}

template <class L, class R, fixed_string Op> constexpr bool check_binary() {
  if constexpr (!same_device_v<device_t<L>, device_t<R>>) {
    return check_devices<Op, device_t<L>, device_t<R>>();
  } else {
    constexpr bool same = std::is_same_v<value_t<L>, value_t<R>>;
    CTFLOW_STATIC_CHECK(same, concat(Op, fixed_string(": dtypes differ: "), fixed_string_of<dtype_name<value_t<L>>>(),
                                     fixed_string(" vs "), fixed_string_of<dtype_name<value_t<R>>>(),
                                     fixed_string("; convert one with ctflow::cast")));
    constexpr bool fits = broadcastable_v<shape_t<L>, shape_t<R>>;
    CTFLOW_STATIC_CHECK(!same || fits, concat(Op, fixed_string(": shapes cannot be broadcast: "), shape_string_v<shape_t<L>>,
                                              fixed_string(" x "), shape_string_v<shape_t<R>>));
    return same && fits;
  }
}

/// Whether check_binary holds (as a constant: the check itself reports).
template <class L, class R> inline constexpr bool binary_ok =
    same_device_v<device_t<L>, device_t<R>> && std::is_same_v<value_t<L>, value_t<R>> && broadcastable_v<shape_t<L>, shape_t<R>>;

/// A C++ number becomes a Scalar of the other operand's dtype.
template <class X, class Other> struct operand { using type = X; };
template <Number X, class Other> struct operand<X, Other> { using type = expr::Scalar<value_t<Other>>; };
template <class X, class Other> using operand_t = typename operand<X, Other>::type;

template <class Like, class X> operand_t<X, Like> as_operand(X&& x) {
  if constexpr (Number<X>) return {compute_t<value_t<Like>>(x)};
  else return std::forward<X>(x);
}

template <class F, fixed_string Op, class L, class R> auto make_binary(L&& l, R&& r) {
  using A = operand_t<L, R>;
  using B = operand_t<R, L>;
  check_binary<A, B, Op>();
  if constexpr (!binary_ok<A, B>) return failed_check{};
  else return expr::Binary<F, A, B>{{}, as_operand<R>(std::forward<L>(l)), as_operand<L>(std::forward<R>(r))};
}

template <class T> inline constexpr bool float_packet = std::is_floating_point_v<T>;
template <class T> inline constexpr bool any_packet = true;

}  // namespace detail

/// @brief Either operand of a binary op: an expression, or a number when the other is one.
template <class L, class R> concept BinaryOperands =
    (Expression<L> && Operand<R>) || (Number<L> && Expression<R>);

namespace detail {
/// Operands of which one is a failed check's result (the others anything an op takes).
template <class L, class R> concept failed_operands =
    (failed<L> && (Operand<R> || failed<R>)) || (failed<R> && Operand<L>);
}  // namespace detail

namespace ops {

// Functors run on compute types (float for bfloat16/float16) and on a device's vectors alike,
// through the math layer (core/math.hpp). Each also carries its body as text (`source`): a device
// that generates its kernels (the GPU's) compiles that same body against its own math layer, so a
// functor's arithmetic is written once. A body names only `math::`, X and its operands.

#define CTFLOW_UNARY_FUNCTOR(NAME, RESULT, PACKET, ...)                          \
  struct NAME##_fn {                                                             \
    template <class T> using result = detail::RESULT<T>;                         \
    template <class T> static constexpr bool packet_ok = detail::PACKET<T>;      \
    static constexpr const char* source = #__VA_ARGS__;                          \
    template <class X> X operator()(const X& x) const { __VA_ARGS__ }            \
  }

CTFLOW_UNARY_FUNCTOR(negative, keep_dtype, any_packet, return X(-x););
CTFLOW_UNARY_FUNCTOR(abs, keep_dtype, any_packet, return math::abs(x););
CTFLOW_UNARY_FUNCTOR(square, keep_dtype, any_packet, return X(x * x););
CTFLOW_UNARY_FUNCTOR(sign, keep_dtype, float_packet, return math::select(x > X(0), X(1), math::select(x < X(0), X(-1), x)););
CTFLOW_UNARY_FUNCTOR(relu, keep_dtype, any_packet, return math::max(x, X(0)););
CTFLOW_UNARY_FUNCTOR(relu6, keep_dtype, any_packet, return math::min(math::max(x, X(0)), X(6)););
CTFLOW_UNARY_FUNCTOR(exp, keep_dtype, float_packet, return math::exp(x););
CTFLOW_UNARY_FUNCTOR(log, keep_dtype, float_packet, return math::log(x););
CTFLOW_UNARY_FUNCTOR(log1p, keep_dtype, float_packet, return math::log1p(x););
CTFLOW_UNARY_FUNCTOR(expm1, keep_dtype, float_packet, return math::expm1(x););
CTFLOW_UNARY_FUNCTOR(sqrt, keep_dtype, float_packet, return math::sqrt(x););
CTFLOW_UNARY_FUNCTOR(rsqrt, keep_dtype, float_packet, return X(1) / math::sqrt(x););
CTFLOW_UNARY_FUNCTOR(sin, keep_dtype, float_packet, return math::sin(x););
CTFLOW_UNARY_FUNCTOR(cos, keep_dtype, float_packet, return math::cos(x););
CTFLOW_UNARY_FUNCTOR(tanh, keep_dtype, float_packet, return math::tanh(x););
CTFLOW_UNARY_FUNCTOR(sigmoid, keep_dtype, float_packet, return X(1) / (X(1) + math::exp(-x)););
CTFLOW_UNARY_FUNCTOR(softsign, keep_dtype, float_packet, return x / (X(1) + math::abs(x)););
CTFLOW_UNARY_FUNCTOR(swish, keep_dtype, float_packet, return x / (X(1) + math::exp(-x)););
CTFLOW_UNARY_FUNCTOR(softplus, keep_dtype, float_packet, return math::log1p(math::exp(-math::abs(x))) + math::max(x, X(0)););
CTFLOW_UNARY_FUNCTOR(elu, keep_dtype, float_packet, return math::select(x > X(0), x, math::expm1(x)););
CTFLOW_UNARY_FUNCTOR(selu, keep_dtype, float_packet,
                     const X scale(1.0507009873554804934193349852946), alpha(1.6732632423543772848170429916717);
                     return scale * math::select(x > X(0), x, alpha * math::expm1(x)););
CTFLOW_UNARY_FUNCTOR(gelu, keep_dtype, float_packet,
                     return X(0.5) * x * (X(1) + math::erf(x * X(0.70710678118654752440084436210485))););
CTFLOW_UNARY_FUNCTOR(erf, keep_dtype, float_packet, return math::erf(x););
CTFLOW_UNARY_FUNCTOR(floor, keep_dtype, float_packet, return math::floor(x););
CTFLOW_UNARY_FUNCTOR(ceil, keep_dtype, float_packet, return math::ceil(x););
// TensorFlow's round is half to even, which nearbyint gives in the default rounding mode.
CTFLOW_UNARY_FUNCTOR(round, keep_dtype, float_packet, return math::nearbyint(x););
CTFLOW_UNARY_FUNCTOR(logical_not, keep_dtype, float_packet, return !x;);
// The identity; gradients stop at it (tf.stop_gradient).
CTFLOW_UNARY_FUNCTOR(stop_gradient, keep_dtype, any_packet, return x;);

#undef CTFLOW_UNARY_FUNCTOR

// A functor with parameters names them for generated source (`source_members`, doubles) and
// gives their values (`source_values()`).
#define CTFLOW_STRINGIFY_(...) #__VA_ARGS__
#define CTFLOW_STRINGIFY(...) CTFLOW_STRINGIFY_(__VA_ARGS__)
#define CTFLOW_LEAKY_RELU_BODY return math::select(x > X(0), x, X(x * X(alpha)));
struct leaky_relu_fn {
  template <class T> using result = T;
  template <class T> static constexpr bool packet_ok = std::is_floating_point_v<T>;
  static constexpr const char* source = CTFLOW_STRINGIFY(CTFLOW_LEAKY_RELU_BODY);
  static constexpr std::array<const char*, 1> source_members{"alpha"};
  double alpha;
  std::array<double, 1> source_values() const { return {alpha}; }
  template <class X> X operator()(const X& x) const { CTFLOW_LEAKY_RELU_BODY }
};
#undef CTFLOW_LEAKY_RELU_BODY
#undef CTFLOW_STRINGIFY
#undef CTFLOW_STRINGIFY_

template <class To> struct cast_fn {
  template <class T> using result = To;
  template <class T> static constexpr bool packet_ok = false;
  template <class X> compute_t<To> operator()(const X& x) const {
    using C = compute_t<To>;
    if constexpr (std::is_same_v<To, bool>) return x != X(0);
    // To a 16-bit float: rounded to it, as stored, though the value goes on in float.
    else if constexpr (!std::is_same_v<To, C>) return C(To(C(x)));
    else if constexpr (std::is_integral_v<C> && std::is_floating_point_v<X>) {
      // Truncate toward zero as TensorFlow does; NaN gives 0 and the range saturates (never UB).
      if (!(x == x)) return C(0);
      if (x <= X(std::numeric_limits<C>::min())) return std::numeric_limits<C>::min();
      if (x >= X(std::numeric_limits<C>::max())) return std::numeric_limits<C>::max();
      return C(x);
    } else return C(x);
  }
};

#define CTFLOW_BINARY_FUNCTOR(NAME, RESULT, PACKET, ...)                         \
  struct NAME##_fn {                                                             \
    static constexpr const char* name = "ctflow::" #NAME;                        \
    template <class T> using result = detail::RESULT<T>;                         \
    template <class T> static constexpr bool packet_ok = detail::PACKET<T>;      \
    static constexpr const char* source = #__VA_ARGS__;                          \
    template <class X> auto operator()(const X& a, const X& b) const { __VA_ARGS__ } \
  }

CTFLOW_BINARY_FUNCTOR(add, keep_dtype, any_packet, return X(a + b););
CTFLOW_BINARY_FUNCTOR(subtract, keep_dtype, any_packet, return X(a - b););
CTFLOW_BINARY_FUNCTOR(multiply, keep_dtype, any_packet, return X(a * b););
CTFLOW_BINARY_FUNCTOR(maximum, keep_dtype, any_packet, return math::max(a, b););
CTFLOW_BINARY_FUNCTOR(minimum, keep_dtype, any_packet, return math::min(a, b););
CTFLOW_BINARY_FUNCTOR(equal, to_bool, any_packet, return a == b;);
CTFLOW_BINARY_FUNCTOR(not_equal, to_bool, any_packet, return a != b;);
CTFLOW_BINARY_FUNCTOR(less, to_bool, any_packet, return a < b;);
CTFLOW_BINARY_FUNCTOR(less_equal, to_bool, any_packet, return a <= b;);
CTFLOW_BINARY_FUNCTOR(greater, to_bool, any_packet, return a > b;);
CTFLOW_BINARY_FUNCTOR(greater_equal, to_bool, any_packet, return a >= b;);
CTFLOW_BINARY_FUNCTOR(logical_and, to_bool, float_packet, return bool(a) && bool(b););
CTFLOW_BINARY_FUNCTOR(logical_or, to_bool, float_packet, return bool(a) || bool(b););
CTFLOW_BINARY_FUNCTOR(divide, keep_dtype, float_packet,
                      if constexpr (math::is_integral<X>) {
                        // C++ truncating division; a zero divisor is an error, never a crash.
                        if (b == X(0)) return math::invalid<X>("ctflow::divide: integer division by zero");
                        if constexpr (math::is_signed<X>) if (b == X(-1)) return X(-a);
                      }
                      return X(a / b););
CTFLOW_BINARY_FUNCTOR(pow, keep_dtype, float_packet,
                      if constexpr (math::is_integral<X>) {
                        if (b < X(0)) return math::invalid<X>("ctflow::pow: integers cannot be raised to negative powers");
                        X r(1), base = a;
                        for (auto e = b; e; e = X(e >> 1), base = X(base * base)) if (e & 1) r = X(r * base);
                        return r;
                      } else return math::pow(a, b););

#undef CTFLOW_BINARY_FUNCTOR

}  // namespace ops

#define CTFLOW_UNARY_BUILDER(NAME, CHECK)                                                      \
  template <Expression E> auto NAME(E&& e) {                                                   \
    CHECK;                                                                                     \
    return expr::Unary<ops::NAME##_fn, E>{{}, std::forward<E>(e)};                             \
  }                                                                                            \
  inline detail::failed_check NAME(detail::failed_check) { return {}; }
#define CTFLOW_FLOAT_CHECK(NAME) detail::require_floating<E, detail::fixed_string("ctflow::" #NAME)>()

/// @brief Element-wise functions of tf.math / tf.nn. The floating ones reject integer dtypes.
CTFLOW_UNARY_BUILDER(negative, (void)0)
CTFLOW_UNARY_BUILDER(abs, (void)0)
CTFLOW_UNARY_BUILDER(square, (void)0)
CTFLOW_UNARY_BUILDER(sign, (void)0)
CTFLOW_UNARY_BUILDER(relu, (void)0)
CTFLOW_UNARY_BUILDER(relu6, (void)0)
CTFLOW_UNARY_BUILDER(exp, CTFLOW_FLOAT_CHECK(exp))
CTFLOW_UNARY_BUILDER(log, CTFLOW_FLOAT_CHECK(log))
CTFLOW_UNARY_BUILDER(log1p, CTFLOW_FLOAT_CHECK(log1p))
CTFLOW_UNARY_BUILDER(expm1, CTFLOW_FLOAT_CHECK(expm1))
CTFLOW_UNARY_BUILDER(sqrt, CTFLOW_FLOAT_CHECK(sqrt))
CTFLOW_UNARY_BUILDER(rsqrt, CTFLOW_FLOAT_CHECK(rsqrt))
CTFLOW_UNARY_BUILDER(sin, CTFLOW_FLOAT_CHECK(sin))
CTFLOW_UNARY_BUILDER(cos, CTFLOW_FLOAT_CHECK(cos))
CTFLOW_UNARY_BUILDER(tanh, CTFLOW_FLOAT_CHECK(tanh))
CTFLOW_UNARY_BUILDER(sigmoid, CTFLOW_FLOAT_CHECK(sigmoid))
CTFLOW_UNARY_BUILDER(softsign, CTFLOW_FLOAT_CHECK(softsign))
CTFLOW_UNARY_BUILDER(swish, CTFLOW_FLOAT_CHECK(swish))
CTFLOW_UNARY_BUILDER(softplus, CTFLOW_FLOAT_CHECK(softplus))
CTFLOW_UNARY_BUILDER(elu, CTFLOW_FLOAT_CHECK(elu))
CTFLOW_UNARY_BUILDER(selu, CTFLOW_FLOAT_CHECK(selu))
CTFLOW_UNARY_BUILDER(gelu, CTFLOW_FLOAT_CHECK(gelu))
CTFLOW_UNARY_BUILDER(erf, CTFLOW_FLOAT_CHECK(erf))
CTFLOW_UNARY_BUILDER(floor, CTFLOW_FLOAT_CHECK(floor))
CTFLOW_UNARY_BUILDER(ceil, CTFLOW_FLOAT_CHECK(ceil))
CTFLOW_UNARY_BUILDER(round, CTFLOW_FLOAT_CHECK(round))

/// @brief tf.stop_gradient: the value of e, through which no gradient flows.
CTFLOW_UNARY_BUILDER(stop_gradient, (void)0)

#undef CTFLOW_FLOAT_CHECK
#undef CTFLOW_UNARY_BUILDER

/// @brief tf.nn.leaky_relu: x where x > 0, alpha * x elsewhere (alpha defaults to 0.2).
template <Expression E> auto leaky_relu(E&& e, double alpha = 0.2) {
  detail::require_floating<E, detail::fixed_string("ctflow::leaky_relu")>();
  return expr::Unary<ops::leaky_relu_fn, E>{{alpha}, std::forward<E>(e)};
}

/// @brief Element-wise logical not of a bool tensor.
template <Expression E> auto logical_not(E&& e) {
  CTFLOW_STATIC_CHECK((std::is_same_v<value_t<E>, bool>), detail::fixed_string("ctflow::logical_not: needs a bool tensor"));
  return expr::Unary<ops::logical_not_fn, E>{{}, std::forward<E>(e)};
}

/// @brief tf.cast: converts each element to To (floating to integer truncates toward zero and
/// saturates; anything to bool is `!= 0`; to bfloat16 and float16 rounds to nearest even, also
/// where the result is used at once: `cast<float>(cast<float16>(x))`).
template <DType To, Expression E> auto cast(E&& e) {
  if constexpr (std::is_same_v<To, value_t<E>>) return std::remove_cvref_t<E>(std::forward<E>(e));
  else return expr::Unary<ops::cast_fn<To>, E>{{}, std::forward<E>(e)};
}
template <DType To> detail::failed_check cast(detail::failed_check) { return {}; }

#define CTFLOW_BINARY_BUILDER(NAME)                                                            \
  template <class L, class R> requires BinaryOperands<L, R>                                    \
  auto NAME(L&& l, R&& r) {                                                                    \
    return detail::make_binary<ops::NAME##_fn, detail::fixed_string("ctflow::" #NAME)>(std::forward<L>(l), std::forward<R>(r)); \
  }                                                                                            \
  template <class L, class R> requires detail::failed_operands<L, R>                           \
  detail::failed_check NAME(const L&, const R&) { return {}; }

/// @brief Element-wise binary ops with broadcasting (tf.math names).
CTFLOW_BINARY_BUILDER(add)
CTFLOW_BINARY_BUILDER(subtract)
CTFLOW_BINARY_BUILDER(multiply)
CTFLOW_BINARY_BUILDER(divide)
CTFLOW_BINARY_BUILDER(maximum)
CTFLOW_BINARY_BUILDER(minimum)
CTFLOW_BINARY_BUILDER(pow)
CTFLOW_BINARY_BUILDER(equal)
CTFLOW_BINARY_BUILDER(not_equal)
CTFLOW_BINARY_BUILDER(less)
CTFLOW_BINARY_BUILDER(less_equal)
CTFLOW_BINARY_BUILDER(greater)
CTFLOW_BINARY_BUILDER(greater_equal)
CTFLOW_BINARY_BUILDER(logical_and)
CTFLOW_BINARY_BUILDER(logical_or)

#undef CTFLOW_BINARY_BUILDER

/// @brief The operators of tf.Tensor: `+ - * /` are add, subtract, multiply and divide; `< <= > >=`
/// are less, less_equal, greater and greater_equal (bool results); unary `-` is negative.
/// `==` and `!=` are not overloaded: use equal and not_equal.
template <class L, class R> requires BinaryOperands<L, R> auto operator+(L&& l, R&& r) { return add(std::forward<L>(l), std::forward<R>(r)); }
template <class L, class R> requires BinaryOperands<L, R> auto operator-(L&& l, R&& r) { return subtract(std::forward<L>(l), std::forward<R>(r)); }
template <class L, class R> requires BinaryOperands<L, R> auto operator*(L&& l, R&& r) { return multiply(std::forward<L>(l), std::forward<R>(r)); }
template <class L, class R> requires BinaryOperands<L, R> auto operator/(L&& l, R&& r) { return divide(std::forward<L>(l), std::forward<R>(r)); }
template <class L, class R> requires BinaryOperands<L, R> auto operator<(L&& l, R&& r) { return less(std::forward<L>(l), std::forward<R>(r)); }
template <class L, class R> requires BinaryOperands<L, R> auto operator<=(L&& l, R&& r) { return less_equal(std::forward<L>(l), std::forward<R>(r)); }
template <class L, class R> requires BinaryOperands<L, R> auto operator>(L&& l, R&& r) { return greater(std::forward<L>(l), std::forward<R>(r)); }
template <class L, class R> requires BinaryOperands<L, R> auto operator>=(L&& l, R&& r) { return greater_equal(std::forward<L>(l), std::forward<R>(r)); }
template <Expression E> auto operator-(E&& e) { return negative(std::forward<E>(e)); }
namespace detail {
// Arithmetic on a failed check's result gives it back (found by argument-dependent lookup): its
// message stays the only error.
template <class L, class R> requires failed_operands<L, R> failed_check operator+(const L&, const R&) { return {}; }
template <class L, class R> requires failed_operands<L, R> failed_check operator-(const L&, const R&) { return {}; }
template <class L, class R> requires failed_operands<L, R> failed_check operator*(const L&, const R&) { return {}; }
template <class L, class R> requires failed_operands<L, R> failed_check operator/(const L&, const R&) { return {}; }
inline failed_check operator-(failed_check) { return {}; }
}  // namespace detail

/// @brief tf.where(condition, x, y): x where condition holds, y elsewhere, all broadcast.
template <Expression C, class A, class B> requires BinaryOperands<A, B>
auto where(C&& c, A&& a, B&& b) {
  using X = detail::operand_t<A, B>;
  using Y = detail::operand_t<B, A>;
  if constexpr (!same_devices_v<device_t<C>, device_t<X>, device_t<Y>>) {
    check_devices<detail::fixed_string("ctflow::where"), device_t<C>, device_t<X>, device_t<Y>>();
  } else {
    CTFLOW_STATIC_CHECK((std::is_same_v<value_t<C>, bool>), detail::fixed_string("ctflow::where: the condition must be a bool tensor"));
    detail::check_binary<X, Y, detail::fixed_string("ctflow::where")>();
  }
  return expr::Select<C, X, Y>{std::forward<C>(c), detail::as_operand<B>(std::forward<A>(a)), detail::as_operand<A>(std::forward<B>(b))};
}

/// @brief tf.clip_by_value: min(max(x, lo), hi).
template <Expression E, class Lo, class Hi> auto clip_by_value(E&& e, Lo lo, Hi hi) {
  return minimum(maximum(std::forward<E>(e), lo), hi);
}

}  // namespace ctflow
