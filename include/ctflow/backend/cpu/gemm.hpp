#pragma once
// GEMM on the CPU: C = A * B (or C += A * B) for float and double, any row/column strides of A
// and B (transposes are free). Large products follow the BLIS/GotoBLAS scheme with an MR x NR
// register-blocked xsimd micro-kernel: A is packed into MR x KC micro-panels, each of which stays
// in L1 while it meets every KC x NR micro-panel of a KC x NC block of packed B held in L2. Up to
// pack_buffers::kept_rows rows, A is packed once per block of k and serves every block of columns.
// While a micro-kernel runs, it requests the tile of C that the next one updates, line by line.
// Small products (inference shapes), and those whose narrow B stays in L2, skip packing and
// stream B rows straight through registers; small static products run fully unrolled
// (small_static). Every element of C sums over k in the same order whatever the thread count,
// so results are bitwise reproducible.

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>

#include <ctflow/detail/buffer.hpp>
#include <ctflow/backend/cpu/simd.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>

namespace ctflow::backend::cpu::gemm {

/// Per-core L2 (Zen 4 / Zen 5 and recent server cores).
inline constexpr std::size_t l2_bytes = std::size_t(1) << 20;

template <class T> struct blocking {
  static constexpr std::size_t L = lanes<T>;
  static constexpr std::size_t NV = 2;            // vectors across a micro-tile
  static constexpr std::size_t NR = NV * L;
  static constexpr std::size_t MR = 12;           // 24 accumulators of 32 registers
  static constexpr std::size_t KC = 256;
  static constexpr std::size_t MC = 144;
  /// 256 columns: a KC x NC block of packed B takes 256 KB of L2 for float, 512 KB for double,
  /// below the size past which re-reading a block from L2 slows down, with room for A's
  /// micro-panels and C's tiles. Fewer columns cost more than they save: each micro-panel of A,
  /// which comes from L3 once m * KC is past L2, then serves fewer tiles.
  static constexpr std::size_t NC = 256;
};

// The micro-kernels are [[gnu::flatten]]: every call in them (these lambdas included) is inlined,
// so their accumulators stay in registers in any translation unit, however large.
template <std::size_t... I, class F> inline __attribute__((always_inline)) void unroll(std::index_sequence<I...>, F&& f) {
  (f(std::integral_constant<std::size_t, I>{}), ...);
}

/// Whether a tile of R rows of A times one vector of B takes A's values in vectors (lane_steps):
/// there each value of A meets a single FMA, so broadcasting them all from memory would make
/// the loads, not the FMAs, the bottleneck.
template <class T, std::size_t R, std::size_t NV> inline constexpr bool lane_tile = shuffles_lanes<T> && NV == 1 && R >= 8;

/// Steps 0 .. L - 1 of a lane_tile: acc[j % S][i][0] += a[i * rsa + j] * load_b(j). The last
/// half of the rows, four at most (their vectors and shuffled groups take registers), load L
/// values in one vector and spread them by shuffles; the others broadcast from memory. That keeps
/// both loads and shuffles below the FMAs' rate.
template <class T, std::size_t S, std::size_t R, class LoadB>
inline __attribute__((always_inline)) void lane_steps(const T* a, std::ptrdiff_t rsa, LoadB&& load_b, batch<T> (&acc)[S][R][1]) {
  using V = batch<T>;
  constexpr std::size_t H = R - std::min<std::size_t>(R / 2, 4);
  const T* row[H];
  V av[R - H];
  unroll(std::make_index_sequence<H>{}, [&](auto i) { row[i] = a + std::ptrdiff_t(i) * rsa; });
  unroll(std::make_index_sequence<R - H>{}, [&](auto i) { av[i] = V::load_unaligned(a + std::ptrdiff_t(H + i) * rsa); });
  unroll(std::make_index_sequence<lanes<T>>{}, [&](auto j) {
    const V b = load_b(std::size_t(j));
    unroll(std::make_index_sequence<R>{}, [&](auto i) {
      V ai;
      if constexpr (i < H) ai = V(row[i][j]);
      else ai = broadcast_lane<j>(av[i - H]);
      acc[j % S][i][0] = xsimd::fma(ai, b, acc[j % S][i][0]);
    });
  });
}

/// Where a micro-kernel's next call updates C: the tile at c, of rows x cols.
template <class T> struct next_tile {
  const T* c;
  std::size_t rows, cols;
};

/// MR x NR tile: C[0:mr, 0:nr] (+)= Ap(MR x kc) * Bp(kc x NR). The rows of the next call's tile
/// are requested into L2 one line every step_lines steps, so that they arrive from memory well
/// before they are needed, without many misses in flight at once.
template <class T> [[gnu::flatten]] inline void micro_kernel(std::size_t kc, const T* __restrict a, const T* __restrict b, T* c,
                                            std::ptrdiff_t ldc, bool accumulate, std::size_t mr, std::size_t nr, next_tile<T> next) {
  using B = blocking<T>;
  using V = batch<T>;
  constexpr std::size_t step_lines = 8;
  V acc[B::MR][B::NV];
  unroll(std::make_index_sequence<B::MR>{}, [&](auto i) { unroll(std::make_index_sequence<B::NV>{}, [&](auto v) { acc[i][v] = V(T(0)); }); });
  const auto step = [&] {
    V bv[B::NV];
    unroll(std::make_index_sequence<B::NV>{}, [&](auto v) { bv[v] = V::load_aligned(b + v * B::L); });
    unroll(std::make_index_sequence<B::MR>{}, [&](auto i) {
      const V ai(a[i]);
      unroll(std::make_index_sequence<B::NV>{}, [&](auto v) { acc[i][v] = xsimd::fma(ai, bv[v], acc[i][v]); });
    });
    a += B::MR;
    b += B::NR;
  };
  std::size_t p = 0;
  // Line l of the next tile: the first (l even) or last (l odd) element of its row l / 2.
  for (std::size_t line = 0; line < 2 * next.rows && p + step_lines <= kc; ++line, p += step_lines) {
    __builtin_prefetch(next.c + std::ptrdiff_t(line / 2) * ldc + std::ptrdiff_t(line % 2 ? next.cols - 1 : 0), 1, 2);
#pragma GCC unroll 1
    for (std::size_t q = 0; q < step_lines; ++q) step();
  }
  for (; p < kc; ++p) step();
  if (mr == B::MR && nr == B::NR) {
    unroll(std::make_index_sequence<B::MR>{}, [&](auto i) {
      unroll(std::make_index_sequence<B::NV>{}, [&](auto v) {
        T* p = c + std::ptrdiff_t(i) * ldc + std::ptrdiff_t(v * B::L);
        (accumulate ? acc[i][v] + V::load_unaligned(p) : acc[i][v]).store_unaligned(p);
      });
    });
    return;
  }
  // A partial tile goes through a buffer, so that acc is only ever indexed by constants and stays
  // in registers.
  alignas(64) T tile[B::MR * B::NR];
  unroll(std::make_index_sequence<B::MR>{}, [&](auto i) {
    unroll(std::make_index_sequence<B::NV>{}, [&](auto v) { acc[i][v].store_aligned(tile + i * B::NR + v * B::L); });
  });
  for (std::size_t i = 0; i < mr; ++i) {
    T* p = c + std::ptrdiff_t(i) * ldc;
    const T* t = tile + i * B::NR;
    for (std::size_t j = 0; j < nr; ++j) p[j] = accumulate ? p[j] + t[j] : t[j];
  }
}

#if defined(__AVX512F__)
/// 16 columns of 12 float rows (row stride rs) into 16 groups of 12: out[p * 12 + i] = a[i * rs + p].
/// A 16 x 16 transpose in registers (rows 12 to 15 zero) instead of 192 scalar copies.
// GCC 12 warns of the _mm512_undefined_ps() inside its own unpack and shuffle intrinsics.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
inline void transpose_12x16(const float* a, std::ptrdiff_t rs, float* out) {
  __m512 r[16], t[16];
  for (int i = 0; i < 12; ++i) r[i] = _mm512_loadu_ps(a + i * rs);
  for (int i = 12; i < 16; ++i) r[i] = _mm512_setzero_ps();
  for (int i = 0; i < 8; ++i) {  // pairs of rows, interleaved within 128-bit lanes
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // r[4i + j], lane l: column 4l + j of rows 4i .. 4i + 3
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {  // then 128-bit lanes across the groups of rows
    t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
    t[j + 4] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
    t[j + 8] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    t[j + 12] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
  }
  constexpr __mmask16 twelve = 0x0FFF;
  for (int j = 0; j < 4; ++j) {
    _mm512_mask_storeu_ps(out + j * 12, twelve, _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88));
    _mm512_mask_storeu_ps(out + (8 + j) * 12, twelve, _mm512_shuffle_f32x4(t[j], t[j + 8], 0xDD));
    _mm512_mask_storeu_ps(out + (4 + j) * 12, twelve, _mm512_shuffle_f32x4(t[j + 4], t[j + 12], 0x88));
    _mm512_mask_storeu_ps(out + (12 + j) * 12, twelve, _mm512_shuffle_f32x4(t[j + 4], t[j + 12], 0xDD));
  }
}
#pragma GCC diagnostic pop
#endif

template <class T> void pack_a(std::size_t mc, std::size_t kc, const T* a, std::ptrdiff_t rs, std::ptrdiff_t cs, T* out) {
  constexpr std::size_t MR = blocking<T>::MR;
  for (std::size_t i0 = 0; i0 < mc; i0 += MR) {
    const std::size_t mr = std::min(MR, mc - i0);
    std::size_t p = 0;
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<T, float> && MR == 12 && lanes<T> == 16)
      if (cs == 1 && mr == MR)  // row-major A: 16 columns at a time, requesting each row's lines 4 steps ahead
        for (; p + 16 <= kc; p += 16, out += 16 * MR) {
          const float* src = a + std::ptrdiff_t(i0) * rs + std::ptrdiff_t(p);
          if (p + 5 * 16 <= kc)
            for (std::size_t i = 0; i < MR; ++i) __builtin_prefetch(src + std::ptrdiff_t(i) * rs + 4 * 16);
          transpose_12x16(src, rs, out);
        }
#endif
    for (; p < kc; ++p) {
      const T* src = a + std::ptrdiff_t(i0) * rs + std::ptrdiff_t(p) * cs;
      std::size_t i = 0;
      for (; i < mr; ++i) out[i] = src[std::ptrdiff_t(i) * rs];
      for (; i < MR; ++i) out[i] = T(0);
      out += MR;
    }
  }
}

