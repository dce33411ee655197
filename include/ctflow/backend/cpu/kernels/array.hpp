#pragma once
// CPU kernels of the shape ops that build new tensors (concat, gather, one_hot, pad, tile) and of
// the adjoints gradients need (a view's scatter, gather's scatter-add, pad's and tile's sums).

#include <algorithm>
#include <array>
#include <cstring>

#include <ctflow/backend/cpu/evaluator.hpp>
#include <ctflow/ops/array.hpp>

namespace ctflow::backend::cpu {

template <class T, class S, int Axis, std::size_t N> struct kernel<ops::concat_op<T, S, Axis, N>> : ops::concat_op<T, S, Axis, N> {
  using op = ops::concat_op<T, S, Axis, N>;
  using op::along, op::out_dims;
  template <class... V> void run(T* out, const V&... in) const {
    std::size_t outer = 1, inner = 1;
    for (int i = 0; i < S::rank; ++i) {
      if (i < Axis) outer *= out_dims[std::size_t(i)];
      if (i > Axis) inner *= out_dims[std::size_t(i)];
    }
    const std::size_t row = out_dims[std::size_t(Axis)] * inner;
    for (std::size_t o = 0; o < outer; ++o) {
      std::size_t at = 0, k = 0;
      ((std::memcpy(out + o * row + at, in.data + o * along[k] * inner, along[k] * inner * sizeof(T)), at += along[k] * inner, ++k), ...);
    }
  }
};

/// Checks every index of a gather against [0, n) before any work.
template <class I, std::size_t RI, int Axis> void check_indices(const expr::strided_view<I, RI>& idx, const ops::gather_layout<Axis>& at) {
  for (std::size_t j = 0; j < at.nidx; ++j)
    if (idx.data[j] < 0 || std::size_t(idx.data[j]) >= at.n) ops::index_out_of_range(std::int64_t(idx.data[j]), at.n);
}

template <class T, class SP, class SI, class S, int Axis, class I> struct kernel<ops::gather_op<T, SP, SI, S, Axis, I>> : ops::gather_op<T, SP, SI, S, Axis, I> {
  using op = ops::gather_op<T, SP, SI, S, Axis, I>;
  void run(T* out, const expr::strided_view<T, std::size_t(SP::rank)>& p, const expr::strided_view<I, std::size_t(SI::rank)>& idx) const {
    const ops::gather_layout<Axis> at(p.dims, idx.dims);
    check_indices(idx, at);
    for (std::size_t o = 0; o < at.outer; ++o)
      for (std::size_t j = 0; j < at.nidx; ++j)
        std::memcpy(out + (o * at.nidx + j) * at.inner, p.data + (o * at.n + std::size_t(idx.data[j])) * at.inner, at.inner * sizeof(T));
  }
};

template <class T, class I, class SI, class S> struct kernel<ops::one_hot_op<T, I, SI, S>> : ops::one_hot_op<T, I, SI, S> {
  using op = ops::one_hot_op<T, I, SI, S>;
  using op::depth, op::on, op::off;
  void run(T* out, const expr::strided_view<I, std::size_t(SI::rank)>& idx) const {
    std::size_t n = 1;
    for (auto x : idx.dims) n *= x;
    for (std::size_t j = 0; j < n; ++j) {
      T* row = out + j * depth;
      std::fill_n(row, depth, off);
      // TensorFlow: an index outside [0, depth) gives a row of off_value.
      if (idx.data[j] >= 0 && std::size_t(idx.data[j]) < depth) row[std::size_t(idx.data[j])] = on;
    }
  }
};

/// Calls f(e, offset) for each output element e of pad or tile k that reads input element
/// `offset` (row-major in the input's extents in_dims); padding elements are skipped.
template <class T, class SIn, class S, bool Tile, class F>
void each_read(const ops::index_map_op<T, SIn, S, Tile>& k, const dims_t<std::size_t(S::rank)>& in_dims, F&& f) {
  constexpr std::size_t R = std::size_t(S::rank);
  const std::size_t n = product(k.out_dims);
  std::array<std::size_t, R> idx{};
  const auto st = row_major_strides(in_dims);
  for (std::size_t e = 0; e < n; ++e) {
    std::ptrdiff_t off = 0;
    bool inside = true;
    for (std::size_t a = 0; a < R; ++a) {
      std::size_t i = idx[a];
      if constexpr (Tile) i %= in_dims[a];
      else {
        if (i < k.before[a] || i - k.before[a] >= in_dims[a]) {
          inside = false;
          break;
        }
        i -= k.before[a];
      }
      off += std::ptrdiff_t(i) * st[a];
    }
    if (inside) f(e, off);
    for (std::size_t a = R; a-- > 0;) {
      if (++idx[a] < k.out_dims[a]) break;
      idx[a] = 0;
    }
  }
}

template <class T, class SIn, class S, bool Tile> struct kernel<ops::index_map_op<T, SIn, S, Tile>> : ops::index_map_op<T, SIn, S, Tile> {
  using op = ops::index_map_op<T, SIn, S, Tile>;
  using op::R, op::out_dims, op::constant;
  void run(T* out, const expr::strided_view<T, R>& in) const {
    if constexpr (!Tile) std::fill_n(out, product(out_dims), constant);
    each_read(*this, in.dims, [&](std::size_t e, std::ptrdiff_t off) { out[e] = in.data[off]; });
  }
};

template <class T, class SE, class S, class M> struct kernel<ops::view_adjoint_op<T, SE, S, M>> : ops::view_adjoint_op<T, SE, S, M> {
  using op = ops::view_adjoint_op<T, SE, S, M>;
  using op::RI, op::RO, op::out_dims, op::m;
  void run(T* out, const expr::strided_view<T, RO>& g) const {
    std::fill_n(out, product(out_dims), T(0));
    expr::strided_view<T, RO> at;
    m.map(expr::strided_view<T, RI>{out, out_dims, row_major_strides(out_dims)}, at);
    T* base = const_cast<T*>(at.data);
    const std::size_t n = product(g.dims);
    std::array<std::size_t, RO> idx{};
    for (std::size_t e = 0; e < n; ++e) {
      std::ptrdiff_t off = 0;
      for (std::size_t k = 0; k < RO; ++k) off += std::ptrdiff_t(idx[k]) * at.strides[k];
      base[off] = T(compute_t<T>(base[off]) + compute_t<T>(g.data[e]));
      for (std::size_t k = RO; k-- > 0;) {
        if (++idx[k] < g.dims[k]) break;
        idx[k] = 0;
      }
    }
  }
};

template <class K, class SIn> struct kernel<ops::index_map_adjoint_op<K, SIn>> : ops::index_map_adjoint_op<K, SIn> {
  using op = ops::index_map_adjoint_op<K, SIn>;
  using typename op::value_type;
  using op::out_dims, op::forward;
  void run(value_type* out, const expr::strided_view<value_type, K::R>& g) const {
    std::fill_n(out, product(out_dims), value_type(0));
    each_read(forward, out_dims, [&](std::size_t e, std::ptrdiff_t off) {
      out[off] = value_type(compute_t<value_type>(out[off]) + compute_t<value_type>(g.data[e]));
    });
  }
};

template <class T, class SP, class SG, class SI, int Axis, class I> struct kernel<ops::gather_adjoint_op<T, SP, SG, SI, Axis, I>> : ops::gather_adjoint_op<T, SP, SG, SI, Axis, I> {
  using op = ops::gather_adjoint_op<T, SP, SG, SI, Axis, I>;
  using op::out_dims;
  void run(T* out, const expr::strided_view<T, std::size_t(SG::rank)>& g, const expr::strided_view<I, std::size_t(SI::rank)>& idx) const {
    const ops::gather_layout<Axis> at(out_dims, idx.dims);
    check_indices(idx, at);
    std::fill_n(out, product(out_dims), T(0));
    for (std::size_t o = 0; o < at.outer; ++o)
      for (std::size_t j = 0; j < at.nidx; ++j) {
        T* dst = out + (o * at.n + std::size_t(idx.data[j])) * at.inner;
        const T* src = g.data + (o * at.nidx + j) * at.inner;
        for (std::size_t i = 0; i < at.inner; ++i) dst[i] = T(compute_t<T>(dst[i]) + compute_t<T>(src[i]));
      }
  }
};

}  // namespace ctflow::backend::cpu
