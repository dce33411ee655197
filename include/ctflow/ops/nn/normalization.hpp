#pragma once
/// @brief tf.nn.moments, tf.nn.batch_normalization, layer normalization and tf.nn.dropout, as
/// compositions of fused ops (their gradients follow from the ops' rules), and
/// tf.nn.fused_batch_norm in training: one kernel forward (batch statistics and the normalized
/// result) and one per operand backward.
///
///     auto [mean, variance] = nn::moments<0, 1, 2>(x);                      // per channel
///     auto y = nn::batch_normalization(x, mean, variance, beta, gamma, 1e-3);  // inference
///     auto [t, batch_mean, batch_var] = nn::fused_batch_norm(x, gamma, beta);  // training
///     auto z = nn::layer_normalization(x, gamma, beta);                     // over the last axis
///     auto d = nn::dropout(x, 0.5, seed);                                   // kept * 1 / (1 - rate)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include <ctflow/expr/computed.hpp>
#include <ctflow/ops/array.hpp>
#include <ctflow/ops/nn/layout.hpp>

#include <ctflow/ops/math.hpp>
#include <ctflow/ops/random.hpp>
#include <ctflow/ops/reduction.hpp>

namespace ctflow::nn {

/// @brief tf.nn.moments(x, axes, keepdims=True): the mean and the (biased) variance over Axes,
/// kept as extents of 1 so they broadcast against x.
template <int... Axes, Expression X> auto moments(const X& x) {
  static_assert(is_floating_v<value_t<X>>, "ctflow::nn::moments: needs a floating dtype");
  auto mean = reduce_mean<Axes...>(x, keepdims);
  auto variance = reduce_mean<Axes...>(square(x - mean), keepdims);
  return std::tuple{mean, variance};
}

/// @brief tf.nn.batch_normalization: (x - mean) / sqrt(variance + epsilon) * scale + offset, with
/// the batch's moments in training and the moving averages in inference.
template <Expression X, Expression M, Expression V, Expression O, Expression S>
auto batch_normalization(const X& x, const M& mean, const V& variance, const O& offset, const S& scale, double variance_epsilon) {
  using T = value_t<X>;
  return (x - mean) * (rsqrt(variance + T(variance_epsilon)) * scale) + offset;
}

/// @brief Keras's LayerNormalization over the last axis: each example normalised by its own
/// mean and variance, then scaled by gamma and shifted by beta (epsilon 1e-3, Keras's default).
template <Expression X, Expression G, Expression B> auto layer_normalization(const X& x, const G& gamma, const B& beta, double epsilon = 1e-3) {
  using T = value_t<X>;
  auto mean = reduce_mean<-1>(x, keepdims);
  auto centered = x - mean;
  auto variance = reduce_mean<-1>(square(centered), keepdims);
  return centered * rsqrt(variance + T(epsilon)) * gamma + beta;
}

/// @brief tf.nn.dropout(x, rate, seed): each element is kept with probability 1 - rate and then
/// scaled by 1 / (1 - rate) (inverted dropout), from a seeded Philox stream: one seed, one mask.
/// Call it only when training (Keras's Dropout does the same check).
template <Expression X> auto dropout(const X& x, double rate, std::uint64_t seed) {
  using T = value_t<X>;
  static_assert(is_floating_v<T>, "ctflow::nn::dropout: needs a floating dtype");
  if (!(rate >= 0.0 && rate < 1.0)) ctflow::detail::raise<value_error>("ctflow::nn::dropout: rate must be in [0, 1), got " + std::to_string(rate));
  auto keep = random_uniform<T, shape_t<X>, placed_device_t<device_t<X>>>(seed, 0.0, 1.0, x.dims()) >= T(rate);
  return where(std::move(keep), x * T(1.0 / (1.0 - rate)), T(0));
}

namespace detail {

struct batch_norm_geometry {
  std::size_t rows = 0, c = 0;
  double epsilon = 1e-3;
};

/// Moving averages a training evaluation also updates, as Keras's BatchNormalization does:
/// moving = moving * momentum + batch * (1 - momentum), the batch variance biased. Null
/// pointers: none (what nn::fused_batch_norm builds).
template <class T> struct moving_update {
  T* mean = nullptr;
  T* variance = nullptr;
  double momentum = 0.99;
};

/// y = (x - mean) * inv_std * scale + offset with the batch's statistics, channels last; with
/// `moving` set, each evaluation also updates those averages from the same statistics.
template <class T, class SX> struct batch_norm_op {
  using value_type = T;
  using shape_type = SX;
  dims_t<std::size_t(SX::rank)> out_dims{};
  batch_norm_geometry g{};
  moving_update<T> moving{};
  /// Updates the moving averages (when set) from the batch's per-channel mean and biased variance.
  void update_moving(const std::vector<double>& mean, const std::vector<double>& variance) const {
    if (!moving.mean) return;
    for (std::size_t k = 0; k < g.c; ++k) {
      moving.mean[k] = T(double(moving.mean[k]) * moving.momentum + mean[k] * (1 - moving.momentum));
      moving.variance[k] = T(double(moving.variance[k]) * moving.momentum + variance[k] * (1 - moving.momentum));
    }
  }
};

/// The input adjoint of batch_norm_op (TensorFlow's FusedBatchNormGrad, training):
/// dx = scale * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)).
template <class T, class SX> struct batch_norm_input_grad_op {
  using value_type = T;
  using shape_type = SX;
  dims_t<std::size_t(SX::rank)> out_dims{};
  batch_norm_geometry g{};
};

/// The scale adjoint: sum(dy * xhat) per channel.
template <class T, class SX, class SC> struct batch_norm_scale_grad_op {
  using value_type = T;
  using shape_type = SC;
  dims_t<1> out_dims{};
  batch_norm_geometry g{};
};

/// The normalizing node alone (channels last): y = (x - mean) * inv_std * scale + offset with the
/// batch's statistics, one kernel. Keras's BatchNormalization builds this and nothing else.
template <class X, class S, class O> auto batch_norm_node(X&& x, S&& scale, O&& offset, double epsilon) {
  using T = value_t<X>;
  using SX = shape_t<X>;
  constexpr std::size_t R = std::size_t(SX::rank);
  static_assert(is_floating_v<T> && std::is_same_v<T, value_t<S>> && std::is_same_v<T, value_t<O>>,
                "ctflow::nn::fused_batch_norm: x, scale and offset must have one floating dtype");
  static_assert(R >= 2 && rank_v<S> == 1 && rank_v<O> == 1, "ctflow::nn::fused_batch_norm: x must be [..., c] and scale and offset [c]");
  constexpr std::size_t C = SX::extents[R - 1];
  static_assert(C == dyn || ((shape_t<S>::extents[0] == dyn || shape_t<S>::extents[0] == C) && (shape_t<O>::extents[0] == dyn || shape_t<O>::extents[0] == C)),
                "ctflow::nn::fused_batch_norm: scale and offset must have one element per channel (x's last extent)");
  const auto d = x.dims();
  if (scale.dims()[0] != d[R - 1] || offset.dims()[0] != d[R - 1])
    throw_shape_error("ctflow::nn::fused_batch_norm", "scale and offset must have one element per channel", d, scale.dims());
  if (!(epsilon > 0)) ctflow::detail::raise<value_error>("ctflow::nn::fused_batch_norm: epsilon must be positive, got " + std::to_string(epsilon));
  batch_norm_op<T, SX> k;
  k.out_dims = d;
  k.g = {product(d) / std::max<std::size_t>(d[R - 1], 1), d[R - 1], epsilon};
  return expr::make_computed(k, std::forward<X>(x), std::forward<S>(scale), std::forward<O>(offset));
}

/// The node and the batch's statistics, for the moving averages: TensorFlow returns the variance
/// with Bessel's correction, n / (n - 1).
template <class X, class S, class O> auto fused_batch_norm_nhwc(X&& x, S&& scale, O&& offset, double epsilon) {
  using T = value_t<X>;
  constexpr std::size_t R = std::size_t(rank_v<X>);
  const auto scale_dims = scale.dims();
  auto y = batch_norm_node(x, std::forward<S>(scale), std::forward<O>(offset), epsilon);
  const double n = double(y.k.g.rows), bessel = n > 1 ? n / (n - 1) : 1.0;
  constexpr auto leading = []<std::size_t... I>(std::index_sequence<I...>) { return std::integer_sequence<int, int(I)...>{}; }(std::make_index_sequence<R - 1>{});
  auto stats = [&]<int... A>(std::integer_sequence<int, A...>) {
    auto [mean, variance] = moments<A...>(std::forward<X>(x));
    return std::tuple{reshape<shape_t<S>>(mean, scale_dims), reshape<shape_t<S>>(variance * T(bessel), scale_dims)};
  }(leading);
  return std::tuple_cat(std::tuple{std::move(y)}, std::move(stats));
}

}  // namespace detail

/// @brief tf.nn.fused_batch_norm(x, scale, offset, epsilon=0.001, data_format, is_training=True):
/// x normalized per channel (the last axis, or axis 1 with NCHW) by the batch's mean and
/// variance, then scaled and shifted. Returns (y, batch_mean, batch_variance), the variance
/// with Bessel's correction as TensorFlow's (the statistics are lazy: they cost a pass over x only
/// when evaluated). y is one kernel; its gradients are TensorFlow's FusedBatchNormGrad. In
/// inference, batch_normalization with the moving averages is one fused loop.
template <Expression X, Expression S, Expression O, bool ChannelsFirst = false>
auto fused_batch_norm(X&& x, S&& scale, O&& offset, double epsilon = 1e-3, data_format<ChannelsFirst> = {}) {
  if constexpr (ChannelsFirst) {
    static_assert(rank_v<X> == 4, "ctflow::nn::fused_batch_norm: NCHW input must be [n,c,h,w]");
    auto [y, mean, variance] = detail::fused_batch_norm_nhwc(nchw_to_nhwc(std::forward<X>(x)), std::forward<S>(scale), std::forward<O>(offset), epsilon);
    return std::tuple{nhwc_to_nchw(std::move(y)), std::move(mean), std::move(variance)};
  } else {
    return detail::fused_batch_norm_nhwc(std::forward<X>(x), std::forward<S>(scale), std::forward<O>(offset), epsilon);
  }
}

}  // namespace ctflow::nn