/// W whole micro-panels of row-major B (b at their first column): each row's W * NR values are
/// read in one run (W panels at a time keep runs long enough for the prefetchers), and the same
/// run ahead_rows further down is requested, since B's rows lie far apart.
template <class T, std::size_t W> void pack_b_panels(std::size_t kc, const T* b, std::ptrdiff_t rs, T* out) {
  constexpr std::size_t NR = blocking<T>::NR, L = lanes<T>, ahead_rows = 8;
  for (std::size_t p = 0; p < kc; ++p) {
    const T* src = b + std::ptrdiff_t(p) * rs;
    if (p + ahead_rows < kc)
      unroll(std::make_index_sequence<W * NR / L>{}, [&](auto v) { __builtin_prefetch(src + std::ptrdiff_t(ahead_rows) * rs + std::ptrdiff_t(v * L)); });
    unroll(std::make_index_sequence<W * NR / L>{}, [&](auto v) {
      batch<T>::load_unaligned(src + v * L).store_aligned(out + (v * L / NR) * NR * kc + p * NR + v * L % NR);
    });
  }
}

template <class T> void pack_b(std::size_t kc, std::size_t nc, const T* b, std::ptrdiff_t rs, std::ptrdiff_t cs, T* out) {
  constexpr std::size_t NR = blocking<T>::NR;
  std::size_t j0 = 0;
  if (cs == 1) {  // row-major B: whole micro-panels by vector copies, four at a time
    for (; j0 + 4 * NR <= nc; j0 += 4 * NR) pack_b_panels<T, 4>(kc, b + std::ptrdiff_t(j0), rs, out + j0 * kc);
    for (; j0 + NR <= nc; j0 += NR) pack_b_panels<T, 1>(kc, b + std::ptrdiff_t(j0), rs, out + j0 * kc);
  }
  for (; j0 < nc; j0 += NR) {
    const std::size_t nr = std::min(NR, nc - j0);
    for (std::size_t p = 0; p < kc; ++p) {
      const T* src = b + std::ptrdiff_t(p) * rs + std::ptrdiff_t(j0) * cs;
      T* o = out + j0 * kc + p * NR;
      std::size_t j = 0;
      if (cs == 1) for (; j < nr; ++j) o[j] = src[j];
      else for (; j < nr; ++j) o[j] = src[std::ptrdiff_t(j) * cs];
      for (; j < NR; ++j) o[j] = T(0);
    }
  }
}

