#pragma once
/// @file
/// @brief The math element-wise functors are written in, once for every device.
///
/// `math::exp(x)`, `math::max(a, b)`, `math::select(c, a, b)`, ... For numbers they are
/// those of `<cmath>`; a device lowers them for the values its loops carry by specialising
/// `math::lowering<X>` (the CPU for xsimd batches: backend/cpu/math.hpp). A functor names no
/// backend, so the same functor runs in the CPU's SIMD loops, the reference device's scalar
/// loops, and later as generated device source.

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <ctflow/core/errors.hpp>

namespace ctflow::math {

/// Whether X is an integer type (bool included) or a signed one: what functors branch on, as a
/// device's generated source branches on its own definitions of them.
template <class X> inline constexpr bool is_integral = std::is_integral_v<X>;
template <class X> inline constexpr bool is_signed = std::is_signed_v<X>;

/// An operation with no value on these operands (an integer division by zero): a value_error
/// with `message` here; a device that cannot throw in its loops records it and reports it when
/// the loop is done.
template <class X> X invalid(const char* message) { ctflow::detail::raise<value_error>(message); }

/// The operations on values of type X (a number here; a device specialises it for its vectors).
template <class X> struct lowering {
  template <class C> static X select(const C& c, const X& a, const X& b) { return c ? a : b; }
  static X abs(const X& x) { using std::abs; return X(abs(x)); }
  static X max(const X& a, const X& b) { return std::max(a, b); }
  static X min(const X& a, const X& b) { return std::min(a, b); }
  static X exp(const X& x) { return std::exp(x); }
  static X log(const X& x) { return std::log(x); }
  static X log1p(const X& x) { return std::log1p(x); }
  static X expm1(const X& x) { return std::expm1(x); }
  static X sqrt(const X& x) { return std::sqrt(x); }
  static X sin(const X& x) { return std::sin(x); }
  static X cos(const X& x) { return std::cos(x); }
  static X tanh(const X& x) { return std::tanh(x); }
  static X erf(const X& x) { return std::erf(x); }
  static X floor(const X& x) { return std::floor(x); }
  static X ceil(const X& x) { return std::ceil(x); }
  /// Half to even in the default rounding mode (TensorFlow's round).
  static X nearbyint(const X& x) { return std::nearbyint(x); }
  static X pow(const X& a, const X& b) { return std::pow(a, b); }
};

/// a where c holds, b elsewhere (c: a bool, or a device's vector of conditions).
template <class C, class X> X select(const C& c, const X& a, const X& b) { return lowering<X>::select(c, a, b); }
template <class X> X abs(const X& x) { return lowering<X>::abs(x); }
template <class X> X max(const X& a, const X& b) { return lowering<X>::max(a, b); }
template <class X> X min(const X& a, const X& b) { return lowering<X>::min(a, b); }
template <class X> X exp(const X& x) { return lowering<X>::exp(x); }
template <class X> X log(const X& x) { return lowering<X>::log(x); }
template <class X> X log1p(const X& x) { return lowering<X>::log1p(x); }
template <class X> X expm1(const X& x) { return lowering<X>::expm1(x); }
template <class X> X sqrt(const X& x) { return lowering<X>::sqrt(x); }
template <class X> X sin(const X& x) { return lowering<X>::sin(x); }
template <class X> X cos(const X& x) { return lowering<X>::cos(x); }
template <class X> X tanh(const X& x) { return lowering<X>::tanh(x); }
template <class X> X erf(const X& x) { return lowering<X>::erf(x); }
template <class X> X floor(const X& x) { return lowering<X>::floor(x); }
template <class X> X ceil(const X& x) { return lowering<X>::ceil(x); }
template <class X> X nearbyint(const X& x) { return lowering<X>::nearbyint(x); }
template <class X> X pow(const X& a, const X& b) { return lowering<X>::pow(a, b); }

}  // namespace ctflow::math
