#pragma once
// The CPU executor of element-wise expressions: one fused loop over the destination, vectorised
// when every node of the tree can be, split over threads with a fixed partitioning.
//
// A cursor (built by an evaluator) reads an expression at positions of the destination:
// bind() fixes how its operands are broadcast into the destination's extents, set_row() moves to
// one row (all but the last axis), next_row(k) on to the following row, whose axis k advanced (the
// axes after it back at 0): one add per operand, where rows are short (a bias over channels).
// coeff(j)/packet(j) read element j of that row, packet(j, n) its elements j .. j + n - 1 (a
// row's tail) in a vector's first lanes. In flat mode (every operand has the
// destination's extents, contiguous) the whole tensor is one row.

#include <array>
#include <cstddef>

#include <ctflow/core/shape.hpp>
#include <ctflow/detail/buffer.hpp>
#include <ctflow/backend/cpu/simd.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>

namespace ctflow::backend::cpu {

/// Elements per thread below which a loop stays on one thread.
inline constexpr std::size_t elementwise_grain = std::size_t(1) << 16;

/// Elements [b, e) of a row. With Stream (out + b 64-byte aligned), whole vectors go past the
/// cache in non-temporal stores; the caller fences them. With ShortRows (one of many rows), a
/// tail of a quarter vector or more is computed in one partial vector (a row of 10 classes is
/// one); otherwise, and for shorter tails, which cost less than a vector's work, element by element.
template <bool Stream = false, bool ShortRows = false, class T, class C> void run_row(T* out, const C& c, std::size_t b, std::size_t e) {
  using V = typename C::compute_type;
  if constexpr (C::vectorizable && std::is_same_v<T, V>) {
    constexpr std::size_t L = lanes<V>;
    std::size_t j = b;
    for (; j + 4 * L <= e; j += 4 * L) {
      const auto p0 = c.packet(j), p1 = c.packet(j + L), p2 = c.packet(j + 2 * L), p3 = c.packet(j + 3 * L);
      if constexpr (Stream) {
        store_stream(out + j, p0);
        store_stream(out + j + L, p1);
        store_stream(out + j + 2 * L, p2);
        store_stream(out + j + 3 * L, p3);
      } else {
        p0.store_unaligned(out + j);
        p1.store_unaligned(out + j + L);
        p2.store_unaligned(out + j + 2 * L);
        p3.store_unaligned(out + j + 3 * L);
      }
    }
    for (; j + L <= e; j += L) c.packet(j).store_unaligned(out + j);
    if constexpr (ShortRows)
      if (e - j >= std::max<std::size_t>(L / 4, 1)) {
        store_partial(out + j, c.packet(j, e - j), e - j);
        return;
      }
    for (; j < e; ++j) out[j] = c.coeff(j);
  } else {
    for (std::size_t j = b; j < e; ++j) out[j] = T(c.coeff(j));
  }
}

/// Elements of a merged row (see execute()).
inline constexpr std::size_t merged_row = 256;

/// Memory of the operands that execute() tiles to merge rows, freed when it returns: from the
/// block cache, so that a warm loop allocates nothing. Null past max_tiles operands (the rows
/// are then read one at a time).
struct row_tiles {
  static constexpr std::size_t max_tiles = 8;
  std::array<detail::buffer<std::byte>, max_tiles> blocks;
  std::size_t used = 0;
  template <class T> T* make(std::size_t n) {
    if (used == max_tiles) return nullptr;
    blocks[used] = detail::buffer<std::byte>(n * sizeof(T), false);
    return reinterpret_cast<T*>(blocks[used++].data());
  }
};

/// Evaluates cursor c row by row (every axis but the last) into the contiguous destination out
/// of extents d.
template <class T, std::size_t R, class C> void execute_rows(T* out, const dims_t<R>& d, C& c) {
  c.bind(d.data(), int(R), false);
  const std::size_t inner = d[R - 1], rows = product(d) / inner;
  parallel_for(rows, std::max<std::size_t>(1, elementwise_grain / inner), 1, [&](std::size_t rb, std::size_t re) {
    C local = c;
    std::array<std::size_t, (R > 1 ? R - 1 : 1)> idx{};
    for (std::size_t r = rb, k = R - 1; k-- > 0;) { idx[k] = r % d[k]; r /= d[k]; }
    local.set_row(idx.data());
    for (std::size_t r = rb; r < re; ++r) {
      run_row<false, true>(out + r * inner, local, 0, inner);
      for (std::size_t k = R - 1; k-- > 0;) {
        if (++idx[k] < d[k]) {
          local.next_row(int(k));
          break;
        }
        idx[k] = 0;
      }
    }
  });
}

/// Evaluates cursor c into the contiguous destination out of extents d.
template <class T, std::size_t R, class C> void execute(T* out, const dims_t<R>& d, C c) {
  const std::size_t n = product(d);
  if (n == 0) return;
  if constexpr (R == 0) {
    c.bind(nullptr, 0, true);
    out[0] = T(c.coeff(0));
  } else {
    if (c.full(d.data(), int(R))) {
      c.bind(d.data(), int(R), true);
      // A destination too large for the cache would only pass through it: it goes past in
      // non-temporal stores where they apply (threads start at multiples of 64 elements).
      if constexpr (C::vectorizable && streams<T>)
        if (n * sizeof(T) >= cache_bytes && reinterpret_cast<std::uintptr_t>(out) % 64 == 0) {
          parallel_for(n, elementwise_grain, 64, [&](std::size_t b, std::size_t e) {
            run_row<true>(out, c, b, e);
            stream_fence();
          });
          return;
        }
      parallel_for(n, elementwise_grain, 64, [&](std::size_t b, std::size_t e) { run_row(out, c, b, e); });
      return;
    }
    // Short rows (a bias over 3 channels) cost a row's bookkeeping every few elements: g of them
    // are read as one where every operand allows it (the destination's extents then are
    // (..., d[R - 2] / g, g * d[R - 1])), g the largest divisor of d[R - 2] that keeps such a
    // row within merged_row elements.
    if constexpr (R >= 2)
      if (d[R - 1] >= 2 && d[R - 1] <= merged_row / 2) {
        std::size_t g = merged_row / d[R - 1];
        while (d[R - 2] % g != 0) --g;
        if (g > 1) {
          row_tiles tiles;
          C merged = c;
          if (merged.merge_rows(d.data(), int(R), g, tiles)) {
            dims_t<R> md = d;
            md[R - 2] /= g;
            md[R - 1] *= g;
            execute_rows(out, md, merged);
            return;
          }
        }
      }
    execute_rows(out, d, c);
  }
}

}  // namespace ctflow::backend::cpu