/// Per-thread packing memory, kept between calls: a warm GEMM allocates nothing.
template <class T> struct pack_buffers {
  /// Up to this many rows, all of A's packed rows for one block of k are kept, so that A is
  /// packed once per block of k rather than once per block of columns as well.
  static constexpr std::size_t kept_rows = 4096;
  detail::buffer<T> a;
  detail::buffer<T> b{(blocking<T>::NC + blocking<T>::NR) * blocking<T>::KC, false};
  /// Room for `rows` packed rows (rounded up to whole micro-panels) of one block of k.
  T* a_rows(std::size_t rows) {
    const std::size_t need = (rows + blocking<T>::MR - 1) / blocking<T>::MR * blocking<T>::MR * blocking<T>::KC;
    if (a.size() < need) a = detail::buffer<T>(need, false);
    return a.data();
  }
  static pack_buffers& local() {
    thread_local pack_buffers bufs;
    return bufs;
  }
};

template <class T>
void packed(std::size_t m, std::size_t n, std::size_t k, const T* a, std::ptrdiff_t rsa, std::ptrdiff_t csa, const T* b,
            std::ptrdiff_t rsb, std::ptrdiff_t csb, T* c, std::ptrdiff_t ldc, bool accumulate) {
  using BL = blocking<T>;
  auto& bufs = pack_buffers<T>::local();
  const bool keep_a = m <= pack_buffers<T>::kept_rows;
  T* const abuf = bufs.a_rows(keep_a ? m : BL::MC);
  for (std::size_t pc = 0; pc < k; pc += BL::KC) {
    const std::size_t kc = std::min(BL::KC, k - pc);
    const bool acc = accumulate || pc > 0;
    for (std::size_t jc = 0; jc < n; jc += BL::NC) {
      const std::size_t nc = std::min(BL::NC, n - jc);
      pack_b(kc, nc, b + std::ptrdiff_t(pc) * rsb + std::ptrdiff_t(jc) * csb, rsb, csb, bufs.b.data());
      for (std::size_t ic = 0; ic < m; ic += BL::MC) {
        const std::size_t mc = std::min(BL::MC, m - ic);
        T* const ap = keep_a ? abuf + ic * kc : abuf;
        if (!keep_a || jc == 0) pack_a(mc, kc, a + std::ptrdiff_t(ic) * rsa + std::ptrdiff_t(pc) * csa, rsa, csa, ap);
        for (std::size_t ir = 0; ir < mc; ir += BL::MR) {
          T* const row = c + std::ptrdiff_t(ic + ir) * ldc;
          const std::size_t mr = std::min(BL::MR, mc - ir);
          // After this row of tiles: the next row's first tile, else the next block's.
          const std::size_t i_next = ic + ir + BL::MR < m ? ic + ir + BL::MR : 0;
          const std::size_t j_next = i_next > 0 ? jc : jc + BL::NC < n ? jc + BL::NC : 0;
          const next_tile<T> after{c + std::ptrdiff_t(i_next) * ldc + std::ptrdiff_t(j_next), std::min(BL::MR, m - i_next),
                                   std::min(BL::NR, n - j_next)};
          for (std::size_t jr = 0; jr < nc; jr += BL::NR) {
            const std::size_t jn = jr + BL::NR;
            micro_kernel(kc, ap + ir * kc, bufs.b.data() + jr * kc, row + std::ptrdiff_t(jc + jr), ldc, acc, mr, std::min(BL::NR, nc - jr),
                         jn < nc ? next_tile<T>{row + std::ptrdiff_t(jc + jn), mr, std::min(BL::NR, nc - jn)} : after);
          }
        }
      }
    }
  }
}

