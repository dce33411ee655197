#pragma once
// Reductions over contiguous memory. The axes are first merged into alternating groups of kept
// and reduced extents; the two shapes that matter most are vectorised and threaded:
// [kept, reduced] (rows, each summed by packets) and [reduced, kept] (column sums, packets across
// the row). Each output sums its inputs in one fixed order, whatever the thread count.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <type_traits>
#include <array>

#include <ctflow/core/shape.hpp>
#include <ctflow/detail/buffer.hpp>

#include <ctflow/backend/cpu/simd.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>

namespace ctflow::backend::cpu::reduce {

/// A reduction: identity, combine, and its packet forms when V is a SIMD type.
template <class Op, class V> V row(const Op& op, const V* p, std::size_t n) {
  if constexpr (simd_type_v<V> && Op::vectorizable) {
    constexpr std::size_t L = lanes<V>;
    if (n >= 4 * L) {
      batch<V> a0(op.identity()), a1 = a0, a2 = a0, a3 = a0;
      std::size_t j = 0;
      for (; j + 4 * L <= n; j += 4 * L) {
        a0 = op(a0, batch<V>::load_unaligned(p + j));
        a1 = op(a1, batch<V>::load_unaligned(p + j + L));
        a2 = op(a2, batch<V>::load_unaligned(p + j + 2 * L));
        a3 = op(a3, batch<V>::load_unaligned(p + j + 3 * L));
      }
      for (; j + L <= n; j += L) a0 = op(a0, batch<V>::load_unaligned(p + j));
      const batch<V> all = op(op(a0, a1), op(a2, a3));
      alignas(64) V lanes_out[L];
      all.store_aligned(lanes_out);
      V r = lanes_out[0];
      for (std::size_t l = 1; l < L; ++l) r = op(r, lanes_out[l]);
      for (; j < n; ++j) r = op(r, p[j]);
      return r;
    }
  }
  V r = op.identity();
  for (std::size_t j = 0; j < n; ++j) r = op(r, V(p[j]));
  return r;
}

/// acc[j] = op(...op(op(acc[j], p[j]), p[s + j])..., p[(K - 1) s + j]) for j < n: K rows, s
/// apart, folded into acc in row order in one pass, so that K rows stream from memory at once.
template <std::size_t K, class Op, class V> void combine_rows(const Op& op, V* acc, const V* p, std::size_t s, std::size_t n) {
  std::size_t j = 0;
  if constexpr (simd_type_v<V> && Op::vectorizable) {
    constexpr std::size_t L = lanes<V>;
    for (; j + L <= n; j += L) {
      batch<V> a = batch<V>::load_unaligned(acc + j);
      for (std::size_t r = 0; r < K; ++r) a = op(a, batch<V>::load_unaligned(p + r * s + j));
      a.store_unaligned(acc + j);
    }
  }
  for (; j < n; ++j) {
    V a = acc[j];
    for (std::size_t r = 0; r < K; ++r) a = op(a, V(p[r * s + j]));
    acc[j] = a;
  }
}
/// Folds rows [r0, r1) of in (rows s apart, w wide) into acc, in row order, 8 rows a pass: one
/// row at a time leaves memory with a single stream per thread and reloads acc for every row.
template <class Op, class V> void combine_row_range(const Op& op, V* acc, const V* in, std::size_t r0, std::size_t r1, std::size_t s, std::size_t w) {
  constexpr std::size_t K = 8;
  std::size_t r = r0;
  for (; r + K <= r1; r += K) combine_rows<K>(op, acc, in + r * s, s, w);
  for (; r < r1; ++r) combine_rows<1>(op, acc, in + r * s, s, w);
}

/// Results computed in a fixed number of chunks, combined in chunk order: partial(i, dst) writes
/// chunk i's `size` values to its own scratch dst, one chunk per thread at a time; out is chunk
/// 0, then combine(out, chunk i, size) for i = 1, 2, ... So the result does not depend on the
/// thread count. With `work` > 0, partial(i, dst, work) also gets `work` elements of working
/// memory, its thread's (parallel_for_scratch).
template <class V, class Partial, class Combine>
void in_chunk_order(std::size_t chunks, std::size_t size, V* out, Partial&& partial, Combine&& combine, std::size_t work = 0) {
  detail::buffer<V> scratch(chunks * size, false);
  parallel_for_scratch<V>(chunks, 1, 1, work, [&](std::size_t b, std::size_t e, V* w) {
    for (std::size_t i = b; i < e; ++i) {
      if constexpr (std::is_invocable_v<Partial&, std::size_t, V*, V*>) partial(i, scratch.data() + i * size, w);
      else partial(i, scratch.data() + i * size);
    }
  });
  std::copy_n(scratch.data(), size, out);
  for (std::size_t i = 1; i < chunks; ++i) combine(out, scratch.data() + i * size, size);
}
/// in_chunk_order whose chunks are added.
template <class V, class Partial> void sum_in_chunk_order(std::size_t chunks, std::size_t size, V* out, Partial&& partial, std::size_t work = 0) {
  in_chunk_order(chunks, size, out, partial, [](V* o, const V* p, std::size_t n) {
    for (std::size_t j = 0; j < n; ++j) o[j] += p[j];
  }, work);
}

/// Elements per block of a full reduction: partial results are per block, then combined in
/// order, so the sum does not depend on how blocks are shared among threads.
inline constexpr std::size_t block = std::size_t(1) << 15;

/// Reduces in (`rank` extents `dims`, `reduced[i]` marking reduced axes) into out, both
/// contiguous and of accumulation type V. Allocates nothing but pooled scratch.
template <class Op, class V>
void run(const Op& op, const V* in, const std::size_t* dims, const bool* reduced, int rank, V* out) {
  // Merge neighbouring axes of the same kind; drop extents of 1.
  std::array<std::size_t, max_rank> g{};
  std::array<bool, max_rank> gr{};
  std::size_t ng = 0, total = 1;
  for (int i = 0; i < rank; ++i) {
    total *= dims[i];
    if (dims[i] == 1) continue;
    if (ng && gr[ng - 1] == reduced[i]) g[ng - 1] *= dims[i];
    else { g[ng] = dims[i]; gr[ng++] = reduced[i]; }
  }
  std::size_t out_size = 1;
  for (std::size_t i = 0; i < ng; ++i) if (!gr[i]) out_size *= g[i];
  if (total == 0) { std::fill_n(out, out_size, op.identity()); return; }
  if (ng == 0 || (ng == 1 && !gr[0])) { std::copy_n(in, total, out); return; }

  if (ng == 1) {  // everything reduced
    const std::size_t blocks = (total + block - 1) / block;
    detail::buffer<V> scratch(blocks, false);
    V* partial = scratch.data();
    parallel_for(blocks, 2, 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) partial[i] = row(op, in + i * block, std::min(block, total - i * block));
    });
    V r = op.identity();
    for (std::size_t i = 0; i < blocks; ++i) r = op(r, partial[i]);
    *out = r;
    return;
  }
  if (ng == 2 && !gr[0]) {  // [kept, reduced]: one row per output
    const std::size_t rows = g[0], n = g[1];
    parallel_for(rows, std::max<std::size_t>(1, block / n), 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t r = b; r < e; ++r) out[r] = row(op, in + r * n, n);
    });
    return;
  }
  if (ng == 2) {  // [reduced, kept]: column reduction
    const std::size_t rows = g[0], n = g[1];
    constexpr std::size_t tile = 8192;  // an accumulating row of up to 32 KB (float) stays in L1
    // Rows no wider than a tile: chunks of whole rows (their number fixed by the shape: a power
    // of two, so that 2, 4, 8 or 16 threads take equal shares, each of 2 blocks or more), each
    // streamed in order into its own partial row by one thread; the partials are then combined
    // in chunk order. (A bias's gradient in the Fashion-MNIST CNN, [7744, 64] to [64], took one
    // thread in 8-block chunks: 69 us.)
    const std::size_t chunks = n <= tile ? std::bit_floor(std::clamp<std::size_t>(total / (2 * block), 1, 16)) : 1;
    if (chunks > 1) {
      in_chunk_order(
          chunks, n, out,
          [&](std::size_t c, V* part) {
            const std::size_t r0 = rows * c / chunks, r1 = rows * (c + 1) / chunks;
            std::copy_n(in + r0 * n, n, part);
            combine_row_range(op, part, in, r0 + 1, r1, n, n);
          },
          [&](V* o, const V* p, std::size_t m) { combine_rows<1>(op, o, p, 0, m); });
      return;
    }
    // Wide rows (or little work): threads split the columns, a tile at a time.
    parallel_for(n, std::max<std::size_t>(64, block / std::max<std::size_t>(rows, 1)), 64, [&](std::size_t b, std::size_t e) {
      for (std::size_t j0 = b; j0 < e; j0 += tile) {
        const std::size_t w = std::min(tile, e - j0);
        std::copy_n(in + j0, w, out + j0);
        combine_row_range(op, out + j0, in + j0, 1, rows, n, w);
      }
    });
    return;
  }
  // General pattern: walk the input row by row (last group), accumulating into its output.
  std::fill_n(out, out_size, op.identity());
  const std::size_t last = g[ng - 1];
  const bool last_reduced = gr[ng - 1];
  const std::size_t rows = total / last;
  std::array<std::size_t, max_rank> idx{};
  for (std::size_t r = 0; r < rows; ++r) {
    std::size_t o = 0;
    for (std::size_t k = 0; k + 1 < ng; ++k) if (!gr[k]) o = o * g[k] + idx[k];
    const V* p = in + r * last;
    if (last_reduced) out[o] = op(out[o], row(op, p, last));
    else combine_rows<1>(op, out + o * last, p, 0, last);
    for (std::size_t k = ng - 1; k-- > 0;) {
      if (++idx[k] < g[k]) break;
      idx[k] = 0;
    }
  }
}

}  // namespace ctflow::backend::cpu::reduce
