#pragma once
/// @brief tf.nn's softmax family and losses: `nn::softmax`, `nn::log_softmax` (stable: the
/// maximum is subtracted first), `nn::sparse_softmax_cross_entropy_with_logits` (one fused row
/// kernel forward, one backward), `nn::softmax_cross_entropy_with_logits`,
/// `nn::sigmoid_cross_entropy_with_logits`, `nn::l2_loss`, `nn::compute_average_loss`, and Keras's
/// cross-entropies on probabilities (`nn::categorical_crossentropy`,
/// `nn::sparse_categorical_crossentropy`, `nn::binary_crossentropy`).
///
///     auto per_example = nn::sparse_softmax_cross_entropy_with_logits(labels, logits);  // [batch]
///     auto loss = nn::compute_average_loss(per_example);                              // scalar
///     auto [value, dw] = value_and_grad(loss, w);

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "../../backend/cpu/simd.hpp"
#include "../../backend/cpu/thread_pool.hpp"
#include "../math.hpp"
#include "../reduction.hpp"

namespace ctflow::nn {

/// @brief tf.nn.softmax along Axis (default the last): exp(x - max) / sum(exp(x - max)).
template <int Axis = -1, Expression X> auto softmax(const X& logits) {
  static_assert(is_floating_v<value_t<X>>, "ctflow::nn::softmax: logits must be floating");
  auto e = exp(logits - stop_gradient(reduce_max<Axis>(logits, keepdims)));
  return e / reduce_sum<Axis>(e, keepdims);
}

/// @brief tf.nn.log_softmax along Axis: (x - max) - log(sum(exp(x - max))), stable for any logits.
template <int Axis = -1, Expression X> auto log_softmax(const X& logits) {
  static_assert(is_floating_v<value_t<X>>, "ctflow::nn::log_softmax: logits must be floating");
  auto shifted = logits - stop_gradient(reduce_max<Axis>(logits, keepdims));
  return shifted - log(reduce_sum<Axis>(exp(shifted), keepdims));
}

/// @brief tf.nn.softmax_cross_entropy_with_logits: -sum(labels * log_softmax(logits)) over the
/// last axis, per example; differentiable in both labels and logits, as in TensorFlow.
template <Expression L, Expression X> auto softmax_cross_entropy_with_logits(const L& labels, const X& logits) {
  return -reduce_sum<-1>(labels * log_softmax(logits));
}

/// @brief tf.nn.sigmoid_cross_entropy_with_logits, element-wise, in TensorFlow's stable form
/// max(x, 0) - x z + log(1 + exp(-|x|)) (its gradient at x = 0 is sigmoid(0) - z, as TF's).
template <Expression L, Expression X> auto sigmoid_cross_entropy_with_logits(const L& labels, const X& logits) {
  static_assert(is_floating_v<value_t<X>>, "ctflow::nn::sigmoid_cross_entropy_with_logits: logits must be floating");
  using T = value_t<X>;
  auto positive = logits >= T(0);
  return where(positive, logits, T(0)) - logits * labels + log1p(exp(where(positive, -logits, logits)));
}

/// @brief tf.nn.l2_loss: sum(t * t) / 2, a scalar.
template <Expression X> auto l2_loss(const X& t) { return reduce_sum(square(t)) * value_t<X>(0.5); }

/// @brief tf.nn.compute_average_loss: the sum of the per-example losses over the global batch
/// size (default: the first extent, the batch of one replica).
template <Expression X> auto compute_average_loss(const X& per_example_loss, std::optional<std::size_t> global_batch_size = std::nullopt) {
  using T = value_t<X>;
  const std::size_t n = global_batch_size ? *global_batch_size : (rank_v<X> > 0 ? per_example_loss.dims()[0] : 1);
  if (n == 0) throw value_error("ctflow::nn::compute_average_loss: global_batch_size must be positive");
  return reduce_sum(per_example_loss) * T(1.0 / double(n));
}

namespace detail {

inline constexpr const char* sparse_name = "ctflow::nn::sparse_softmax_cross_entropy_with_logits";

/// sum(exp(x - shift)) of n values; with Keep, e[i] = exp(x[i] - shift) as well (vector types).
template <bool Keep, class T> compute_t<T> row_exp_sum(const T* x, std::size_t n, compute_t<T> shift, std::type_identity_t<T>* e) {
  using V = compute_t<T>;
  namespace cpu = backend::cpu;
  if constexpr (cpu::simd_type_v<T>) {
    constexpr std::size_t W = cpu::lanes<T>;
    const auto bm = cpu::batch<T>(shift);
    auto bs = cpu::batch<T>(T(0));
    std::size_t i = 0;
    for (; i + W <= n; i += W) {
      const auto v = cpu::exp(cpu::batch<T>::load_unaligned(x + i) - bm);
      if constexpr (Keep) v.store_unaligned(e + i);
      bs += v;
    }
    // The tail in one vector: its missing lanes are -inf, whose exp is 0.
    if (i < n) {
      const auto v = cpu::exp(cpu::load_partial(x + i, n - i, -std::numeric_limits<T>::infinity()) - bm);
      if constexpr (Keep) cpu::store_partial(e + i, v, n - i);
      bs += v;
    }
    return xsimd::hadd(bs);
  } else {
    static_assert(!Keep);
    V s = 0;
    for (std::size_t i = 0; i < n; ++i) s += std::exp(V(x[i]) - shift);
    return s;
  }
}

/// log(sum(exp(x))) - x[label] of n values. One pass where exp(x - x[label]) sums without
/// overflow (the label's own term is 1, so the sum is at least 1; the loss is its log, with no
/// cancellation); otherwise (a logit above the label's by about 88 or more) shifted by the row's
/// maximum, the reductions' vectorised row where the dtype allows. Given p, it also leaves
/// softmax(x) = p * scale: for vector types p holds the pass's exps and scale is 1 / their sum
/// (no second pass over the row), for the others p is the softmax itself, from a second pass in
/// the compute type, and scale is 1.
template <class T> compute_t<T> row_xent(const T* x, std::size_t n, std::size_t label, T* p = nullptr, T* scale = nullptr) {
  using V = compute_t<T>;
  namespace cpu = backend::cpu;
  constexpr bool keep = cpu::simd_type_v<T>;
  auto exp_sum = [&](V shift) { return keep && p ? row_exp_sum<keep>(x, n, shift, p) : row_exp_sum<false>(x, n, shift, nullptr); };
  const V at = V(x[label]);
  V shift = at, s = exp_sum(at), loss;
  if (s < std::numeric_limits<V>::infinity()) {
    loss = std::log(s);
  } else {
    if constexpr (cpu::simd_type_v<T>) shift = cpu::reduce::row(ops::max_op<T>{}, x, n);
    else {
      shift = -std::numeric_limits<V>::infinity();
      for (std::size_t i = 0; i < n; ++i) shift = std::max(shift, V(x[i]));
    }
    s = exp_sum(shift);
    loss = shift + std::log(s) - at;
  }
  if (p) {
    const V inv = V(1) / s;
    if constexpr (keep) {
      *scale = T(inv);
    } else {
      for (std::size_t i = 0; i < n; ++i) p[i] = T(std::exp(V(x[i]) - shift) * inv);
      *scale = T(1);
    }
  }
  return loss;
}

/// f(r) for each of `rows` rows of n classes, the threads taking blocks of about 32K elements.
template <class F> void each_row(std::size_t rows, std::size_t n, F&& f) {
  backend::cpu::parallel_for(rows, std::max<std::size_t>(1, 32768 / std::max<std::size_t>(n, 1)), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t r = b; r < e; ++r) f(r);
  });
}

