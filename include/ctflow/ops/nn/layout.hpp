#pragma once
/// @brief tf.nn.bias_add and the layout conversions that let weights and activations move
/// between TensorFlow's layouts (NHWC activations, HWIO filters) and PyTorch's or Caffe's (NCHW,
/// OIHW). The conversions are views (transposes): they copy nothing until evaluated.

#include <ctflow/ops/array.hpp>
#include <ctflow/ops/math.hpp>

namespace ctflow::nn {

namespace detail {
/// [c, 1, ..., 1]: a channel vector that broadcasts over the R - 2 axes after the channels.
template <std::size_t R> constexpr dims_t<R - 1> channels_first(std::size_t c) {
  dims_t<R - 1> d{};
  d.fill(1);
  d[0] = c;
  return d;
}
}  // namespace detail

/// @brief TensorFlow's data_format: channels last (NHWC, NWC: the default) or channels first
/// (NCHW, NCW), passed as the last argument of the ops that take one: `conv2d<SAME>(x, f, NCHW)`.
/// The format is part of the type, as it decides the result's shape.
template <bool ChannelsFirst> struct data_format {
  static constexpr bool channels_first = ChannelsFirst;
};
inline constexpr data_format<false> NHWC, NWC;
inline constexpr data_format<true> NCHW, NCW;

/// @brief tf.nn.bias_add: adds bias [c] along the channels, the last axis (NHWC, the default) or
/// axis 1 (NCHW).
template <Expression X, Expression B, bool ChannelsFirst = false> auto bias_add(X&& value, B&& bias, data_format<ChannelsFirst> = {}) {
  static_assert(rank_v<B> == 1, "ctflow::nn::bias_add: bias must be a vector");
  if constexpr (!ChannelsFirst) {
    return std::forward<X>(value) + std::forward<B>(bias);
  } else {
    constexpr std::size_t R = std::size_t(rank_v<X>);
    static_assert(R >= 2, "ctflow::nn::bias_add: NCHW needs a channel axis");
    using SB = shape_of<detail::channels_first<R>(shape_t<B>::extents[0])>;
    const auto d = detail::channels_first<R>(bias.dims()[0]);
    return std::forward<X>(value) + reshape<SB>(std::forward<B>(bias), d);
  }
}

/// @brief Activations [n, h, w, c] as [n, c, h, w].
template <Expression X> auto nhwc_to_nchw(X&& x) { return transpose<0, 3, 1, 2>(std::forward<X>(x)); }
/// @brief Activations [n, c, h, w] as [n, h, w, c].
template <Expression X> auto nchw_to_nhwc(X&& x) { return transpose<0, 2, 3, 1>(std::forward<X>(x)); }
/// @brief Filters [kh, kw, in, out] (TensorFlow) as [out, in, kh, kw] (PyTorch, Caffe).
template <Expression F> auto hwio_to_oihw(F&& f) { return transpose<3, 2, 0, 1>(std::forward<F>(f)); }
/// @brief Filters [out, in, kh, kw] (PyTorch, Caffe) as [kh, kw, in, out] (TensorFlow).
template <Expression F> auto oihw_to_hwio(F&& f) { return transpose<2, 3, 1, 0>(std::forward<F>(f)); }

}  // namespace ctflow::nn
