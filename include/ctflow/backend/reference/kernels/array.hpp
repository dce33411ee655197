#pragma once
// Reference kernels of the shape ops that build new tensors (concat, gather, one_hot, pad, tile)
// and of their adjoints (a view's scatter-add, pad's and tile's sums, gather's scatter-add):
// serial loops over multi-indices, sums in the compute type (double for floating dtypes).

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <ctflow/backend/reference/kernel.hpp>
#include <ctflow/core/dtype.hpp>
#include <ctflow/ops/array.hpp>

namespace ctflow::backend::reference {

namespace array_detail {

/// Where adjoints add: double for floating dtypes, the compute type otherwise.
template <class T> using sum_t = std::conditional_t<is_floating_v<T>, double, compute_t<T>>;

/// Steps the multi-index idx to the next one of extents d, in row-major order.
template <std::size_t R> void next_index(std::array<std::size_t, R>& idx, const dims_t<R>& d) {
  for (std::size_t k = R; k-- > 0;) {
    if (++idx[k] < d[k]) return;
    idx[k] = 0;
  }
}

/// The row-major offset of multi-index idx in extents with strides st.
template <std::size_t R> std::ptrdiff_t offset_of(const std::array<std::size_t, R>& idx, const std::array<std::ptrdiff_t, R>& st) {
  std::ptrdiff_t off = 0;
  for (std::size_t k = 0; k < R; ++k) off += std::ptrdiff_t(idx[k]) * st[k];
  return off;
}

/// Checks every index of a gather against [0, n) before any work.
template <class I, std::size_t RI, int Axis> void check_indices(const expr::strided_view<I, RI>& idx, const ops::gather_layout<Axis>& at) {
  for (std::size_t j = 0; j < at.nidx; ++j)
    if (idx.data[j] < 0 || std::size_t(idx.data[j]) >= at.n) ops::index_out_of_range(std::int64_t(idx.data[j]), at.n);
}

}  // namespace array_detail

/// out[..., at_k + j, ...] = in_k[..., j, ...], the operands placed in turn along Axis.
template <class T, class S, int Axis, std::size_t N> struct kernel<ops::concat_op<T, S, Axis, N>> : ops::concat_op<T, S, Axis, N> {
  using op = ops::concat_op<T, S, Axis, N>;
  using op::out_dims;
  static constexpr std::size_t R = std::size_t(S::rank);
  template <class... V> void run(T* out, const V&... in) const {
    const auto st = row_major_strides(out_dims);
    std::size_t at = 0;
    const auto place = [&](const expr::strided_view<T, R>& v) {
      const std::size_t n = product(v.dims);
      std::array<std::size_t, R> idx{};
      for (std::size_t e = 0; e < n; ++e) {
        auto o = idx;
        o[std::size_t(Axis)] += at;
        out[array_detail::offset_of(o, st)] = v.data[e];
        array_detail::next_index(idx, v.dims);
      }
      at += v.dims[std::size_t(Axis)];
    };
    (place(in), ...);
  }
};

/// out[o, j, i] = params[o, idx[j], i] around Axis; an index outside [0, n) is a value_error.
template <class T, class SP, class SI, class S, int Axis, class I> struct kernel<ops::gather_op<T, SP, SI, S, Axis, I>> : ops::gather_op<T, SP, SI, S, Axis, I> {
  using op = ops::gather_op<T, SP, SI, S, Axis, I>;
  void run(T* out, const expr::strided_view<T, std::size_t(SP::rank)>& p, const expr::strided_view<I, std::size_t(SI::rank)>& idx) const {
    const ops::gather_layout<Axis> at(p.dims, idx.dims);
    array_detail::check_indices(idx, at);
    for (std::size_t o = 0; o < at.outer; ++o)
      for (std::size_t j = 0; j < at.nidx; ++j)
        for (std::size_t i = 0; i < at.inner; ++i)
          out[(o * at.nidx + j) * at.inner + i] = p.data[(o * at.n + std::size_t(idx.data[j])) * at.inner + i];
  }
};

/// out[j, d] = on where idx[j] == d, else off (an index outside [0, depth) matches no d).
template <class T, class I, class SI, class S> struct kernel<ops::one_hot_op<T, I, SI, S>> : ops::one_hot_op<T, I, SI, S> {
  using op = ops::one_hot_op<T, I, SI, S>;
  using op::depth, op::on, op::off;
  void run(T* out, const expr::strided_view<I, std::size_t(SI::rank)>& idx) const {
    const std::size_t n = product(idx.dims);
    for (std::size_t j = 0; j < n; ++j) {
      const std::int64_t v = std::int64_t(idx.data[j]);
      for (std::size_t d = 0; d < depth; ++d) out[j * depth + d] = v >= 0 && std::uint64_t(v) == d ? on : off;
    }
  }
};

/// Each output element reads the input at its index less the leading padding (pad: the
/// constant where that is outside the input) or at its index modulo the input's extent (tile).
template <class T, class SIn, class S, bool Tile> struct kernel<ops::index_map_op<T, SIn, S, Tile>> : ops::index_map_op<T, SIn, S, Tile> {
  using op = ops::index_map_op<T, SIn, S, Tile>;
  using op::R, op::out_dims, op::before, op::constant;
  void run(T* out, const expr::strided_view<T, R>& in) const {
    const std::size_t n = product(out_dims);
    const auto st = row_major_strides(in.dims);
    std::array<std::size_t, R> idx{};
    for (std::size_t e = 0; e < n; ++e) {
      std::array<std::size_t, R> src{};
      bool inside = true;
      for (std::size_t k = 0; k < R; ++k) {
        if constexpr (Tile) src[k] = idx[k] % in.dims[k];
        else {
          inside = inside && idx[k] >= before[k] && idx[k] - before[k] < in.dims[k];
          src[k] = idx[k] - before[k];
        }
      }
      out[e] = inside ? in.data[array_detail::offset_of(src, st)] : constant;
      array_detail::next_index(idx, out_dims);
    }
  }
};

/// A view's adjoint: zeros of the operand's extents, and each element of g added to the
/// operand element the view reads there (several times where the view reads one element
/// several times: broadcasting).
template <class T, class SE, class S, class M> struct kernel<ops::view_adjoint_op<T, SE, S, M>> : ops::view_adjoint_op<T, SE, S, M> {
  using op = ops::view_adjoint_op<T, SE, S, M>;
  using op::RI, op::RO, op::out_dims, op::m;
  void run(T* out, const expr::strided_view<T, RO>& g) const {
    const std::size_t size = product(out_dims), n = product(g.dims);
    std::vector<array_detail::sum_t<T>> acc(size);
    if (n) {
      // The view of the operand's memory (here out's) gives each element of g its offset there.
      expr::strided_view<T, RO> at;
      m.map(expr::strided_view<T, RI>{out, out_dims, row_major_strides(out_dims)}, at);
      const std::ptrdiff_t base = at.data - out;
      std::array<std::size_t, RO> idx{};
      for (std::size_t e = 0; e < n; ++e) {
        acc[std::size_t(base + array_detail::offset_of(idx, at.strides))] += array_detail::sum_t<T>(g.data[e]);
        array_detail::next_index(idx, g.dims);
      }
    }
    for (std::size_t i = 0; i < size; ++i) out[i] = T(acc[i]);
  }
};

/// Pad's and tile's adjoint: each input element is the sum of the elements of g that read it.
template <class T, class SIn0, class S, bool Tile, class SIn> struct kernel<ops::index_map_adjoint_op<ops::index_map_op<T, SIn0, S, Tile>, SIn>>
    : ops::index_map_adjoint_op<ops::index_map_op<T, SIn0, S, Tile>, SIn> {
  using op = ops::index_map_adjoint_op<ops::index_map_op<T, SIn0, S, Tile>, SIn>;
  static constexpr std::size_t R = std::size_t(S::rank);
  using op::out_dims, op::forward;
  void run(T* out, const expr::strided_view<T, R>& g) const {
    const std::size_t size = product(out_dims), n = product(g.dims);
    const auto st = row_major_strides(out_dims);
    std::vector<array_detail::sum_t<T>> acc(size);
    std::array<std::size_t, R> idx{};
    for (std::size_t e = 0; e < n; ++e) {
      std::array<std::size_t, R> dst{};
      bool inside = true;
      for (std::size_t k = 0; k < R; ++k) {
        if constexpr (Tile) dst[k] = idx[k] % out_dims[k];
        else {
          inside = inside && idx[k] >= forward.before[k] && idx[k] - forward.before[k] < out_dims[k];
          dst[k] = idx[k] - forward.before[k];
        }
      }
      if (inside) acc[std::size_t(array_detail::offset_of(dst, st))] += array_detail::sum_t<T>(g.data[e]);
      array_detail::next_index(idx, g.dims);
    }
    for (std::size_t i = 0; i < size; ++i) out[i] = T(acc[i]);
  }
};

/// gather's adjoint: zeros of the params' extents, g[o, j, i] added at [o, idx[j], i].
template <class T, class SP, class SG, class SI, int Axis, class I> struct kernel<ops::gather_adjoint_op<T, SP, SG, SI, Axis, I>> : ops::gather_adjoint_op<T, SP, SG, SI, Axis, I> {
  using op = ops::gather_adjoint_op<T, SP, SG, SI, Axis, I>;
  using op::out_dims;
  void run(T* out, const expr::strided_view<T, std::size_t(SG::rank)>& g, const expr::strided_view<I, std::size_t(SI::rank)>& idx) const {
    const ops::gather_layout<Axis> at(out_dims, idx.dims);
    array_detail::check_indices(idx, at);
    std::vector<array_detail::sum_t<T>> acc(product(out_dims));
    for (std::size_t o = 0; o < at.outer; ++o)
      for (std::size_t j = 0; j < at.nidx; ++j)
        for (std::size_t i = 0; i < at.inner; ++i)
          acc[(o * at.n + std::size_t(idx.data[j])) * at.inner + i] += array_detail::sum_t<T>(g.data[(o * at.nidx + j) * at.inner + i]);
    for (std::size_t i = 0; i < acc.size(); ++i) out[i] = T(acc[i]);
  }
};

}  // namespace ctflow::backend::reference