/// Checks every label against [0, classes) before any work (the message is TensorFlow's).
template <class I> void check_labels(const I* labels, std::size_t rows, std::size_t classes) {
  for (std::size_t r = 0; r < rows; ++r)
    if (labels[r] < 0 || std::size_t(labels[r]) >= classes)
      throw value_error(std::string(sparse_name) + ": Received a label value of " + std::to_string(static_cast<long long>(labels[r])) +
                        " which is outside the valid range of [0, " + std::to_string(classes) + ").");
}

/// The per-example losses: log(sum(exp(x - max))) + max - x[label], one row per example. Under
/// value_and_grad it saves the softmax as well, as row_xent leaves it (the rows' exps, then a
/// scale per row), so that the gradient costs no second exp per element.
template <class T, class I, class SL, class SX> struct sparse_xent_kernel {
  using value_type = T;
  using shape_type = SL;
  using saved_type = T;
  static constexpr std::size_t RL = std::size_t(SL::rank), RX = std::size_t(SX::rank);
  dims_t<RL> out_dims{};
  std::size_t classes = 0;
  std::size_t saved_size() const { return product(out_dims) * (classes + 1); }
  void run(T* out, const expr::strided_view<I, RL>& labels, const expr::strided_view<T, RX>& logits) const { run(out, nullptr, labels, logits); }
  void run(T* out, T* saved, const expr::strided_view<I, RL>& labels, const expr::strided_view<T, RX>& logits) const {
    const std::size_t rows = product(out_dims), n = classes;
    check_labels(labels.data, rows, n);
    each_row(rows, n, [&](std::size_t r) {
      out[r] = T(row_xent(logits.data + r * n, n, std::size_t(labels.data[r]), saved ? saved + r * n : nullptr, saved ? saved + rows * n + r : nullptr));
    });
  }
};