/// RR rows x NV vectors of C straight from A and row-major B (unit column stride), no packing.
/// Small tiles split k S ways, each part into its own accumulators (summed at the end), so that
/// about 16 independent FMA chains hide the FMA latency. The parts take k's steps in turn (steps
/// p .. p + S - 1 go one to each), except in the widest tile of a single row of A, which reads
/// B in whole rows, one pass over it: there part s takes the s-th run of k / S steps, so that S
/// streams through a B that comes from L2 keep more of its lines in flight than one. A lane_tile
/// with A contiguous along k first takes k's steps L at a time in lane_steps (steps p + j still
/// go to part j % S).
template <class T, std::size_t RR, std::size_t NV>
[[gnu::flatten]] inline void small_tile(std::size_t k, const T* a, std::ptrdiff_t rsa, std::ptrdiff_t csa, const T* b, std::ptrdiff_t rsb,
                                        T* c, std::ptrdiff_t ldc, std::size_t nr, bool accumulate) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  constexpr std::size_t S = std::clamp<std::size_t>(16 / (RR * NV), 1, 4);
  constexpr bool runs = RR == 1 && NV == 8;
  const bool full = nr == NV * L;
  const std::size_t tail = nr - (NV - 1) * L, per = k / S;
  V acc[S][RR][NV];
  unroll(std::make_index_sequence<S>{}, [&](auto s) {
    unroll(std::make_index_sequence<RR>{}, [&](auto i) { unroll(std::make_index_sequence<NV>{}, [&](auto v) { acc[s][i][v] = V(T(0)); }); });
  });
  std::size_t p = 0;
  if constexpr (lane_tile<T, RR, NV>)
    if (csa == 1)
      for (; p + L <= k; p += L)
        lane_steps<T, S, RR>(a + p, rsa, [&](std::size_t j) {
          const T* brow = b + std::ptrdiff_t(p + j) * rsb;
          return full ? V::load_unaligned(brow) : load_partial(brow, tail);
        }, acc);
  // Steps p .. p + S - 1 (or just p, into the first accumulators, for the last k % S): rows
  // p .. p + S - 1 of B, or in runs row p / S of each run.
  for (std::size_t steps = S; p < k; p += steps) {
    steps = p + S <= k ? S : 1;
    unroll(std::make_index_sequence<S>{}, [&](auto s) {
      if (s >= steps) return;
      const std::size_t row = runs && steps == S ? p / S + s * per : p + s;
      const T* brow = b + std::ptrdiff_t(row) * rsb;
      V bv[NV];
      unroll(std::make_index_sequence<NV>{}, [&](auto v) {
        if (v + 1 < NV || full) bv[v] = V::load_unaligned(brow + v * L);
        else bv[v] = load_partial(brow + v * L, tail);
      });
      unroll(std::make_index_sequence<RR>{}, [&](auto i) {
        const V ai(a[std::ptrdiff_t(i) * rsa + std::ptrdiff_t(row) * csa]);
        unroll(std::make_index_sequence<NV>{}, [&](auto v) { acc[s][i][v] = xsimd::fma(ai, bv[v], acc[s][i][v]); });
      });
    });
  }
  unroll(std::make_index_sequence<RR>{}, [&](auto i) {
    unroll(std::make_index_sequence<NV>{}, [&](auto v) {
      V r = acc[0][i][v];
      unroll(std::make_index_sequence<S - 1>{}, [&](auto s) { r += acc[s + 1][i][v]; });
      T* q = c + std::ptrdiff_t(i) * ldc + std::ptrdiff_t(v * L);
      if (v + 1 < NV || full) (accumulate ? r + V::load_unaligned(q) : r).store_unaligned(q);
      else store_partial(q, accumulate ? r + load_partial(q, tail) : r, tail);
    });
  });
}

