#pragma once
// The CPU executor of element-wise expressions: one fused loop over the destination, vectorised
// when every node of the tree can be, split over threads with a fixed partitioning.
//
// An evaluator hands out two cursors, small copyable readers of its expression: cursor() reads
// any layout, flat_cursor() only operands that all have the destination's extents and are
// contiguous (then the whole tensor is one row, and each leaf is a plain load).
//
// The general cursor reads an expression at positions of the destination: bind() fixes how its
// operands are broadcast into the destination's extents, set_row() moves to one row (all but
// the last axis), next_row(k) on to the following row, whose axis k advanced (the axes after it
// back at 0): one add per operand, where rows are short (a bias over channels). coeff(j)/packet(j)
// read element j of that row, packet(j, n) its elements j .. j + n - 1 (a row's tail) in a
// vector's first lanes.
//
// The loops are instantiated per cursor type, which holds the element-wise functors and dtypes
// but no extents and no rank: expressions that differ only in their shapes share them.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <tuple>
#include <utility>

#include <ctflow/core/shape.hpp>
#include <ctflow/detail/buffer.hpp>
#include <ctflow/detail/linkage.hpp>
#include <ctflow/backend/cpu/simd.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>

namespace ctflow::backend::cpu {

/// How run_row writes whole vectors: plain stores, or past the cache in non-temporal stores (out
/// 64-byte aligned at the row's start; the caller fences them).
enum class store_kind { plain, stream };

/// Elements [b, e) of a row. A tail shorter than a vector is one partial vector (masked loads
/// and stores on AVX-512), so no scalar loop follows the vector loop.
template <store_kind Store = store_kind::plain, class T, class C> void run_row(T* out, const C& c, std::size_t b, std::size_t e) {
  using V = typename C::compute_type;
  if constexpr (C::vectorizable && std::is_same_v<T, V>) {
    constexpr std::size_t L = lanes<V>;
    std::size_t j = b;
    for (; j + 4 * L <= e; j += 4 * L) {
      const auto p0 = c.packet(j), p1 = c.packet(j + L), p2 = c.packet(j + 2 * L), p3 = c.packet(j + 3 * L);
      if constexpr (Store == store_kind::stream) {
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
    if (j < e) store_partial(out + j, c.packet(j, e - j), e - j);
  } else {
    for (std::size_t j = b; j < e; ++j) out[j] = T(c.coeff(j));
  }
}

/// Elements of a merged row (see execute()).
inline constexpr std::size_t merged_row = 1024;

/// Memory of the operands that execute() tiles to merge rows (at most max_tiles; past them the
/// rows are read one at a time), freed when it returns: from the block cache, so that a warm
/// loop allocates nothing.
struct row_tiles {
  static constexpr std::size_t max_tiles = 8;
  std::array<detail::buffer<std::byte>, max_tiles> blocks;
  std::size_t used = 0;
  std::byte* make(std::size_t bytes) {
    blocks[used] = detail::buffer<std::byte>(bytes, false);
    return blocks[used++].data();
  }
};

/// Where a leaf operand (memory read through strides) is in the destination's rows. It holds no
/// element type, so that the bookkeeping of rows below is compiled once, not per expression.
struct leaf_layout {
  const std::byte* data = nullptr;
  std::size_t element = 0;  // bytes per element
  int rank = 0;
  std::array<std::size_t, max_rank> dims{};
  std::array<std::ptrdiff_t, max_rank> strides{};  // elements
  std::array<std::ptrdiff_t, max_rank> ostr{};  // elements per step along the destination's axes
  std::array<std::ptrdiff_t, max_rank> step{};  // bytes next_row(k) moves
  int orank = 0;
  std::ptrdiff_t inner = 0;  // elements per step along the row
  const std::byte* row = nullptr;

  leaf_layout(const std::byte* p, std::size_t element_size, int r, const std::size_t* d, const std::ptrdiff_t* s)
      : data(p), element(element_size), rank(r), row(p) {
    std::copy_n(d, r, dims.begin());
    std::copy_n(s, r, strides.begin());
  }

  /// Whether this operand has the destination's extents od (rank r) and is contiguous.
  bool full(const std::size_t* od, int r) const {
    if (r != rank) return false;
    std::ptrdiff_t acc = 1;
    for (int i = r; i-- > 0;) {
      if (dims[std::size_t(i)] != od[i] || (od[i] != 1 && strides[std::size_t(i)] != acc)) return false;
      acc *= std::ptrdiff_t(od[i]);
    }
    return true;
  }
  /// The step in memory along axis k of a destination of extents od (rank r): 0 where this
  /// operand is broadcast along it.
  std::ptrdiff_t stride_along(const std::size_t* od, int r, int k) const {
    const int a = k - (r - rank);
    return a < 0 || (dims[std::size_t(a)] == 1 && od[k] != 1) ? 0 : strides[std::size_t(a)];
  }
  /// Reads the rows of a destination of extents od (rank r >= 1).
  void bind(const std::size_t* od, int r) {
    row = data;
    orank = r;
    for (int k = 0; k < r; ++k) ostr[std::size_t(k)] = stride_along(od, r, k);
    inner = ostr[std::size_t(r - 1)];
    // Axis k advancing takes the axes after it (but the last) from their last index back to 0.
    std::ptrdiff_t back = 0;
    for (int k = r - 1; k-- > 0;) {
      step[std::size_t(k)] = (ostr[std::size_t(k)] - back) * std::ptrdiff_t(element);
      back += std::ptrdiff_t(od[k] - 1) * ostr[std::size_t(k)];
    }
  }
  /// How this operand reads the destination's rows (extents od, rank r) g at a time, as rows of
  /// g times as many elements (see execute()): unchanged where it is constant across both axes;
  /// regrouped where it changes along the row axis in step with the last axis; from a tile of
  /// its row repeated g times where it is a function of the last index only; not at all where
  /// it is broadcast along the last axis but not the row axis (a column).
  enum class merging { unchanged, regrouped, tiled, impossible };
  merging how_to_merge(const std::size_t* od, int r) const {
    const std::ptrdiff_t s1 = stride_along(od, r, r - 1), s2 = stride_along(od, r, r - 2);
    if (s2 == 0 && s1 == 0) return merging::unchanged;
    if (s2 != 0 && s2 == std::ptrdiff_t(od[r - 1]) * s1) return merging::regrouped;
    if (s2 != 0 || s1 == 0) return merging::impossible;
    for (int a = 0; a + 1 < rank; ++a)
      if (dims[std::size_t(a)] != 1) return merging::impossible;
    return merging::tiled;
  }
  /// Applies how_to_merge's answer m; a tiled operand's tile is g rows of `element` bytes.
  void merge_rows(merging m, const std::size_t* od, int r, std::size_t g, std::byte* tile) {
    if (m == merging::regrouped) {
      dims[std::size_t(rank - 2)] /= g;
      dims[std::size_t(rank - 1)] *= g;
      strides[std::size_t(rank - 2)] *= std::ptrdiff_t(g);
    } else if (m == merging::tiled) {
      const std::size_t n = od[r - 1], row_bytes = n * element;
      const std::ptrdiff_t s1 = stride_along(od, r, r - 1);
      if (s1 == 1) std::memcpy(tile, data, row_bytes);
      else
        for (std::size_t j = 0; j < n; ++j) std::memcpy(tile + j * element, data + std::ptrdiff_t(j) * s1 * std::ptrdiff_t(element), element);
      // The row, then copies of what is there, doubling: a few copies rather than g.
      for (std::size_t have = 1; have < g;) {
        const std::size_t more = std::min(have, g - have);
        std::memcpy(tile + have * row_bytes, tile, more * row_bytes);
        have += more;
      }
      data = tile;
      rank = 1;
      dims[0] = g * n;
      strides[0] = 1;
    }
  }
  /// Moves to the row of index idx (every axis but the last).
  void set_row(const std::size_t* idx) {
    std::ptrdiff_t off = 0;
    for (int k = 0; k + 1 < orank; ++k) off += std::ptrdiff_t(idx[k]) * ostr[std::size_t(k)];
    row = data + off * std::ptrdiff_t(element);
  }
};

/// The leaves of cursor c (in an array of C::leaf_count), for the bookkeeping of rows.
template <class C> std::array<leaf_layout*, C::leaf_count> leaves_of(C& c) {
  std::array<leaf_layout*, C::leaf_count> p{};
  std::size_t i = 0;
  c.leaves([&](leaf_layout& l) { p[i++] = &l; });
  return p;
}

/// The largest divisor of n that is at most m (m >= 1), in at most sqrt(n) divisions: the
/// divisors past sqrt(n), largest first, are n / i for the divisors i below it, smallest first.
constexpr std::size_t largest_divisor_within(std::size_t n, std::size_t m) {
  if (n <= m) return n;
  std::size_t best = 1;
  for (std::size_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      if (n / i <= m) return n / i;
      if (i <= m) best = i;
    }
  return best;
}

/// The bookkeeping of a fused loop's rows over leaves ls[0 .. n): compiled once.
struct rows {
  CTFLOW_OUTLINE static bool full(leaf_layout* const* ls, std::size_t n, const std::size_t* od, int r) {
    for (std::size_t i = 0; i < n; ++i)
      if (!ls[i]->full(od, r)) return false;
    return true;
  }
  /// Binds the leaves to the rows of a destination of extents d (rank r >= 1) and runs
  /// run(extents): with the extents of merged rows where short rows merge (a bias over 3
  /// channels costs a row's bookkeeping every few elements), with d otherwise. g rows merge
  /// into one where every operand allows it, g the largest divisor of d[r - 2] that keeps such
  /// a row within merged_row elements; the merged extents are (..., d[r - 2] / g, g * d[r - 1]).
  CTFLOW_OUTLINE static void lay_out(leaf_layout* const* ls, std::size_t n, const std::size_t* d, int r,
                                        function_ref<void(const std::size_t*)> run) {
    if (r >= 2 && d[r - 1] >= 2 && d[r - 1] <= merged_row / 2) {
      const std::size_t g = largest_divisor_within(d[r - 2], merged_row / d[r - 1]);
      std::array<leaf_layout::merging, 64> how{};
      bool ok = g > 1 && n <= how.size();
      for (std::size_t i = 0, tiled = 0; ok && i < n; ++i) {
        how[i] = ls[i]->how_to_merge(d, r);
        tiled += how[i] == leaf_layout::merging::tiled;
        ok = how[i] != leaf_layout::merging::impossible && tiled <= row_tiles::max_tiles;
      }
      if (ok) {
        row_tiles tiles;
        for (std::size_t i = 0; i < n; ++i) {
          std::byte* tile = how[i] == leaf_layout::merging::tiled ? tiles.make(g * d[r - 1] * ls[i]->element) : nullptr;
          ls[i]->merge_rows(how[i], d, r, g, tile);
        }
        std::array<std::size_t, max_rank> md{};
        std::copy_n(d, r, md.begin());
        md[std::size_t(r - 2)] /= g;
        md[std::size_t(r - 1)] *= g;
        for (std::size_t i = 0; i < n; ++i) ls[i]->bind(md.data(), r);
        run(md.data());
        return;
      }
    }
    for (std::size_t i = 0; i < n; ++i) ls[i]->bind(d, r);
    run(d);
  }
  /// Moves the leaves to row q of a destination of extents d (rank r), writing its index to idx.
  CTFLOW_OUTLINE static void seek(leaf_layout* const* ls, std::size_t n, const std::size_t* d, int r, std::size_t q, std::size_t* idx) {
    for (int k = r - 1; k-- > 0;) { idx[k] = q % d[k]; q /= d[k]; }
    for (std::size_t i = 0; i < n; ++i) ls[i]->set_row(idx);
  }
};

/// Evaluates cursor c row by row (every axis but the last) into the contiguous destination out
/// of extents d (rank r >= 1).
template <class T, class C> void execute_rows(T* out, const std::size_t* d, int r, const C& c) {
  std::size_t n_rows = 1;
  for (int k = 0; k + 1 < r; ++k) n_rows *= d[k];
  const std::size_t inner = d[r - 1];
  parallel_for(n_rows, grain_for(inner), 1, [&, d, r](std::size_t rb, std::size_t re) {
    C local = c;
    const auto ls = leaves_of(local);
    std::array<std::size_t, max_rank> idx{};
    rows::seek(ls.data(), ls.size(), d, r, rb, idx.data());
    // The next row is most often along the last row axis: its steps are kept at hand.
    const int last = r - 2;
    const std::size_t along = last >= 0 ? d[last] : 1;
    std::array<std::ptrdiff_t, C::leaf_count> next{};
    for (std::size_t i = 0; i < ls.size(); ++i) next[i] = last >= 0 ? ls[i]->step[std::size_t(last)] : 0;
    for (std::size_t q = rb; q < re; ++q) {
      run_row(out + q * inner, local, 0, inner);
      if (last < 0) continue;
      if (++idx[std::size_t(last)] < along) {
        for (std::size_t i = 0; i < ls.size(); ++i) ls[i]->row += next[i];
        continue;
      }
      idx[std::size_t(last)] = 0;
      for (int k = last; k-- > 0;) {
        if (++idx[std::size_t(k)] < d[k]) {
          for (leaf_layout* l : ls) l->row += l->step[std::size_t(k)];
          break;
        }
        idx[std::size_t(k)] = 0;
      }
    }
  });
}

/// Evaluates an expression into the contiguous destination out of extents d (rank r): through
/// its flat cursor fc where every operand has the destination's extents and is contiguous, else
/// through its general cursor c.
template <class T, class C, class FC> void execute(T* out, const std::size_t* d, int r, C c, const FC& fc) {
  std::size_t n = 1;
  for (int k = 0; k < r; ++k) n *= d[k];
  if (n == 0) return;
  const auto ls = leaves_of(c);
  if (rows::full(ls.data(), ls.size(), d, r)) {
    // A destination too large for the cache would only pass through it: it goes past in
    // non-temporal stores where they apply (threads start at multiples of 64 elements).
    if constexpr (FC::vectorizable && streams<T>)
      if (n * sizeof(T) >= cache_bytes && reinterpret_cast<std::uintptr_t>(out) % 64 == 0) {
        parallel_for(n, task_work, 64, [&](std::size_t b, std::size_t e) {
          run_row<store_kind::stream>(out, fc, b, e);
          stream_fence();
        });
        return;
      }
    parallel_for(n, task_work, 64, [&](std::size_t b, std::size_t e) { run_row(out, fc, b, e); });
    return;
  }
  rows::lay_out(ls.data(), ls.size(), d, r, [&](const std::size_t* rd) { execute_rows(out, rd, r, c); });
}

/// Evaluates flat cursors fcs[k] into the contiguous destinations outs[k] (n elements each), as
/// successive assignments would: one pass over chunks small enough for the first level of cache,
/// each chunk of every destination written in turn (fcs[k] may read outs[j], j < k, at the
/// elements it writes: they are written already).
template <class Outs, class FCs> void execute_together(const Outs& outs, std::size_t n, const FCs& fcs) {
  constexpr std::size_t m = std::tuple_size_v<Outs>, chunk = 512;
  parallel_for(n, task_work / m, 64, [&](std::size_t b, std::size_t e) {
    for (std::size_t c = b; c < e; c += chunk) {
      const std::size_t ce = std::min(e, c + chunk);
      [&]<std::size_t... K>(std::index_sequence<K...>) { (run_row(std::get<K>(outs), std::get<K>(fcs), c, ce), ...); }(std::make_index_sequence<m>{});
    }
  });
}

}  // namespace ctflow::backend::cpu
