#pragma once
// The math layer (core/math.hpp) lowered to xsimd batches: what the fused loops' vector path
// computes. e^x is the CPU's own (simd.hpp); everything else is xsimd's.

#include <ctflow/core/math.hpp>
#include <ctflow/backend/cpu/simd.hpp>

namespace ctflow::math {

template <class T, class A> struct lowering<xsimd::batch<T, A>> {
  using X = xsimd::batch<T, A>;
  static X select(const xsimd::batch_bool<T, A>& c, const X& a, const X& b) { return xsimd::select(c, a, b); }
  static X abs(const X& x) { return xsimd::abs(x); }
  static X max(const X& a, const X& b) { return xsimd::max(a, b); }
  static X min(const X& a, const X& b) { return xsimd::min(a, b); }
  static X exp(const X& x) { return backend::cpu::exp(x); }
  static X log(const X& x) { return xsimd::log(x); }
  static X log1p(const X& x) { return xsimd::log1p(x); }
  static X expm1(const X& x) { return xsimd::expm1(x); }
  static X sqrt(const X& x) { return xsimd::sqrt(x); }
  static X sin(const X& x) { return xsimd::sin(x); }
  static X cos(const X& x) { return xsimd::cos(x); }
  static X tanh(const X& x) { return xsimd::tanh(x); }
  static X erf(const X& x) { return xsimd::erf(x); }
  static X floor(const X& x) { return xsimd::floor(x); }
  static X ceil(const X& x) { return xsimd::ceil(x); }
  static X nearbyint(const X& x) { return xsimd::nearbyint(x); }
  static X pow(const X& a, const X& b) { return xsimd::pow(a, b); }
};

}  // namespace ctflow::math
