#pragma once
// xsimd batches for the types the fused loops vectorise; the instruction set is the one the
// translation unit is compiled for (-march).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif
// Not optimising (-O0), GCC 12's AVX-512BW blends are macros that cast their operands straight
// to its vector types, which xsimd's batches cannot convert to (xsimd 8 passes batches where
// __m512i is expected): the same macros, through __m512i first, as GCC's others are. They must be
// in place before xsimd's headers are read, whose only includer this header is. (clang's blends
// are functions.)
#if defined(__AVX512BW__) && !defined(__OPTIMIZE__) && !defined(__clang__)
#undef _mm512_mask_blend_epi8
#undef _mm512_mask_blend_epi16
#define _mm512_mask_blend_epi8(U, A, W) ((__m512i)__builtin_ia32_blendmb_512_mask((__v64qi)(__m512i)(A), (__v64qi)(__m512i)(W), (__mmask64)(U)))
#define _mm512_mask_blend_epi16(U, A, W) ((__m512i)__builtin_ia32_blendmw_512_mask((__v32hi)(__m512i)(A), (__v32hi)(__m512i)(W), (__mmask32)(U)))
#endif
#include <xsimd/xsimd.hpp>

namespace ctflow::backend::cpu {

template <class T> inline constexpr bool simd_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t>;

template <class T> using batch = xsimd::batch<T>;
template <class T> using batch_bool = xsimd::batch_bool<T>;
template <class T> inline constexpr std::size_t lanes = [] {
  if constexpr (simd_type_v<T>) return std::size_t(batch<T>::size);
  else return std::size_t(1);
}();

template <class X> struct is_batch : std::false_type {};
template <class T, class A> struct is_batch<xsimd::batch<T, A>> : std::true_type {};
template <class X> inline constexpr bool is_batch_v = is_batch<X>::value;

/// Loads the first n (< lanes) elements of p; the rest are `fill` (zero unless given). Never
/// reads past p + n.
template <class T> batch<T> load_partial(const T* p, std::size_t n, T fill = T(0)) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> && batch<T>::size == 16)
    return batch<T>(_mm512_mask_loadu_ps(_mm512_set1_ps(fill), __mmask16((1u << n) - 1u), p));
  else if constexpr (std::is_same_v<T, double> && batch<T>::size == 8)
    return batch<T>(_mm512_mask_loadu_pd(_mm512_set1_pd(fill), __mmask8((1u << n) - 1u), p));
#endif
  alignas(64) T tmp[lanes<T>];
  for (std::size_t i = 0; i < lanes<T>; ++i) tmp[i] = i < n ? p[i] : fill;
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

/// Whether broadcast_lane is two register shuffles (AVX-512 float) rather than a trip through
/// memory.
template <class T> inline constexpr bool shuffles_lanes =
#if defined(__AVX512F__)
    std::is_same_v<T, float> && lanes<T> == 16;
#else
    false;
#endif

/// Lane I of v in every lane. Consecutive calls for lanes I of one group of four share the
/// shuffle that spreads that group's 128 bits.
template <std::size_t I, class T> batch<T> broadcast_lane(const batch<T>& v) {
#if defined(__AVX512F__)
  if constexpr (shuffles_lanes<T>) {
    // The zero-masking forms with every lane kept: GCC 12 warns of the _mm512_undefined_ps() in
    // the plain ones once they are inlined. The same instructions come out.
    const __m512 group = _mm512_maskz_shuffle_f32x4(__mmask16(0xFFFF), v, v, 0x55 * (I / 4));
    return batch<T>(_mm512_maskz_permute_ps(__mmask16(0xFFFF), group, 0x55 * (I % 4)));
  }
#endif
  return batch<T>(v.get(I));
}

/// Small integers held in lanes (0 to 254, or -1), as bytes: the first n (<= lanes) lanes of b
/// to p, -1 as 255; never writes past p + n.
template <class T> void store_bytes(std::uint8_t* p, const batch<T>& b, std::size_t n) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> && batch<T>::size == 16) {
    // A whole vector is narrowed in a register, then stored: the narrowing store to memory
    // (vpmovdb m128) costs more on AMD cores.
    const __m512i ints = _mm512_cvttps_epi32(b);
    if (n == 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(ints));
    else _mm512_mask_cvtepi32_storeu_epi8(p, __mmask16((1u << n) - 1u), ints);
    return;
  }
#endif
  alignas(64) T tmp[lanes<T>];
  b.store_aligned(tmp);
  for (std::size_t i = 0; i < n; ++i) p[i] = std::uint8_t(int(tmp[i]));
}
/// n (<= lanes) bytes of p as lanes, the rest 0; never reads past p + n.
template <class T> batch<T> load_bytes(const std::uint8_t* p, std::size_t n) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  if constexpr (std::is_same_v<T, float> && batch<T>::size == 16)
    return batch<T>(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(__mmask16((1u << n) - 1u), p))));
#endif
  alignas(64) T tmp[lanes<T>] = {};
  for (std::size_t i = 0; i < n; ++i) tmp[i] = T(p[i]);
  return batch<T>::load_aligned(tmp);
}