template <class T, std::size_t RR>
void small_rows(std::size_t n, std::size_t k, const T* a, std::ptrdiff_t rsa, std::ptrdiff_t csa, const T* b,
                std::ptrdiff_t rsb, T* c, std::ptrdiff_t ldc, bool accumulate) {
  constexpr std::size_t L = lanes<T>;
  std::size_t j = 0;
  if constexpr (RR == 1)  // a row vector times B: 8 vectors across, so that B streams in one pass
    for (; j + 8 * L <= n; j += 8 * L) small_tile<T, 1, 8>(k, a, rsa, csa, b + j, rsb, c + j, ldc, 8 * L, accumulate);
  for (; j + 4 * L <= n; j += 4 * L) small_tile<T, RR, 4>(k, a, rsa, csa, b + j, rsb, c + j, ldc, 4 * L, accumulate);
  if (j == n) return;
  const std::size_t rest = n - j, vecs = (rest + L - 1) / L;
  if (vecs == 1) small_tile<T, RR, 1>(k, a, rsa, csa, b + j, rsb, c + j, ldc, rest, accumulate);
  else if (vecs == 2) small_tile<T, RR, 2>(k, a, rsa, csa, b + j, rsb, c + j, ldc, rest, accumulate);
  else if (vecs == 3) small_tile<T, RR, 3>(k, a, rsa, csa, b + j, rsb, c + j, ldc, rest, accumulate);
  else small_tile<T, RR, 4>(k, a, rsa, csa, b + j, rsb, c + j, ldc, rest, accumulate);  // 3 vectors and part of a fourth
}

