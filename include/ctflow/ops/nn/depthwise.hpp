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

#include "conv.hpp"

namespace ctflow::nn {

namespace detail {

/// out[k * m + j] += in[k] * w[k * m + j] over c input channels (m == 1: a plain product).
template <class T> inline void depthwise_fma(T* out, const T* in, const T* w, std::size_t c, std::size_t m) {
  if (m == 1) {
    for (std::size_t k = 0; k < c; ++k) out[k] += in[k] * w[k];
    return;
  }
  for (std::size_t k = 0; k < c; ++k)
    for (std::size_t j = 0; j < m; ++j) out[k * m + j] += in[k] * w[k * m + j];
}

template <class T, class SX, class SF, conv_options P> struct depthwise_kernel {
  static constexpr dims_t<4> extents{SX::extents[0], static_spatial(SX::extents[1], SF::extents[0], P.sh, P.dh, P.pad, 0),
                                     static_spatial(SX::extents[2], SF::extents[1], P.sw, P.dw, P.pad, 1),
                                     SF::extents[2] == dyn || SF::extents[3] == dyn ? dyn : SF::extents[2] * SF::extents[3]};
  using value_type = T;
  using shape_type = shape_of<extents>;
  dims_t<4> out_dims{};
  conv_geometry g{};  // g.o = c * m
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& f) const {
    const std::size_t m = g.o / g.c;
    backend::cpu::parallel_for(g.rows(), 64, 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t p = b; p < e; ++p) {
        T* o = out + p * g.o;
        std::fill_n(o, g.o, T(0));
        each_tap(g, p, [&](std::size_t tap, std::size_t pixel) { depthwise_fma(o, x.data + pixel * g.c, f.data + tap * g.o, g.c, m); });
      }
    });
  }
};

/// The input adjoint: dx[pixel, k] += sum_j dy[p, k * m + j] * f[tap, k, j], image by image.
template <class T, class SX, class SF, conv_options P> struct depthwise_backprop_input_kernel {
  using value_type = T;
  using shape_type = SX;
  dims_t<4> out_dims{};
  conv_geometry g{};
  void run(T* out, const expr::strided_view<T, 4>& dy, const expr::strided_view<T, 4>& f) const {
    const std::size_t m = g.o / g.c, per_image = g.oh * g.ow;
    std::fill_n(out, product(out_dims), T(0));
    backend::cpu::parallel_for(g.n, 1, 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t p = b * per_image; p < e * per_image; ++p) {
        const T* d = dy.data + p * g.o;
        each_tap(g, p, [&](std::size_t tap, std::size_t pixel) {
          T* dx = out + pixel * g.c;
          const T* w = f.data + tap * g.o;
          if (m == 1) {
            for (std::size_t k = 0; k < g.c; ++k) dx[k] += d[k] * w[k];
            return;
          }
          for (std::size_t k = 0; k < g.c; ++k) {
            T s = 0;
            for (std::size_t j = 0; j < m; ++j) s += d[k * m + j] * w[k * m + j];
            dx[k] += s;
          }
        });
      }
    });
  }
};

/// The filter adjoint: df[tap, k, j] = sum over output pixels of x[pixel, k] * dy[p, k * m + j],
/// summed in a fixed number of image chunks (fixed by the shape: the result does not depend on
/// the threads), added in chunk order.
template <class T, class SX, class SF, conv_options P> struct depthwise_backprop_filter_kernel {
  using value_type = T;
  using shape_type = SF;
  dims_t<4> out_dims{};
  conv_geometry g{};
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& dy) const {
    const std::size_t m = g.o / g.c, per_image = g.oh * g.ow, size = g.kh * g.kw * g.o;
    const std::size_t chunks = std::clamp<std::size_t>(g.n, 1, 16);
    backend::cpu::reduce::sum_in_chunk_order(chunks, size, out, [&](std::size_t i, T* acc) {
      std::fill_n(acc, size, T(0));
      for (std::size_t p = g.n * i / chunks * per_image; p < g.n * (i + 1) / chunks * per_image; ++p)
        each_tap(g, p, [&](std::size_t tap, std::size_t pixel) { depthwise_fma(acc + tap * g.o, x.data + pixel * g.c, dy.data + p * g.o, g.c, m); });
    });
  }
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
    return detail::conv_node<detail::depthwise_kernel, "ctflow::nn::depthwise_conv2d", true, Pad, SH, SW, DH, DW>(std::forward<X>(input),
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
