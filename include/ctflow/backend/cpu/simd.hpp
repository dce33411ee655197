#pragma once
// xsimd batches for the types the fused loops vectorise; the instruction set is the one the
// translation unit is compiled for (-march).

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace ctflow::backend::cpu {

template <class T> inline constexpr bool simd_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t>;

template <class T> using batch = xsimd::batch<T>;
template <class T> using batch_bool = xsimd::batch_bool<T>;
template <class T> inline constexpr std::size_t lanes = simd_type_v<T> ? batch<T>::size : 1;

template <class X> struct is_batch : std::false_type {};
template <class T, class A> struct is_batch<xsimd::batch<T, A>> : std::true_type {};
template <class X> inline constexpr bool is_batch_v = is_batch<X>::value;

/// Loads the first n (< lanes) elements of p; the rest are zero. Never reads past p + n.
template <class T> batch<T> load_partial(const T* p, std::size_t n) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> && batch<T>::size == 16)
    return batch<T>(_mm512_maskz_loadu_ps(__mmask16((1u << n) - 1u), p));
  else if constexpr (std::is_same_v<T, double> && batch<T>::size == 8)
    return batch<T>(_mm512_maskz_loadu_pd(__mmask8((1u << n) - 1u), p));
#endif
  alignas(64) T tmp[lanes<T>] = {};
  for (std::size_t i = 0; i < n; ++i) tmp[i] = p[i];
  return batch<T>::load_aligned(tmp);
}

/// Stores the first n (< lanes) elements of b to p; never writes past p + n.
template <class T> void store_partial(T* p, const batch<T>& b, std::size_t n) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> && batch<T>::size == 16) {
    _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1u), b);
    return;
  } else if constexpr (std::is_same_v<T, double> && batch<T>::size == 8) {
    _mm512_mask_storeu_pd(p, __mmask8((1u << n) - 1u), b);
    return;
  }
#endif
  alignas(64) T tmp[lanes<T>];
  b.store_aligned(tmp);
  for (std::size_t i = 0; i < n; ++i) p[i] = tmp[i];
}

}  // namespace ctflow::backend::cpu
