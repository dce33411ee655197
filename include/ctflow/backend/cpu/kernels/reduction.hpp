#pragma once
// CPU kernels of reductions, scans and their adjoints: reduce.hpp's packet sums in a fixed
// order, line walks for argmax / argmin / cumsum.

#include <algorithm>
#include <array>

#include <ctflow/backend/cpu/evaluator.hpp>
#include <ctflow/backend/cpu/reduce.hpp>
#include <ctflow/ops/reduction.hpp>

namespace ctflow::backend::cpu {

/// Reduces contiguous `in` of extents `dims` over the axes marked in `reduced` into out (the
/// mean when asked); 16-bit floats accumulate in float.
template <template <class> class Op, class T>
void reduce_into(T* out, const T* in, const std::size_t* dims, int rank, const bool* reduced, bool mean) {
  using V = compute_t<T>;
  std::size_t count = 1, n_out = 1, n_in = 1;
  for (std::size_t i = 0; i < std::size_t(rank); ++i) {
    n_in *= dims[i];
    if (reduced[i]) count *= dims[i];
    else n_out *= dims[i];
  }
  // The mean of integers truncates (TensorFlow's rule); the count may not fit their type.
  const auto divide = [count](V sum) {
    if constexpr (std::is_integral_v<V>) return V(std::int64_t(sum) / std::int64_t(count));
    else return V(sum / V(count));
  };
  if constexpr (std::is_same_v<V, T>) {
    reduce::run(Op<V>{}, in, dims, reduced, rank, out);
    if (mean && count) for (std::size_t i = 0; i < n_out; ++i) out[i] = T(divide(out[i]));
  } else {
    ctflow::detail::buffer<V> wide(n_in, false), acc(n_out, false);
    std::copy_n(in, n_in, wide.data());
    reduce::run(Op<V>{}, wide.data(), dims, reduced, rank, acc.data());
    for (std::size_t i = 0; i < n_out; ++i) out[i] = T(mean && count ? divide(acc.data()[i]) : acc.data()[i]);
  }
}

// The float32 and float64 instances of reduce_into are compiled once per program,
// by <ctflow/compiled/core.hpp>, where it is built with CTFLOW_SEPARATE_COMPILATION; its other
// translation units only call them.
#define CTFLOW_REDUCE_INSTANCES(KIND, T)                                                                      \
  KIND void reduce_into<ops::sum_op, T>(T*, const T*, const std::size_t*, int, const bool*, bool);           \
  KIND void reduce_into<ops::prod_op, T>(T*, const T*, const std::size_t*, int, const bool*, bool);          \
  KIND void reduce_into<ops::max_op, T>(T*, const T*, const std::size_t*, int, const bool*, bool);           \
  KIND void reduce_into<ops::min_op, T>(T*, const T*, const std::size_t*, int, const bool*, bool);
#if defined(CTFLOW_SEPARATE_COMPILATION)
CTFLOW_REDUCE_INSTANCES(extern template, float)
CTFLOW_REDUCE_INSTANCES(extern template, double)
#endif

template <template <class> class Op, class T, class SIn, bool Keep, bool Mean, int... Axes> struct kernel<ops::reduce_op<Op, T, SIn, Keep, Mean, Axes...>> : ops::reduce_op<Op, T, SIn, Keep, Mean, Axes...> {
  using op = ops::reduce_op<Op, T, SIn, Keep, Mean, Axes...>;
  using typename op::axes;
  using op::RI;
  void run(T* out, const expr::strided_view<T, std::size_t(RI)>& in) const {
    reduce_into<Op>(out, in.data, in.dims.data(), RI, axes::mask.data(), Mean);
  }
};

template <class T, class SIn, int Axis, class SOut, class OutT, class F> struct kernel<ops::along_axis_op<T, SIn, Axis, SOut, OutT, F>> : ops::along_axis_op<T, SIn, Axis, SOut, OutT, F> {
  using op = ops::along_axis_op<T, SIn, Axis, SOut, OutT, F>;
  void run(OutT* out, const expr::strided_view<T, std::size_t(SIn::rank)>& in) const { this->each_line(in.data, out); }
};

template <class T, class SG, class SO> struct kernel<ops::sum_to_op<T, SG, SO>> : ops::sum_to_op<T, SG, SO> {
  using op = ops::sum_to_op<T, SG, SO>;
  using op::RG, op::RO, op::out_dims;
  void run(T* out, const expr::strided_view<T, RG>& g) const {
    std::array<bool, RG> reduced{};
    bool any = false;
    for (std::size_t k = 0; k < RG; ++k) {
      reduced[k] = k < RG - RO || (out_dims[k - (RG - RO)] == 1 && g.dims[k] != 1);
      any = any || (reduced[k] && g.dims[k] != 1);
    }
    if (!any) { std::copy_n(g.data, product(out_dims), out); return; }
    reduce_into<ops::sum_op>(out, g.data, g.dims.data(), int(RG), reduced.data(), false);
  }
};

template <class T, class SIn, std::size_t RO> struct kernel<ops::prod_adjoint_op<T, SIn, RO>> : ops::prod_adjoint_op<T, SIn, RO> {
  using op = ops::prod_adjoint_op<T, SIn, RO>;
  using op::R, op::out_dims, op::reduced, op::walk;
  void run(T* out, const expr::strided_view<T, R>& x, const expr::strided_view<T, RO>& g) const {
    using V = compute_t<T>;
    std::size_t n_out = 1;
    for (std::size_t k = 0; k < R; ++k) if (!reduced[k]) n_out *= out_dims[k];
    ctflow::detail::buffer<V> nonzero(n_out, false);
    ctflow::detail::buffer<std::size_t> zeros(n_out);
    std::fill_n(nonzero.data(), n_out, V(1));
    walk([&](std::size_t e, std::size_t o) {
      const V v = V(x.data[e]);
      if (v == V(0)) ++zeros.data()[o];
      else nonzero.data()[o] *= v;
    });
    walk([&](std::size_t e, std::size_t o) {
      const V v = V(x.data[e]), z = V(zeros.data()[o]), gv = V(g.data[o]);
      out[e] = T(z == V(0) ? gv * (nonzero.data()[o] / v) : z == V(1) && v == V(0) ? gv * nonzero.data()[o] : V(0));
    });
  }
};

}  // namespace ctflow::backend::cpu
