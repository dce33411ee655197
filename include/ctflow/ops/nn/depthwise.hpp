#pragma once
/// @brief tf.nn.depthwise_conv2d and tf.nn.separable_conv2d over NHWC input. A depthwise filter
/// [kh, kw, c, m] convolves each input channel with its own m filters: the result has c * m
/// channels, channel k * m + j being input channel k through filter j. Direct kernels (every
/// channel of a pixel is one contiguous run), forward and both backward passes.
///
///     Tensor<float, Shape<8, 32, 32, 16>> x;  Tensor<float, Shape<3, 3, 16, 2>> dw;
///     Tensor<float, Shape<1, 1, 32, 64>> pw;
///     auto d = nn::depthwise_conv2d<nn::SAME>(x, dw);         // [8, 32, 32, 32]
///     auto s = nn::separable_conv2d<nn::SAME, 2>(x, dw, pw);  // [8, 16, 16, 64]

#include <ctflow/ops/nn/conv.hpp>

namespace ctflow::nn {

namespace detail {

template <class T, class SX, class SF, conv_options P> struct depthwise_op {
  static constexpr dims_t<4> extents{SX::extents[0], static_spatial(SX::extents[1], SF::extents[0], P.sh, P.dh, P.pad, 0),
                                     static_spatial(SX::extents[2], SF::extents[1], P.sw, P.dw, P.pad, 1),
                                     SF::extents[2] == dyn || SF::extents[3] == dyn ? dyn : SF::extents[2] * SF::extents[3]};
  using value_type = T;
  using shape_type = shape_of<extents>;
  dims_t<4> out_dims{};
  conv_geometry g{};  // g.o = c * m
};

/// The input adjoint: dx[pixel, k] += sum_j dy[p, k * m + j] * f[tap, k, j], image by image.
template <class T, class SX, class SF, conv_options P> struct depthwise_backprop_input_op {
  using value_type = T;
  using shape_type = SX;
  dims_t<4> out_dims{};
  conv_geometry g{};
};

/// The filter adjoint: df[tap, k, j] = sum over output pixels of x[pixel, k] * dy[p, k * m + j],
/// summed in a fixed number of image chunks (fixed by the shape: the result does not depend on
/// the threads), added in chunk order.
template <class T, class SX, class SF, conv_options P> struct depthwise_backprop_filter_op {
  using value_type = T;
  using shape_type = SF;
  dims_t<4> out_dims{};
  conv_geometry g{};
};

}  // namespace detail

/// @brief tf.nn.depthwise_conv2d(input, filter, strides, padding, data_format, dilations) for NHWC
/// input [n, h, w, c] and filters [kh, kw, c, m]: the result is [n, oh, ow, c * m] (NCHW: [n, c,
/// h, w] in, [n, c * m, oh, ow] out).
template <padding Pad, std::size_t SH = 1, std::size_t SW = SH, std::size_t DH = 1, std::size_t DW = DH, Expression X, Expression F,
          bool ChannelsFirst = false>
auto depthwise_conv2d(X&& input, F&& filters, data_format<ChannelsFirst> = {}) {
  if constexpr (ChannelsFirst)
    return nhwc_to_nchw(depthwise_conv2d<Pad, SH, SW, DH, DW>(nchw_to_nhwc(std::forward<X>(input)), std::forward<F>(filters)));
  else
    return detail::conv_node<detail::depthwise_op, "ctflow::nn::depthwise_conv2d", true, Pad, SH, SW, DH, DW>(std::forward<X>(input),
                                                                                                          std::forward<F>(filters));
}

/// @brief tf.nn.separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,
/// data_format, dilations): depthwise_conv2d with [kh, kw, c, m], then a 1x1 conv2d with
/// [1, 1, c * m, o].
template <padding Pad, std::size_t SH = 1, std::size_t SW = SH, std::size_t DH = 1, std::size_t DW = DH, Expression X, Expression D, Expression P,
          bool ChannelsFirst = false>
auto separable_conv2d(X&& input, D&& depthwise_filter, P&& pointwise_filter, data_format<ChannelsFirst> = {}) {
  static_assert(rank_v<P> == 4 && (shape_t<P>::extents[0] == 1 || shape_t<P>::extents[0] == dyn) &&
                    (shape_t<P>::extents[1] == 1 || shape_t<P>::extents[1] == dyn),
                "ctflow::nn::separable_conv2d: the pointwise filter must be [1,1,c*m,o]");
  // NCHW: one layout change on the way in and one on the way out, none between the two convolutions.
  if constexpr (ChannelsFirst)
    return nhwc_to_nchw(separable_conv2d<Pad, SH, SW, DH, DW>(nchw_to_nhwc(std::forward<X>(input)), std::forward<D>(depthwise_filter),
                                                              std::forward<P>(pointwise_filter)));
  else
    return conv2d<VALID>(depthwise_conv2d<Pad, SH, SW, DH, DW>(std::forward<X>(input), std::forward<D>(depthwise_filter)),
                         std::forward<P>(pointwise_filter));
}

}  // namespace ctflow::nn
