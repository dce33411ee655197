#pragma once
// CPU kernels of reductions, scans and their adjoints: reduce.hpp's packet sums in a fixed
// order, line walks for argmax / argmin / cumsum (lines split among threads).

#include <algorithm>
#include <array>
#include <cstdint>

#include <ctflow/backend/cpu/evaluator.hpp>
#include <ctflow/backend/cpu/reduce.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>
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

/// argmax / argmin: each line of the [outer, n, inner] input walked in order (the first index
/// among ties; a NaN wins), lines split among threads.
template <class T, class SIn, int Axis, class SOut, bool Max>
struct kernel<ops::along_axis_op<T, SIn, Axis, SOut, std::int64_t, ops::arg_fn<Max>>> : ops::along_axis_op<T, SIn, Axis, SOut, std::int64_t, ops::arg_fn<Max>> {
  void run(std::int64_t* out, const expr::strided_view<T, std::size_t(SIn::rank)>& in) const {
    using V = compute_t<T>;
    const std::size_t n = this->n, inner = this->inner;
    parallel_for(this->outer * inner, grain_for(n), 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t line = b; line < e; ++line) {
        const T* p = in.data + (line / inner) * n * inner + line % inner;
        std::size_t best = 0;
        V bv = V(p[0]);
        for (std::size_t j = 1; j < n; ++j) {
          const V v = V(p[j * inner]);
          if ((Max ? v > bv : v < bv) || (v != v && bv == bv)) {
            bv = v;
            best = j;
          }
        }
        out[line] = std::int64_t(best);
      }
    });
  }
};

/// cumsum: each line walked in order (from its end where reverse), its sum in the compute type,
/// lines split among threads.
template <class T, class SIn, int Axis> struct kernel<ops::along_axis_op<T, SIn, Axis, SIn, T, ops::cumsum_fn>> : ops::along_axis_op<T, SIn, Axis, SIn, T, ops::cumsum_fn> {
  void run(T* out, const expr::strided_view<T, std::size_t(SIn::rank)>& in) const {
    using V = compute_t<T>;
    const std::size_t n = this->n, inner = this->inner;
    const bool exclusive = this->f.exclusive, reverse = this->f.reverse;
    parallel_for(this->outer * inner, grain_for(n), 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t line = b; line < e; ++line) {
        const std::size_t start = (line / inner) * n * inner + line % inner;
        V acc(0);
        for (std::size_t s = 0; s < n; ++s) {
          const std::size_t j = start + (reverse ? n - 1 - s : s) * inner;
          const V v = V(in.data[j]);
          if (exclusive) {
            out[j] = T(acc);
            acc += v;
          } else {
            acc += v;
            out[j] = T(acc);
          }
        }
      }
    });
  }
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
  using op::R, op::out_dims, op::reduced;
  /// f(input index, output index) over the input in row-major order.
  template <class F> void walk(F&& f) const {
    const std::size_t n = product(out_dims);
    std::array<std::size_t, R> idx{};
    for (std::size_t e = 0; e < n; ++e) {
      std::size_t o = 0;
      for (std::size_t k = 0; k < R; ++k)
        if (!reduced[k]) o = o * out_dims[k] + idx[k];
      f(e, o);
      for (std::size_t k = R; k-- > 0;) {
        if (++idx[k] < out_dims[k]) break;
        idx[k] = 0;
      }
    }
  }
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