template <class T>
void small(std::size_t m, std::size_t n, std::size_t k, const T* a, std::ptrdiff_t rsa, std::ptrdiff_t csa, const T* b,
           std::ptrdiff_t rsb, T* c, std::ptrdiff_t ldc, bool accumulate) {
  std::size_t i = 0;
  if (n <= lanes<T>)  // one vector across: tiles of 8 rows, so that enough FMA chains run at once
    for (; i + 8 <= m; i += 8)
      small_tile<T, 8, 1>(k, a + std::ptrdiff_t(i) * rsa, rsa, csa, b, rsb, c + std::ptrdiff_t(i) * ldc, ldc, n, accumulate);
  else if (n <= 2 * lanes<T>)  // two vectors: 8 rows too, so that B's loads feed 16 FMAs a step, not 8
    for (; i + 8 <= m; i += 8)
      small_tile<T, 8, 2>(k, a + std::ptrdiff_t(i) * rsa, rsa, csa, b, rsb, c + std::ptrdiff_t(i) * ldc, ldc, n, accumulate);
  for (; i + 4 <= m; i += 4)
    small_rows<T, 4>(n, k, a + std::ptrdiff_t(i) * rsa, rsa, csa, b, rsb, c + std::ptrdiff_t(i) * ldc, ldc, accumulate);
  switch (m - i) {
    case 3: small_rows<T, 3>(n, k, a + std::ptrdiff_t(i) * rsa, rsa, csa, b, rsb, c + std::ptrdiff_t(i) * ldc, ldc, accumulate); break;
    case 2: small_rows<T, 2>(n, k, a + std::ptrdiff_t(i) * rsa, rsa, csa, b, rsb, c + std::ptrdiff_t(i) * ldc, ldc, accumulate); break;
    case 1: small_rows<T, 1>(n, k, a + std::ptrdiff_t(i) * rsa, rsa, csa, b, rsb, c + std::ptrdiff_t(i) * ldc, ldc, accumulate); break;
    default: break;
  }
}

/// R rows of C = A * B for compile-time sizes, A and B contiguous and row-major: the small
/// tiles' scheme with every trip count and offset a constant, in plain loops the compiler unrolls
/// into registers.
template <class T, std::size_t R, std::size_t K, std::size_t N> [[gnu::flatten]] inline void static_tile(const T* a, const T* b, T* c) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>, NV = (N + L - 1) / L, tail = N - (NV - 1) * L;
  constexpr std::size_t S = std::clamp<std::size_t>(24 / (R * NV), 1, 4);
  // Steps 0 .. P0 - 1 in lane_steps, P0 .. KS - 1 S at a time, the rest one by one.
  constexpr std::size_t P0 = lane_tile<T, R, NV> ? K / L * L : 0, KS = P0 + (K - P0) / S * S;
  V acc[S][R][NV];
#pragma GCC unroll 4
  for (std::size_t s = 0; s < S; ++s)
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (std::size_t v = 0; v < NV; ++v) acc[s][r][v] = V(T(0));
  // Row p of B. Its last vector is read whole (lanes past N are the next row's, never stored)
  // where that stays inside B, else partially.
  constexpr std::size_t whole_rows = tail == L ? K : K * N >= NV * L ? (K * N - NV * L) / N + 1 : 0;
  const auto row = [b](std::size_t p) {
    std::array<V, NV> bv;
    const T* q = b + p * N;
#pragma GCC unroll 8
    for (std::size_t v = 0; v < NV; ++v) bv[v] = v + 1 < NV || p < whole_rows ? V::load_unaligned(q + v * L) : load_partial(q + v * L, tail);
    return bv;
  };
  if constexpr (P0 > 0)
    for (std::size_t p = 0; p < P0; p += L) lane_steps<T, S, R>(a + p, K, [&](std::size_t j) { return row(p + j)[0]; }, acc);
  for (std::size_t p = P0; p < KS; p += S)
#pragma GCC unroll 4
    for (std::size_t s = 0; s < S; ++s) {
      const std::array<V, NV> bv = row(p + s);
#pragma GCC unroll 16
      for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (std::size_t v = 0; v < NV; ++v) acc[s][r][v] = xsimd::fma(V(a[r * K + p + s]), bv[v], acc[s][r][v]);
    }
#pragma GCC unroll 4
  for (std::size_t p = KS; p < K; ++p) {
    const std::array<V, NV> bv = row(p);
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (std::size_t v = 0; v < NV; ++v) acc[0][r][v] = xsimd::fma(V(a[r * K + p]), bv[v], acc[0][r][v]);
  }
#pragma GCC unroll 16
  for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (std::size_t v = 0; v < NV; ++v) {
      V sum = acc[0][r][v];
#pragma GCC unroll 4
      for (std::size_t s = 1; s < S; ++s) sum += acc[s][r][v];
      if (v + 1 < NV || tail == L) sum.store_unaligned(c + r * N + v * L);
      else store_partial(c + r * N + v * L, sum, tail);
    }
}