/// Its adjoint with respect to the logits where no saved rows exist (`grad`'s expressions):
/// g * (softmax(x) - one_hot(label)), row by row, in one pass and one exp per element from the
/// forward pass's losses y: softmax(x)_i = exp(x_i - lse) with lse = y + x[label], evaluated as
/// exp((x_i - x[label]) - y) so that no rounding of lse enters (the label's own term is exactly
/// exp(-y)).
template <class T, class I, class SL, class SX> struct sparse_xent_grad_kernel {
  using value_type = T;
  using shape_type = SX;
  static constexpr std::size_t RL = std::size_t(SL::rank), RX = std::size_t(SX::rank);
  dims_t<RX> out_dims{};
  void run(T* out, const expr::strided_view<I, RL>& labels, const expr::strided_view<T, RX>& logits, const expr::strided_view<T, RL>& loss,
           const expr::strided_view<T, RL>& g) const {
    using V = compute_t<T>;
    namespace cpu = backend::cpu;
    const std::size_t n = out_dims[RX - 1], rows = n ? product(out_dims) / n : 0;
    check_labels(labels.data, rows, n);
    each_row(rows, n, [&, n](std::size_t r) {
      const T* x = logits.data + r * n;
      T* o = out + r * n;
      const std::size_t label = std::size_t(labels.data[r]);
      const V at = V(x[label]), y = V(loss.data[r]), gr = V(g.data[r]);
      if constexpr (cpu::simd_type_v<T>) {
        constexpr std::size_t W = cpu::lanes<T>;
        using B = cpu::batch<T>;
        const B bat(at), by(y), bg(gr);
        std::size_t i = 0;
        for (; i + W <= n; i += W) (cpu::exp((B::load_unaligned(x + i) - bat) - by) * bg).store_unaligned(o + i);
        if (i < n) cpu::store_partial(o + i, cpu::exp((cpu::load_partial(x + i, n - i) - bat) - by) * bg, n - i);
      } else {
        for (std::size_t i = 0; i < n; ++i) o[i] = T(std::exp((V(x[i]) - at) - y) * gr);
      }
      o[label] = T(V(o[label]) - gr);
    });
  }
};

/// Its adjoint under value_and_grad, from what the forward pass saved (the softmax as p * scale
/// per row): out[r, :] = p[r, :] * (scale[r] g[r]), less g[r] at the label.
template <class T, class I, class SL, class SX> struct sparse_xent_saved_grad_kernel {
  using value_type = T;
  using shape_type = SX;
  static constexpr std::size_t RL = std::size_t(SL::rank), RX = std::size_t(SX::rank);
  dims_t<RX> out_dims{};
  void run(T* out, const expr::strided_view<I, RL>& labels, const expr::strided_view<T, RX>& saved, const expr::strided_view<T, RL>& scale,
           const expr::strided_view<T, RL>& g) const {
    using V = compute_t<T>;
    namespace cpu = backend::cpu;
    const std::size_t n = out_dims[RX - 1], rows = n ? product(out_dims) / n : 0;
    each_row(rows, n, [&, n](std::size_t r) {
      const T* p = saved.data + r * n;
      T* o = out + r * n;
      const std::size_t cols = n, label = std::size_t(labels.data[r]);  // locals: the stores below may alias the captures
      const V gr = V(g.data[r]), f = V(scale.data[r]) * gr;
      std::size_t i = 0;
      if constexpr (cpu::simd_type_v<T>) {
        constexpr std::size_t W = cpu::lanes<T>;
        const cpu::batch<T> bf(f);
        for (; i + W <= cols; i += W) (cpu::batch<T>::load_unaligned(p + i) * bf).store_unaligned(o + i);
      }
      for (; i < cols; ++i) o[i] = T(V(p[i]) * f);
      o[label] = T(V(p[label]) * f - gr);
    });
  }
};

