#pragma once
// Reference kernels of the sparse softmax cross-entropy and its two adjoints, row by row in
// double: loss = log(sum(exp(x - max))) + max - x[label], softmax = exp(x - max) / sum.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include <ctflow/backend/reference/kernel.hpp>
#include <ctflow/ops/nn/losses.hpp>

namespace ctflow::backend::reference {

namespace losses_detail {

/// Checks every label against [0, classes) before any work.
template <class I> void check_labels(const I* labels, std::size_t rows, std::size_t classes) {
  for (std::size_t r = 0; r < rows; ++r)
    if (labels[r] < 0 || std::size_t(labels[r]) >= classes) nn::detail::label_out_of_range(static_cast<long long>(labels[r]), classes);
}

/// The softmax of the n logits x into p (double), and log(sum(exp(x - max))) + max.
template <class T> double softmax_row(const T* x, std::size_t n, std::vector<double>& p) {
  double m = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, double(x[i]));
  double s = 0;
  p.resize(n);
  for (std::size_t i = 0; i < n; ++i) s += p[i] = std::exp(double(x[i]) - m);
  for (std::size_t i = 0; i < n; ++i) p[i] /= s;
  return std::log(s) + m;
}

}  // namespace losses_detail

/// Per-example losses log(sum(exp(x))) - x[label]; labels outside [0, classes) are a value_error.
template <class T, class I, class SL, class SX> struct kernel<nn::detail::sparse_xent_op<T, I, SL, SX>> : nn::detail::sparse_xent_op<T, I, SL, SX> {
  using op = nn::detail::sparse_xent_op<T, I, SL, SX>;
  using op::RL, op::RX, op::out_dims, op::classes;
  void run(T* out, const expr::strided_view<I, RL>& labels, const expr::strided_view<T, RX>& logits) const { run(out, nullptr, labels, logits); }
  /// With `saved`, the softmax as well: rows x classes values p, then a scale per row (1 here),
  /// softmax = p * scale.
  void run(T* out, T* saved, const expr::strided_view<I, RL>& labels, const expr::strided_view<T, RX>& logits) const {
    const std::size_t rows = product(out_dims), n = classes;
    losses_detail::check_labels(labels.data, rows, n);
    std::vector<double> p;
    for (std::size_t r = 0; r < rows; ++r) {
      const T* x = logits.data + r * n;
      const double lse = losses_detail::softmax_row(x, n, p);
      out[r] = T(lse - double(x[std::size_t(labels.data[r])]));
      if (saved) {
        for (std::size_t i = 0; i < n; ++i) saved[r * n + i] = T(p[i]);
        saved[rows * n + r] = T(1);
      }
    }
  }
};

/// The logits' adjoint from the logits: g * (softmax(x) - one_hot(label)) per row (the forward
/// losses, an operand, are not needed).
template <class T, class I, class SL, class SX> struct kernel<nn::detail::sparse_xent_grad_op<T, I, SL, SX>> : nn::detail::sparse_xent_grad_op<T, I, SL, SX> {
  using op = nn::detail::sparse_xent_grad_op<T, I, SL, SX>;
  using op::RL, op::RX, op::out_dims;
  void run(T* out, const expr::strided_view<I, RL>& labels, const expr::strided_view<T, RX>& logits, const expr::strided_view<T, RL>&,
           const expr::strided_view<T, RL>& g) const {
    const std::size_t n = out_dims[RX - 1], rows = n ? product(out_dims) / n : 0;
    losses_detail::check_labels(labels.data, rows, n);
    std::vector<double> p;
    for (std::size_t r = 0; r < rows; ++r) {
      losses_detail::softmax_row(logits.data + r * n, n, p);
      const std::size_t label = std::size_t(labels.data[r]);
      const double gr = double(g.data[r]);
      for (std::size_t i = 0; i < n; ++i) out[r * n + i] = T(gr * (p[i] - (i == label ? 1.0 : 0.0)));
    }
  }
};

/// The logits' adjoint from the saved softmax p * scale: g * (p * scale - one_hot(label)).
template <class T, class I, class SL, class SX> struct kernel<nn::detail::sparse_xent_saved_grad_op<T, I, SL, SX>> : nn::detail::sparse_xent_saved_grad_op<T, I, SL, SX> {
  using op = nn::detail::sparse_xent_saved_grad_op<T, I, SL, SX>;
  using op::RL, op::RX, op::out_dims;
  void run(T* out, const expr::strided_view<I, RL>& labels, const expr::strided_view<T, RX>& saved, const expr::strided_view<T, RL>& scale,
           const expr::strided_view<T, RL>& g) const {
    const std::size_t n = out_dims[RX - 1], rows = n ? product(out_dims) / n : 0;
    losses_detail::check_labels(labels.data, rows, n);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t label = std::size_t(labels.data[r]);
      const double gr = double(g.data[r]), s = double(scale.data[r]);
      for (std::size_t i = 0; i < n; ++i) out[r * n + i] = T(gr * (double(saved.data[r * n + i]) * s - (i == label ? 1.0 : 0.0)));
    }
  }
};

}  // namespace ctflow::backend::reference
