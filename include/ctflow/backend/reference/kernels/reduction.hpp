#pragma once
// Reference kernels of reductions, scans and their adjoints: each input element combined into
// its output element in row-major order, sums of floating dtypes in double, other reductions in
// the compute type through the op's own combine (so that NaN and integer overflow behave as the
// op defines).

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <ctflow/backend/reference/kernel.hpp>
#include <ctflow/core/dtype.hpp>
#include <ctflow/ops/reduction.hpp>

namespace ctflow::backend::reference {

namespace reduction_detail {

/// Steps the multi-index idx to the next one of extents d, in row-major order.
template <std::size_t R> void next_index(std::array<std::size_t, R>& idx, const dims_t<R>& d) {
  for (std::size_t k = R; k-- > 0;) {
    if (++idx[k] < d[k]) return;
    idx[k] = 0;
  }
}

/// The row-major index, among the kept axes, of the group input multi-index idx belongs to.
template <std::size_t R> std::size_t group_of(const std::array<std::size_t, R>& idx, const dims_t<R>& d, const bool* reduced) {
  std::size_t o = 0;
  for (std::size_t k = 0; k < R; ++k)
    if (!reduced[k]) o = o * d[k] + idx[k];
  return o;
}

/// Where Op<.> combines elements of T: double for sums of floating dtypes, else the compute type.
template <template <class> class Op, class T>
using acc_t = std::conditional_t<is_floating_v<T> && std::is_same_v<Op<float>, ops::sum_op<float>>, double, compute_t<T>>;

/// out[group] = Op over the elements of in (extents d) whose kept indices are the group's, the
/// mean when asked (that of integers truncates; an empty group's is the identity, as its sum).
/// Each group combines its elements in row-major order, one group after another, with no memory
/// but the accumulator.
template <template <class> class Op, class T, std::size_t R>
void reduce(T* out, const T* in, const dims_t<R>& d, const bool* reduced, bool mean) {
  using A = acc_t<Op, T>;
  std::size_t groups = 1, count = 1;
  for (std::size_t k = 0; k < R; ++k) (reduced[k] ? count : groups) *= d[k];
  const auto st = row_major_strides(d);
  // The kept axes' extents (the reduced ones 1), and the reduced ones' (the kept ones 1).
  dims_t<R> kept{}, within{};
  for (std::size_t k = 0; k < R; ++k) {
    kept[k] = reduced[k] ? 1 : d[k];
    within[k] = reduced[k] ? d[k] : 1;
  }
  std::array<std::size_t, R> g{};
  for (std::size_t o = 0; o < groups; ++o) {
    std::ptrdiff_t base = 0;
    for (std::size_t k = 0; k < R; ++k) base += std::ptrdiff_t(g[k]) * st[k];
    A a = Op<A>::identity();
    std::array<std::size_t, R> idx{};
    for (std::size_t e = 0; e < count; ++e) {
      std::ptrdiff_t at = base;
      for (std::size_t k = 0; k < R; ++k) at += std::ptrdiff_t(idx[k]) * st[k];
      a = Op<A>{}(A(a), A(in[at]));
      next_index(idx, within);
    }
    if (!mean || count == 0) out[o] = T(a);
    else if constexpr (is_floating_v<T>) out[o] = T(a / A(count));
    else out[o] = T(std::int64_t(a) / std::int64_t(count));
    next_index(g, kept);
  }
}

}  // namespace reduction_detail

/// reduce_sum / mean / prod / max / min / any / all over the axes the op names.
template <template <class> class Op, class T, class SIn, bool Keep, bool Mean, int... Axes> struct kernel<ops::reduce_op<Op, T, SIn, Keep, Mean, Axes...>> : ops::reduce_op<Op, T, SIn, Keep, Mean, Axes...> {
  using op = ops::reduce_op<Op, T, SIn, Keep, Mean, Axes...>;
  using typename op::axes;
  using op::RI;
  void run(T* out, const expr::strided_view<T, std::size_t(RI)>& in) const {
    reduction_detail::reduce<Op>(out, in.data, in.dims, axes::mask.data(), Mean);
  }
};

/// argmax / argmin: each line along the axis of the [outer, n, inner] input walked in order, the
/// first index among ties kept; a NaN wins over numbers (it is the result there too).
template <class T, class SIn, int Axis, class SOut, bool Max>
struct kernel<ops::along_axis_op<T, SIn, Axis, SOut, std::int64_t, ops::arg_fn<Max>>> : ops::along_axis_op<T, SIn, Axis, SOut, std::int64_t, ops::arg_fn<Max>> {
  void run(std::int64_t* out, const expr::strided_view<T, std::size_t(SIn::rank)>& in) const {
    using V = compute_t<T>;
    for (std::size_t o = 0; o < this->outer; ++o)
      for (std::size_t i = 0; i < this->inner; ++i) {
        const T* p = in.data + o * this->n * this->inner + i;
        std::size_t best = 0;
        V bv = V(p[0]);
        for (std::size_t j = 1; j < this->n; ++j) {
          const V v = V(p[j * this->inner]);
          if ((Max ? v > bv : v < bv) || (v != v && bv == bv)) {
            bv = v;
            best = j;
          }
        }
        out[o * this->inner + i] = std::int64_t(best);
      }
  }
};

/// cumsum: each line walked in order (from its end where reverse), its sum so far in the compute
/// type written at each element (before adding it where exclusive).
template <class T, class SIn, int Axis> struct kernel<ops::along_axis_op<T, SIn, Axis, SIn, T, ops::cumsum_fn>> : ops::along_axis_op<T, SIn, Axis, SIn, T, ops::cumsum_fn> {
  void run(T* out, const expr::strided_view<T, std::size_t(SIn::rank)>& in) const {
    using V = compute_t<T>;
    const std::size_t n = this->n, inner = this->inner;
    for (std::size_t o = 0; o < this->outer; ++o)
      for (std::size_t i = 0; i < inner; ++i) {
        V acc(0);
        for (std::size_t s = 0; s < n; ++s) {
          const std::size_t at = (o * n + (this->f.reverse ? n - 1 - s : s)) * inner + i;
          const V v = V(in.data[at]);
          if (this->f.exclusive) {
            out[at] = T(acc);
            acc += v;
          } else {
            acc += v;
            out[at] = T(acc);
          }
        }
      }
  }
};

/// g (a broadcast result's extents) summed down to the operand's: over the leading axes the
/// operand lacks and the axes where it has extent 1.
template <class T, class SG, class SO> struct kernel<ops::sum_to_op<T, SG, SO>> : ops::sum_to_op<T, SG, SO> {
  using op = ops::sum_to_op<T, SG, SO>;
  using op::RG, op::RO, op::out_dims;
  void run(T* out, const expr::strided_view<T, RG>& g) const {
    std::array<bool, RG> reduced{};
    for (std::size_t k = 0; k < RG; ++k) reduced[k] = k < RG - RO || out_dims[k - (RG - RO)] == 1;
    reduction_detail::reduce<ops::sum_op>(out, g.data, g.dims, reduced.data(), false);
  }
};

/// reduce_prod's adjoint: out[e] = g[group of e] times the product of the other elements of
/// e's group, from the products of the elements before and after e (no division).
template <class T, class SIn, std::size_t RO> struct kernel<ops::prod_adjoint_op<T, SIn, RO>> : ops::prod_adjoint_op<T, SIn, RO> {
  using op = ops::prod_adjoint_op<T, SIn, RO>;
  using op::R, op::out_dims, op::reduced;
  void run(T* out, const expr::strided_view<T, R>& x, const expr::strided_view<T, RO>& g) const {
    using V = compute_t<T>;
    std::size_t groups = 1;
    for (std::size_t k = 0; k < R; ++k)
      if (!reduced[k]) groups *= out_dims[k];
    // The elements of each group, in row-major order.
    std::vector<std::vector<std::size_t>> members(groups);
    const std::size_t n = product(out_dims);
    std::array<std::size_t, R> idx{};
    for (std::size_t e = 0; e < n; ++e) {
      members[reduction_detail::group_of(idx, out_dims, reduced.data())].push_back(e);
      reduction_detail::next_index(idx, out_dims);
    }
    for (std::size_t o = 0; o < groups; ++o) {
      const auto& m = members[o];
      std::vector<V> after(m.size() + 1, V(1));  // after[i]: the product of elements i.. of the group
      for (std::size_t i = m.size(); i-- > 0;) after[i] = after[i + 1] * V(x.data[m[i]]);
      V before(1);
      for (std::size_t i = 0; i < m.size(); ++i) {
        out[m[i]] = T(V(g.data[o]) * (before * after[i + 1]));
        before *= V(x.data[m[i]]);
      }
    }
  }
};

}  // namespace ctflow::backend::reference
