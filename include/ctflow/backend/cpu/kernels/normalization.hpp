#pragma once
// CPU kernels of fused batch normalization (training) and its two adjoints: per-channel sums in
// double over a fixed number of row chunks added in order, rows split among threads.

#include <algorithm>
#include <cmath>
#include <vector>

#include <ctflow/backend/cpu/evaluator.hpp>
#include <ctflow/backend/cpu/reduce.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>
#include <ctflow/ops/nn/normalization.hpp>

namespace ctflow::backend::cpu {

/// K per-channel sums over the rows of an [rows, c] array: f(r0, r1, acc) adds rows [r0, r1)
/// into acc[K * c] (double). The rows are cut into a number of chunks fixed by the shape, the
/// chunks run on the threads, and their sums are added in chunk order: the result does not
/// depend on the thread count.
template <std::size_t K, class F> std::vector<double> channel_sums(std::size_t rows, std::size_t c, F&& f) {
  const std::size_t chunks = std::clamp<std::size_t>(rows / 512, 1, 16);
  std::vector<double> sums(K * c);
  reduce::sum_in_chunk_order(chunks, K * c, sums.data(), [&](std::size_t i, double* acc) {
    std::fill_n(acc, K * c, 0.0);
    f(rows * i / chunks, rows * (i + 1) / chunks, acc);
  });
  return sums;
}

/// The batch mean and 1 / sqrt(variance + epsilon) of each channel (the last axis), the variance
/// biased, as in normalization (and the variance itself, when asked). The sums are of x - x[0]
/// (shifted data: no cancellation when the mean is large against the spread).
template <class T> void batch_statistics(const T* x, std::size_t rows, std::size_t c, double epsilon, std::vector<double>& mean,
                                         std::vector<double>& inv_std, std::vector<double>* variance = nullptr) {
  const auto sums = channel_sums<2>(rows, c, [&](std::size_t r0, std::size_t r1, double* acc) {
    for (std::size_t r = r0; r < r1; ++r)
      for (std::size_t k = 0; k < c; ++k) {
        const double d = double(x[r * c + k]) - double(x[k]);
        acc[k] += d;
        acc[c + k] += d * d;
      }
  });
  mean.resize(c);
  inv_std.resize(c);
  if (variance) variance->resize(c);
  const double n = double(std::max<std::size_t>(rows, 1));
  for (std::size_t k = 0; k < c; ++k) {
    const double m = sums[k] / n, v = std::max(sums[c + k] / n - m * m, 0.0);
    mean[k] = (rows ? double(x[k]) : 0.0) + m;
    inv_std[k] = 1.0 / std::sqrt(v + epsilon);
    if (variance) (*variance)[k] = v;
  }
}

/// The batch statistics (into mean and inv_std, as batch_statistics), then sum(dy) and
/// sum(dy * xhat) per channel, xhat = (x - mean) * inv_std: what both backward kernels need.
template <class T> std::vector<double> batch_norm_grad_sums(const T* x, const T* dy, const nn::detail::batch_norm_geometry& g, std::vector<double>& mean,
                                                           std::vector<double>& inv) {
  batch_statistics(x, g.rows, g.c, g.epsilon, mean, inv);
  return channel_sums<2>(g.rows, g.c, [&](std::size_t r0, std::size_t r1, double* acc) {
    for (std::size_t r = r0; r < r1; ++r)
      for (std::size_t k = 0; k < g.c; ++k) {
        const double d = double(dy[r * g.c + k]);
        acc[k] += d;
        acc[g.c + k] += d * (double(x[r * g.c + k]) - mean[k]) * inv[k];
      }
  });
}

template <class T, class SX> struct kernel<nn::detail::batch_norm_op<T, SX>> : nn::detail::batch_norm_op<T, SX> {
  using op = nn::detail::batch_norm_op<T, SX>;
  using op::g;
  void run(T* out, const expr::strided_view<T, std::size_t(SX::rank)>& x, const expr::strided_view<T, 1>& scale,
           const expr::strided_view<T, 1>& offset) const {
    std::vector<double> mean, inv, variance;
    batch_statistics(x.data, g.rows, g.c, g.epsilon, mean, inv, this->moving.mean ? &variance : nullptr);
    this->update_moving(mean, variance);
    std::vector<T> a(g.c), b(g.c);  // y = x a + b
    for (std::size_t k = 0; k < g.c; ++k) {
      a[k] = T(inv[k] * double(scale.data[k]));
      b[k] = T(double(offset.data[k]) - mean[k] * inv[k] * double(scale.data[k]));
    }
    parallel_for(g.rows, grain_for(g.c), 1, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r)
        for (std::size_t k = 0; k < g.c; ++k) out[r * g.c + k] = x.data[r * g.c + k] * a[k] + b[k];
    });
  }
};

template <class T, class SX> struct kernel<nn::detail::batch_norm_input_grad_op<T, SX>> : nn::detail::batch_norm_input_grad_op<T, SX> {
  using op = nn::detail::batch_norm_input_grad_op<T, SX>;
  using op::g;
  void run(T* out, const expr::strided_view<T, std::size_t(SX::rank)>& x, const expr::strided_view<T, 1>& scale,
           const expr::strided_view<T, std::size_t(SX::rank)>& dy) const {
    std::vector<double> mean, inv;
    const auto sums = batch_norm_grad_sums(x.data, dy.data, g, mean, inv);
    const double n = double(std::max<std::size_t>(g.rows, 1));
    // dx = dy a + x b + c, per channel.
    std::vector<T> a(g.c), b(g.c), c(g.c);
    for (std::size_t k = 0; k < g.c; ++k) {
      const double s = double(scale.data[k]) * inv[k], mdy = sums[k] / n, mdyx = sums[g.c + k] / n;
      a[k] = T(s);
      b[k] = T(-s * mdyx * inv[k]);
      c[k] = T(-s * (mdy - mdyx * inv[k] * mean[k]));
    }
    parallel_for(g.rows, grain_for(g.c), 1, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r)
        for (std::size_t k = 0; k < g.c; ++k) out[r * g.c + k] = dy.data[r * g.c + k] * a[k] + x.data[r * g.c + k] * b[k] + c[k];
    });
  }
};

template <class T, class SX, class SC> struct kernel<nn::detail::batch_norm_scale_grad_op<T, SX, SC>> : nn::detail::batch_norm_scale_grad_op<T, SX, SC> {
  using op = nn::detail::batch_norm_scale_grad_op<T, SX, SC>;
  using op::g;
  void run(T* out, const expr::strided_view<T, std::size_t(SX::rank)>& x, const expr::strided_view<T, std::size_t(SX::rank)>& dy) const {
    std::vector<double> mean, inv;
    const auto sums = batch_norm_grad_sums(x.data, dy.data, g, mean, inv);
    for (std::size_t k = 0; k < g.c; ++k) out[k] = T(sums[g.c + k]);
  }
};

}  // namespace ctflow::backend::cpu