/// Rows per static tile: about 16 accumulators (the rest of the 32 registers hold B's row).
template <class T> constexpr std::size_t static_rows(std::size_t n) {
  const std::size_t nv = (n + lanes<T> - 1) / lanes<T>;
  return std::max<std::size_t>(1, std::min<std::size_t>(16, 16 / nv));
}

/// C[M x N] = A[M x K] * B[K x N] for compile-time sizes with A and B contiguous and row-major,
/// N at most 4 vectors: for the small static products of inference, where a general call's loops
/// and index arithmetic would dominate.
template <class T, std::size_t M, std::size_t K, std::size_t N> void small_static(const T* a, const T* b, T* c) {
  constexpr std::size_t R = std::min(M, static_rows<T>(N)), full = M / R * R;
  for (std::size_t i = 0; i < full; i += R) static_tile<T, R, K, N>(a + i * K, b, c + i * N);
  if constexpr (full < M) static_tile<T, M - full, K, N>(a + full * K, b, c + full * N);
}

/// Run s (0 or 1) of small_tile<T, 1, 8>'s two runs of k over B's first `wide` columns (whole
/// tiles of 8 vectors), tile by tile into sums: rows [s k/2, (s + 1) k/2) of B, and for run 0
/// the odd last row after both, each column's products added in the order the tile adds them.
template <class T>
void row_run(std::size_t s, std::size_t wide, std::size_t k, const T* a, std::ptrdiff_t csa, const T* b, std::ptrdiff_t rsb, T* sums) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>, W = 8 * L;
  const std::size_t per = k / 2, end = s == 0 ? per : 2 * per;
  for (std::size_t j = 0; j < wide; j += W) {
    V acc[8];
    unroll(std::make_index_sequence<8>{}, [&](auto v) { acc[v] = V(T(0)); });
    const auto step = [&](std::size_t row) {
      const V ai(a[std::ptrdiff_t(row) * csa]);
      const T* brow = b + std::ptrdiff_t(row) * rsb + std::ptrdiff_t(j);
      unroll(std::make_index_sequence<8>{}, [&](auto v) { acc[v] = xsimd::fma(ai, V::load_unaligned(brow + v * L), acc[v]); });
    };
    for (std::size_t row = s * per; row < end; ++row) step(row);
    if (s == 0)
      for (std::size_t row = 2 * per; row < k; ++row) step(row);
    unroll(std::make_index_sequence<8>{}, [&](auto v) { acc[v].store_unaligned(sums + j + v * L); });
  }
}

/// A row of A times B (1 x k times k x n) on two threads: each takes one of the two runs of k of
/// small_rows<T, 1>'s widest tiles, so that each core streams half of B (from its own cache
/// where B is larger than one core's L2, a dense layer's weights at batch 1), and their sums are
/// added as the tile adds its runs: the same result, bit for bit, as on one thread. The narrower
/// tiles after the widest ones stay whole, on the first thread.
template <class T>
void row_in_two_runs(std::size_t n, std::size_t k, const T* a, std::ptrdiff_t csa, const T* b, std::ptrdiff_t rsb, T* c, bool accumulate) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>, W = 8 * L;
  const std::size_t wide = n / W * W;
  ctflow::detail::buffer<T> sums(2 * wide, false);
  parallel_for(2, 1, 1, [&](std::size_t sb, std::size_t se) {
    for (std::size_t s = sb; s < se; ++s) {
      row_run(s, wide, k, a, csa, b, rsb, sums.data() + s * wide);
      if (s == 0 && wide < n) small_rows<T, 1>(n - wide, k, a, 0, csa, b + wide, rsb, c + wide, 0, accumulate);
    }
  });
  for (std::size_t j = 0; j < wide; j += L) {
    V r = V::load_unaligned(sums.data() + j);
    r += V::load_unaligned(sums.data() + wide + j);
    (accumulate ? r + V::load_unaligned(c + j) : r).store_unaligned(c + j);
  }
}