template <class SL, class SX> constexpr bool label_shape_ok() {
  if constexpr (SL::rank + 1 != SX::rank) return false;
  else {
    for (int i = 0; i < SL::rank; ++i) {
      const auto a = SL::extents[std::size_t(i)], b = SX::extents[std::size_t(i)];
      if (a != b && a != dyn && b != dyn) return false;
    }
    return true;
  }
}

}  // namespace detail

/// @brief tf.nn.sparse_softmax_cross_entropy_with_logits: per-example losses (labels' shape) of
/// integer labels in [0, classes) against logits [..., classes]. A label outside the range is a
/// value_error. Differentiable in the logits (first order, as in TensorFlow).
template <Expression L, Expression X> auto sparse_softmax_cross_entropy_with_logits(L&& labels, X&& logits) {
  using T = value_t<X>;
  using I = value_t<L>;
  using SL = shape_t<L>;
  using SX = shape_t<X>;
  using ctflow::detail::concat;
  using ctflow::detail::fixed_string;
  CTFLOW_STATIC_CHECK(is_floating_v<T>, fixed_string("ctflow::nn::sparse_softmax_cross_entropy_with_logits: logits must be floating"));
  CTFLOW_STATIC_CHECK(is_integer_v<I>, fixed_string("ctflow::nn::sparse_softmax_cross_entropy_with_logits: labels must be integers"));
  constexpr bool shapes_ok = detail::label_shape_ok<SL, SX>();
  CTFLOW_STATIC_CHECK(shapes_ok, concat(fixed_string("ctflow::nn::sparse_softmax_cross_entropy_with_logits: labels must have the shape of "
                                                     "logits without its last axis: "),
                                        shape_string_v<SL>, fixed_string(" x "), shape_string_v<SX>));
  if constexpr (shapes_ok && is_floating_v<T> && is_integer_v<I>) {
    const auto dl = labels.dims();
    const auto dx = logits.dims();
    for (std::size_t i = 0; i < dl.size(); ++i)
      if (dl[i] != dx[i])
        throw_shape_error(detail::sparse_name, "labels must have the shape of logits without its last axis", dl, dx);
    detail::sparse_xent_kernel<T, I, SL, SX> k;
    k.out_dims = dl;
    k.classes = dx[dx.size() - 1];
    return expr::make_computed(k, std::forward<L>(labels), std::forward<X>(logits));
  }
}

/// @brief Keras's cross-entropies on probabilities (from_logits=False), as its backend computes
/// them: the predictions are clipped to [1e-7, 1 - 1e-7] first, so a zero probability gives a
/// large finite loss. Per example, over the last axis.
///
/// categorical_crossentropy(y_true one-hot, y_pred): y_pred is first scaled to sum to one.
template <Expression L, Expression P> auto categorical_crossentropy(const L& y_true, const P& y_pred) {
  using T = value_t<P>;
  static_assert(is_floating_v<T>, "ctflow::nn::categorical_crossentropy: predictions must be floating");
  constexpr T eps = T(1e-7);
  auto p = clip_by_value(y_pred / reduce_sum<-1>(y_pred, keepdims), eps, T(1) - eps);
  return -reduce_sum<-1>(y_true * log(p));
}

/// @brief Keras's sparse_categorical_crossentropy(labels, y_pred): the sparse softmax
/// cross-entropy of log(clip(y_pred)), as Keras's backend computes it.
template <Expression L, Expression P> auto sparse_categorical_crossentropy(L&& labels, const P& y_pred) {
  using T = value_t<P>;
  static_assert(is_floating_v<T>, "ctflow::nn::sparse_categorical_crossentropy: predictions must be floating");
  constexpr T eps = T(1e-7);
  return sparse_softmax_cross_entropy_with_logits(std::forward<L>(labels), log(clip_by_value(y_pred, eps, T(1) - eps)));
}

/// @brief Keras's binary_crossentropy(y_true, y_pred): the mean over the last axis of
/// -(y log(p + 1e-7) + (1 - y) log(1 - p + 1e-7)), p = clip(y_pred, 1e-7, 1 - 1e-7).
template <Expression L, Expression P> auto binary_crossentropy(const L& y_true, const P& y_pred) {
  using T = value_t<P>;
  static_assert(is_floating_v<T>, "ctflow::nn::binary_crossentropy: predictions must be floating");
  constexpr T eps = T(1e-7);
  auto p = clip_by_value(y_pred, eps, T(1) - eps);
  return -reduce_mean<-1>(y_true * log(p + eps) + (T(1) - y_true) * log(T(1) - p + eps));
}

}  // namespace ctflow::nn
