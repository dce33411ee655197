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

#include <ctflow/ops/math.hpp>
#include <ctflow/ops/reduction.hpp>

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
  if (n == 0) ctflow::detail::raise<value_error>("ctflow::nn::compute_average_loss: global_batch_size must be positive");
  return reduce_sum(per_example_loss) * T(1.0 / double(n));
}

namespace detail {

inline constexpr const char* sparse_name = "ctflow::nn::sparse_softmax_cross_entropy_with_logits";

/// The error for a label outside [0, classes) (TensorFlow's message); the host devices check
/// every label before any work.
[[noreturn]] inline void label_out_of_range(long long label, std::size_t classes) {
  ctflow::detail::raise<value_error>(std::string(sparse_name) + ": Received a label value of " + std::to_string(label) +
                    " which is outside the valid range of [0, " + std::to_string(classes) + ").");
}

/// The per-example losses: log(sum(exp(x - max))) + max - x[label], one row per example. Under
/// value_and_grad it saves the softmax as well, as row_xent leaves it (the rows' exps, then a
/// scale per row), so that the gradient costs no second exp per element.
template <class T, class I, class SL, class SX> struct sparse_xent_op {
  using value_type = T;
  using shape_type = SL;
  using saved_type = T;
  static constexpr std::size_t RL = std::size_t(SL::rank), RX = std::size_t(SX::rank);
  dims_t<RL> out_dims{};
  std::size_t classes = 0;
  std::size_t saved_size() const { return product(out_dims) * (classes + 1); }
};

/// Its adjoint with respect to the logits where no saved rows exist (`grad`'s expressions):
/// g * (softmax(x) - one_hot(label)), row by row, in one pass and one exp per element from the
/// forward pass's losses y: softmax(x)_i = exp(x_i - lse) with lse = y + x[label], evaluated as
/// exp((x_i - x[label]) - y) so that no rounding of lse enters (the label's own term is exactly
/// exp(-y)).
template <class T, class I, class SL, class SX> struct sparse_xent_grad_op {
  using value_type = T;
  using shape_type = SX;
  static constexpr std::size_t RL = std::size_t(SL::rank), RX = std::size_t(SX::rank);
  dims_t<RX> out_dims{};
};

/// Its adjoint under value_and_grad, from what the forward pass saved (the softmax as p * scale
/// per row): out[r, :] = p[r, :] * (scale[r] g[r]), less g[r] at the label.
template <class T, class I, class SL, class SX> struct sparse_xent_saved_grad_op {
  using value_type = T;
  using shape_type = SX;
  static constexpr std::size_t RL = std::size_t(SL::rank), RX = std::size_t(SX::rank);
  dims_t<RX> out_dims{};
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
  CTFLOW_STATIC_CHECK(is_integer_v<I>, concat(fixed_string("ctflow::nn::sparse_softmax_cross_entropy_with_logits: labels must be integers, got "),
                                              ctflow::detail::fixed_string_of<dtype_name<I>>(), fixed_string("; convert them with ctflow::cast<std::int32_t>")));
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
    detail::sparse_xent_op<T, I, SL, SX> k;
    k.out_dims = dl;
    k.classes = dx[dx.size() - 1];
    return expr::make_computed(k, std::forward<L>(labels), std::forward<X>(logits));
  } else {
    return ctflow::detail::failed_check{};
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