/// C[m x n] (+)= A[m x k] * B[k x n]; element (i, j) of A is a[i * rsa + j * csa], likewise B;
/// C is row-major with leading dimension ldc.
template <class T>
void gemm(std::size_t m, std::size_t n, std::size_t k, const T* a, std::ptrdiff_t rsa, std::ptrdiff_t csa, const T* b,
          std::ptrdiff_t rsb, std::ptrdiff_t csb, T* c, std::ptrdiff_t ldc, bool accumulate = false) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (std::size_t i = 0; i < m; ++i) std::fill_n(c + std::ptrdiff_t(i) * ldc, n, T(0));
    return;
  }
  const double work = double(m) * double(n) * double(k);
  // A parallel call costs 0.3 to 1.3 us here (a cache line takes 0.04 to 0.25 us between these
  // cores, as the host places them): from 3e5 multiply-adds (3 us on one thread), a second
  // thread pays even at the high end.
  const std::size_t threads = work < 3.0e5 ? 1 : std::size_t(pool().size());
  // A row vector times a B of 1.5e5 elements or more (600 KB of float32, more than half a core's
  // L2): memory-bound on one core, a second streams half of B from its own cache.
  if (m == 1 && csb == 1 && n >= 8 * lanes<T> && k >= 64 && work >= 1.5e5 && pool().size() > 1)
    return row_in_two_runs(n, k, a, csa, b, rsb, c, accumulate);
  // Unpacked: products too small to pay for packing, and those whose B stays in L2 while it
  // streams past each group of rows of A, where B is narrow enough (up to 320 columns, which
  // covers the im2col products of 3x3 convolutions over 32 channels) for that to beat packing.
  // Threads take rows in multiples of 8, so that every row is computed by the same tile as on
  // one thread.
  const bool b_in_l2 = n <= 320 && double(k) * double(n) * double(sizeof(T)) <= 0.875 * double(l2_bytes);
  if (csb == 1 && (m <= 8 || work <= 64.0 * 64 * 64 || b_in_l2)) {
    if (threads == 1) small(m, n, k, a, rsa, csa, b, rsb, c, ldc, accumulate);
    else
      parallel_for(m, 8, 8, [&](std::size_t i0, std::size_t i1) {
        small(i1 - i0, n, k, a + std::ptrdiff_t(i0) * rsa, rsa, csa, b, rsb, c + std::ptrdiff_t(i0) * ldc, ldc, accumulate);
      });
    return;
  }
  // Fixed partitioning: split the wider of M and N into equal parts, one per thread; M when they
  // are equal (each thread then packs its own rows of A for each block of B, not all of A).
  using BL = blocking<T>;
  if (n > m) {
    const std::size_t per = (n / BL::NR + threads - 1) / threads * BL::NR;
    parallel_for(threads, 1, 1, [&](std::size_t tb, std::size_t te) {
      for (std::size_t t = tb; t < te; ++t) {
        const std::size_t j0 = t * per, j1 = t + 1 == threads ? n : std::min(n, j0 + per);
        if (j0 < j1) packed(m, j1 - j0, k, a, rsa, csa, b + std::ptrdiff_t(j0) * csb, rsb, csb, c + j0, ldc, accumulate);
      }
    });
  } else {
    const std::size_t per = (m / BL::MR + threads - 1) / threads * BL::MR;
    parallel_for(threads, 1, 1, [&](std::size_t tb, std::size_t te) {
      for (std::size_t t = tb; t < te; ++t) {
        const std::size_t i0 = t * per, i1 = t + 1 == threads ? m : std::min(m, i0 + per);
        if (i0 < i1) packed(i1 - i0, n, k, a + std::ptrdiff_t(i0) * rsa, rsa, csa, b, rsb, csb, c + std::ptrdiff_t(i0) * ldc, ldc, accumulate);
      }
    });
  }
}

// The float32 and float64 instances of this file's entry points are compiled once per program,
// by <ctflow/compiled/core.hpp>, where it is built with CTFLOW_SEPARATE_COMPILATION; its other
// translation units only call them.
#define CTFLOW_GEMM_INSTANCES(KIND, T)                                                                                           \
  KIND void gemm<T>(std::size_t, std::size_t, std::size_t, const T*, std::ptrdiff_t, std::ptrdiff_t, const T*, std::ptrdiff_t,    \
                    std::ptrdiff_t, T*, std::ptrdiff_t, bool);                                                                    \
  KIND void packed<T>(std::size_t, std::size_t, std::size_t, const T*, std::ptrdiff_t, std::ptrdiff_t, const T*, std::ptrdiff_t,  \
                      std::ptrdiff_t, T*, std::ptrdiff_t, bool);
#if defined(CTFLOW_SEPARATE_COMPILATION)
CTFLOW_GEMM_INSTANCES(extern template, float)
CTFLOW_GEMM_INSTANCES(extern template, double)
#endif

}  // namespace ctflow::backend::cpu::gemm