/// Data at least this large (bytes) is taken not to stay in the last-level cache: kernels that
/// produce such results in pieces from buffers in cache (pooling gradients) write them with
/// non-temporal stores, as a normal store first reads each line it overwrites, and kernels that
/// read such inputs in short pieces of several rows at once prefetch them.
inline constexpr std::size_t cache_bytes = std::size_t(32) << 20;

/// Asks for the cache lines of [p, p + bytes) ahead of their use, `prefetch_distance` ahead of
/// the reads: the hardware prefetchers restart at every 4 KiB page of each row and go idle while
/// the kernel computes.
inline void prefetch(const void* p, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; i += 64) __builtin_prefetch(static_cast<const char*>(p) + i);
}
inline constexpr std::size_t prefetch_distance = 8192;

/// Whether store_stream writes T past the cache (float and double on AVX-512).
template <class T> inline constexpr bool streams =
#if defined(__AVX512F__)
    (std::is_same_v<T, float> || std::is_same_v<T, double>) && lanes<T> * sizeof(T) == 64;
#else
    false;
#endif
/// Stores b at p, 64-byte aligned: in a non-temporal store where `streams<T>` (the caller ends
/// with stream_fence() before others read p), else a normal one.
template <class T> void store_stream(T* p, const batch<T>& b) {
#if defined(__AVX512F__)
  if constexpr (streams<T> && std::is_same_v<T, float>) return _mm512_stream_ps(p, b);
  else if constexpr (streams<T>) return _mm512_stream_pd(p, b);
#endif
  b.store_aligned(p);
}

/// dst[i] = T(src[i]) and src[i] = 0 for i < n; with `stream`, destinations that `streams` are
/// written with non-temporal stores (the caller ends with stream_fence() before others read dst).
template <class T, class V> void move_out(T* dst, V* src, std::size_t n, bool stream) {
  std::size_t i = 0;
  if constexpr (streams<T> && std::is_same_v<T, V>) {
    constexpr std::size_t L = lanes<T>;
    if (stream) {
      for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % 64 != 0; ++i) dst[i] = std::exchange(src[i], V(0));
      for (; i + L <= n; i += L) {
        store_stream(dst + i, batch<T>::load_unaligned(src + i));
        batch<T>(T(0)).store_unaligned(src + i);
      }
    }
  }
  for (; i < n; ++i) dst[i] = T(std::exchange(src[i], V(0)));
}
/// dst[i] = 0 for i < n, streamed as move_out.
template <class T> void zero_out(T* dst, std::size_t n, bool stream) {
  std::size_t i = 0;
  if constexpr (streams<T>) {
    if (stream) {
      for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % 64 != 0; ++i) dst[i] = 0;
      for (; i + lanes<T> <= n; i += lanes<T>) store_stream(dst + i, batch<T>(T(0)));
    }
  }
  std::fill(dst + i, dst + n, T(0));
}
/// Orders the non-temporal stores before whatever follows (the end of a parallel task).
inline void stream_fence() {
#if defined(__AVX512F__)
  _mm_sfence();
#endif
}

/// e^x. For float: Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2, Cephes's polynomial for
/// e^r, scaled by 2^n (AVX-512: one scalef; elsewhere two exact products by 2^floor(n/2) and
/// 2^(n - floor(n/2)), each a normal number, so that e^x near the largest float stays finite and
/// below the smallest it underflows gradually, as scalef does): within 2 ulp of the correctly
/// rounded value on every target (tests/unit/ops/elementwise_test checks it, under qemu-aarch64
/// too). NaN stays NaN. Other types: xsimd's exp.
template <class T, class A> inline xsimd::batch<T, A> exp(const xsimd::batch<T, A>& x) {
  if constexpr (std::is_same_v<T, float>) {
    using B = xsimd::batch<float, A>;
    const B v = xsimd::min(B(88.72284f), xsimd::max(B(-104.f), x));  // NaN passes
    const B n = xsimd::nearbyint(v * B(1.44269504088896341f));
    // r = v - n ln2 in two parts (Cody-Waite), as products by the negated constants (exact).
    B r = xsimd::fma(n, B(-0.693359375f), v);
    r = xsimd::fma(n, B(2.12194440e-4f), r);
    B p(1.9875691500e-4f);
    p = xsimd::fma(p, r, B(1.3981999507e-3f));
    p = xsimd::fma(p, r, B(8.3334519073e-3f));
    p = xsimd::fma(p, r, B(4.1665795894e-2f));
    p = xsimd::fma(p, r, B(1.6666665459e-1f));
    p = xsimd::fma(p, r, B(5.0000001201e-1f));
    p = xsimd::fma(p, r * r, r) + B(1.f);
#if defined(__AVX512F__)
    if constexpr (B::size == 16) return B(_mm512_scalef_ps(p, n));
#endif
    // n from -150 to 128: its halves from -75 to 64, each 2^h the float of exponent bits h + 127.
    const auto k = xsimd::to_int(n);
    const auto h = k >> 1;
    const auto two_to = [](const auto& e) { return xsimd::bitwise_cast<B>((e + 127) << 23); };
    return p * two_to(h) * two_to(k - h);
  } else {
    return xsimd::exp(x);
  }
}
template <class T> requires std::is_floating_point_v<T> inline T exp(T x) { return std::exp(x); }

}  // namespace ctflow::backend::cpu
