#pragma once
// Reference kernels of fused batch normalization (training) and its two adjoints, channels last
// (x is [rows, c]), in double: each channel's batch mean, then its biased variance from the
// centred values, xhat = (x - mean) / sqrt(variance + epsilon).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include <ctflow/backend/reference/kernel.hpp>
#include <ctflow/ops/nn/normalization.hpp>

namespace ctflow::backend::reference {

namespace normalization_detail {

/// Each channel's mean and 1 / sqrt(variance + epsilon) over the rows of x (and the variance,
/// when asked).
template <class T> void statistics(const T* x, const nn::detail::batch_norm_geometry& g, std::vector<double>& mean, std::vector<double>& inv_std,
                                   std::vector<double>* variance = nullptr) {
  const double n = double(std::max<std::size_t>(g.rows, 1));
  mean.assign(g.c, 0.0);
  inv_std.assign(g.c, 0.0);
  if (variance) variance->assign(g.c, 0.0);
  for (std::size_t k = 0; k < g.c; ++k) {
    double s = 0;
    for (std::size_t r = 0; r < g.rows; ++r) s += double(x[r * g.c + k]);
    mean[k] = s / n;
    double v = 0;
    for (std::size_t r = 0; r < g.rows; ++r) v += (double(x[r * g.c + k]) - mean[k]) * (double(x[r * g.c + k]) - mean[k]);
    inv_std[k] = 1.0 / std::sqrt(v / n + g.epsilon);
    if (variance) (*variance)[k] = v / n;
  }
}

}  // namespace normalization_detail

/// y = xhat * scale + offset.
template <class T, class SX> struct kernel<nn::detail::batch_norm_op<T, SX>> : nn::detail::batch_norm_op<T, SX> {
  using op = nn::detail::batch_norm_op<T, SX>;
  using op::g;
  void run(T* out, const expr::strided_view<T, std::size_t(SX::rank)>& x, const expr::strided_view<T, 1>& scale,
           const expr::strided_view<T, 1>& offset) const {
    std::vector<double> mean, inv, variance;
    normalization_detail::statistics(x.data, g, mean, inv, this->moving.mean ? &variance : nullptr);
    this->update_moving(mean, variance);
    for (std::size_t r = 0; r < g.rows; ++r)
      for (std::size_t k = 0; k < g.c; ++k)
        out[r * g.c + k] = T((double(x.data[r * g.c + k]) - mean[k]) * inv[k] * double(scale.data[k]) + double(offset.data[k]));
  }
};

/// FusedBatchNormGrad's dx: scale * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)), the means
/// per channel over the rows.
template <class T, class SX> struct kernel<nn::detail::batch_norm_input_grad_op<T, SX>> : nn::detail::batch_norm_input_grad_op<T, SX> {
  using op = nn::detail::batch_norm_input_grad_op<T, SX>;
  using op::g;
  void run(T* out, const expr::strided_view<T, std::size_t(SX::rank)>& x, const expr::strided_view<T, 1>& scale,
           const expr::strided_view<T, std::size_t(SX::rank)>& dy) const {
    std::vector<double> mean, inv;
    normalization_detail::statistics(x.data, g, mean, inv);
    const double n = double(std::max<std::size_t>(g.rows, 1));
    for (std::size_t k = 0; k < g.c; ++k) {
      double sdy = 0, sdyx = 0;
      for (std::size_t r = 0; r < g.rows; ++r) {
        const double xhat = (double(x.data[r * g.c + k]) - mean[k]) * inv[k];
        sdy += double(dy.data[r * g.c + k]);
        sdyx += double(dy.data[r * g.c + k]) * xhat;
      }
      for (std::size_t r = 0; r < g.rows; ++r) {
        const double xhat = (double(x.data[r * g.c + k]) - mean[k]) * inv[k];
        out[r * g.c + k] = T(double(scale.data[k]) * inv[k] * (double(dy.data[r * g.c + k]) - sdy / n - xhat * (sdyx / n)));
      }
    }
  }
};

/// FusedBatchNormGrad's dscale: sum(dy * xhat) per channel.
template <class T, class SX, class SC> struct kernel<nn::detail::batch_norm_scale_grad_op<T, SX, SC>> : nn::detail::batch_norm_scale_grad_op<T, SX, SC> {
  using op = nn::detail::batch_norm_scale_grad_op<T, SX, SC>;
  using op::g;
  void run(T* out, const expr::strided_view<T, std::size_t(SX::rank)>& x, const expr::strided_view<T, std::size_t(SX::rank)>& dy) const {
    std::vector<double> mean, inv;
    normalization_detail::statistics(x.data, g, mean, inv);
    for (std::size_t k = 0; k < g.c; ++k) {
      double s = 0;
      for (std::size_t r = 0; r < g.rows; ++r) s += double(dy.data[r * g.c + k]) * (double(x.data[r * g.c + k]) - mean[k]) * inv[k];
      out[k] = T(s);
    }
  }
};

}  // namespace ctflow::backend::reference
