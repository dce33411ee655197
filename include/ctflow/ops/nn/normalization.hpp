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

#include "../../backend/cpu/thread_pool.hpp"
#include "../../expr/computed.hpp"
#include "../array.hpp"
#include "layout.hpp"

#include "../math.hpp"
#include "../random.hpp"
#include "../reduction.hpp"

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
  if (!(rate >= 0.0 && rate < 1.0)) throw value_error("ctflow::nn::dropout: rate must be in [0, 1), got " + std::to_string(rate));
  auto keep = random_uniform<T, shape_t<X>>(seed, 0.0, 1.0, x.dims()) >= T(rate);
  return where(std::move(keep), x * T(1.0 / (1.0 - rate)), T(0));
}

namespace detail {

/// K per-channel sums over the rows of an [rows, c] array: f(r0, r1, acc) adds rows [r0, r1)
/// into acc[K * c] (double). The rows are cut into a number of chunks fixed by the shape, the
/// chunks run on the threads, and their sums are added in chunk order: the result does not
/// depend on the thread count.
template <std::size_t K, class F> std::vector<double> channel_sums(std::size_t rows, std::size_t c, F&& f) {
  const std::size_t chunks = std::clamp<std::size_t>(rows / 512, 1, 16);
  std::vector<double> sums(K * c);
  backend::cpu::reduce::sum_in_chunk_order(chunks, K * c, sums.data(), [&](std::size_t i, double* acc) {
    std::fill_n(acc, K * c, 0.0);
    f(rows * i / chunks, rows * (i + 1) / chunks, acc);
  });
  return sums;
}

/// The batch mean and 1 / sqrt(variance + epsilon) of each channel (the last axis), the variance
/// biased, as in normalization. The sums are of x - x[0] (shifted data: no cancellation when the
/// mean is large against the spread).
template <class T> void batch_statistics(const T* x, std::size_t rows, std::size_t c, double epsilon, std::vector<double>& mean,
                                         std::vector<double>& inv_std) {
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
  const double n = double(std::max<std::size_t>(rows, 1));
  for (std::size_t k = 0; k < c; ++k) {
    const double m = sums[k] / n;
    mean[k] = double(x[k]) + m;
    inv_std[k] = 1.0 / std::sqrt(std::max(sums[c + k] / n - m * m, 0.0) + epsilon);
  }
}

struct batch_norm_geometry {
  std::size_t rows = 0, c = 0;
  double epsilon = 1e-3;
};

/// y = (x - mean) * inv_std * scale + offset with the batch's statistics, channels last.
template <class T, class SX> struct batch_norm_kernel {
  using value_type = T;
  using shape_type = SX;
  dims_t<std::size_t(SX::rank)> out_dims{};
  batch_norm_geometry g{};
  void run(T* out, const expr::strided_view<T, std::size_t(SX::rank)>& x, const expr::strided_view<T, 1>& scale,
           const expr::strided_view<T, 1>& offset) const {
    std::vector<double> mean, inv;
    batch_statistics(x.data, g.rows, g.c, g.epsilon, mean, inv);
    std::vector<T> a(g.c), b(g.c);  // y = x a + b
    for (std::size_t k = 0; k < g.c; ++k) {
      a[k] = T(inv[k] * double(scale.data[k]));
      b[k] = T(double(offset.data[k]) - mean[k] * inv[k] * double(scale.data[k]));
    }
    backend::cpu::parallel_for(g.rows, 256, 1, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r)
        for (std::size_t k = 0; k < g.c; ++k) out[r * g.c + k] = x.data[r * g.c + k] * a[k] + b[k];
    });
  }
};

/// The batch statistics (into mean and inv_std, as batch_statistics), then sum(dy) and
/// sum(dy * xhat) per channel, xhat = (x - mean) * inv_std: what both backward kernels need.
template <class T> std::vector<double> batch_norm_grad_sums(const T* x, const T* dy, const batch_norm_geometry& g, std::vector<double>& mean,
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

/// The input adjoint of batch_norm_kernel (TensorFlow's FusedBatchNormGrad, training):
/// dx = scale * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)).
template <class T, class SX> struct batch_norm_input_grad_kernel {
  using value_type = T;
  using shape_type = SX;
  dims_t<std::size_t(SX::rank)> out_dims{};
  batch_norm_geometry g{};
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
    backend::cpu::parallel_for(g.rows, 256, 1, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r)
        for (std::size_t k = 0; k < g.c; ++k) out[r * g.c + k] = dy.data[r * g.c + k] * a[k] + x.data[r * g.c + k] * b[k] + c[k];
    });
  }
};

/// The scale adjoint: sum(dy * xhat) per channel.
template <class T, class SX, class SC> struct batch_norm_scale_grad_kernel {
  using value_type = T;
  using shape_type = SC;
  dims_t<1> out_dims{};
  batch_norm_geometry g{};
  void run(T* out, const expr::strided_view<T, std::size_t(SX::rank)>& x, const expr::strided_view<T, std::size_t(SX::rank)>& dy) const {
    std::vector<double> mean, inv;
    const auto sums = batch_norm_grad_sums(x.data, dy.data, g, mean, inv);
    for (std::size_t k = 0; k < g.c; ++k) out[k] = T(sums[g.c + k]);
  }
};

template <class X, class S, class O> auto fused_batch_norm_nhwc(X&& x, S&& scale, O&& offset, double epsilon) {
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
  if (!(epsilon > 0)) throw value_error("ctflow::nn::fused_batch_norm: epsilon must be positive, got " + std::to_string(epsilon));
  batch_norm_kernel<T, SX> k;
  k.out_dims = d;
  k.g = {product(d) / std::max<std::size_t>(d[R - 1], 1), d[R - 1], epsilon};
  // The statistics, for the moving averages: TensorFlow returns the variance with Bessel's
  // correction, n / (n - 1).
  constexpr auto leading = []<std::size_t... I>(std::index_sequence<I...>) { return std::integer_sequence<int, int(I)...>{}; }(std::make_index_sequence<R - 1>{});
  const double n = double(k.g.rows), bessel = n > 1 ? n / (n - 1) : 1.0;
  auto stats = [&]<int... A>(std::integer_sequence<int, A...>) {
    auto [mean, variance] = moments<A...>(x);
    return std::tuple{reshape<shape_t<S>>(mean, scale.dims()), reshape<shape_t<S>>(variance * T(bessel), scale.dims())};
  }(leading);
  return std::tuple_cat(std::tuple{expr::make_computed(k, std::forward<X>(x), std::forward<S>(scale), std::forward<O>(offset))}, std::move(stats));
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
