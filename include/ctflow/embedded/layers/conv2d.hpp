#pragma once
/// @file
/// @brief embedded::Conv2D, embedded::DepthwiseConv2D and embedded::Conv2DTranspose over NHWC
/// images: activation(conv(x, kernel) + bias), the kernel [kh, kw, channels, Filters] (depthwise:
/// [kh, kw, channels, Multiplier]; transposed: [kh, kw, Filters, channels], as Keras's) and the
/// bias given as arrays:
///
///     embedded::Conv2D<32, embedded::window{.kh = 3, .kw = 3}, keras::activations::relu, weights::conv2d_kernel, weights::conv2d_bias>

#include <cstddef>

#include <ctflow/embedded/layers/common.hpp>
#include <ctflow/embedded/network.hpp>
#include <ctflow/ops/nn/conv.hpp>
#include <ctflow/ops/nn/depthwise.hpp>

namespace ctflow::embedded {

namespace detail {
/// What Conv2D (Depthwise false: Out filters) and DepthwiseConv2D (Depthwise: Out per channel)
/// share.
template <bool Depthwise, std::size_t Out, window W, auto Activation, const auto& Kernel, const auto&... Bias> struct conv2d_layer {
  static_assert(sizeof...(Bias) <= 1, "ctflow::embedded: a convolution takes a kernel and at most one bias");
  template <class T, ShapeType In> struct built {
    static_assert(In::rank == 4, "ctflow::embedded: a convolution's input must be [batch, height, width, channels]");
    static constexpr std::size_t channels = In::extents[3];
    static constexpr std::size_t filters = Depthwise ? channels * Out : Out;
    using value_type = T;
    using output_shape = Shape<extent_t(In::extents[0]), extent_t(out_h<In, W>()), extent_t(out_w<In, W>()), extent_t(filters)>;
    using kernel_shape = Shape<extent_t(W.kh), extent_t(W.kw), extent_t(channels), extent_t(Out)>;
    static constexpr std::size_t params = length<Kernel> + (std::size_t(0) + ... + length<Bias>);
    static constexpr placement place = placement::buffer;

    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, output_shape, D> y) {
      if constexpr (Depthwise) {
        y = nn::depthwise_conv2d<W.padding, W.sh, W.sw, W.dh, W.dw>(x, weight<"DepthwiseConv2D", "kernel", T, kernel_shape, D, Kernel>());
        bias_and_activation<"DepthwiseConv2D", Activation, T, output_shape, D, Bias...>(y);
      } else {
        y = nn::conv2d<W.padding, W.sh, W.sw, W.dh, W.dw>(x, weight<"Conv2D", "kernel", T, kernel_shape, D, Kernel>());
        bias_and_activation<"Conv2D", Activation, T, output_shape, D, Bias...>(y);
      }
    }
  };
};
}  // namespace detail

/// @brief keras.layers.Conv2D(Filters, kernel_size, strides, padding, dilation_rate, activation).
template <std::size_t Filters, window W, auto Activation, const auto& Kernel, const auto&... Bias>
struct Conv2D : detail::conv2d_layer<false, Filters, W, Activation, Kernel, Bias...> {};

/// @brief keras.layers.DepthwiseConv2D(kernel_size, strides, padding, depth_multiplier,
/// dilation_rate, activation).
template <std::size_t Multiplier, window W, auto Activation, const auto& Kernel, const auto&... Bias>
struct DepthwiseConv2D : detail::conv2d_layer<true, Multiplier, W, Activation, Kernel, Bias...> {};

/// @brief keras.layers.Conv2DTranspose(Filters, kernel_size, strides, padding, dilation_rate,
/// activation): the output's height in * stride (SAME) or in * stride + max(window - stride, 0)
/// (VALID), as Keras's.
template <std::size_t Filters, window W, auto Activation, const auto& Kernel, const auto&... Bias> struct Conv2DTranspose {
  static_assert(sizeof...(Bias) <= 1, "ctflow::embedded::Conv2DTranspose: takes a kernel and at most one bias");
  template <class T, ShapeType In> struct built {
    static_assert(In::rank == 4, "ctflow::embedded::Conv2DTranspose: its input must be [batch, height, width, channels]");
    using value_type = T;
    using output_shape = Shape<extent_t(In::extents[0]), extent_t(nn::detail::transposed_extent(In::extents[1], W.kh, W.sh, W.dh, W.padding, 0)),
                               extent_t(nn::detail::transposed_extent(In::extents[2], W.kw, W.sw, W.dw, W.padding, 1)), extent_t(Filters)>;
    using kernel_shape = Shape<extent_t(W.kh), extent_t(W.kw), extent_t(Filters), extent_t(In::extents[3])>;
    static constexpr std::size_t params = detail::length<Kernel> + (std::size_t(0) + ... + detail::length<Bias>);
    static constexpr placement place = placement::buffer;

    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, output_shape, D> y) {
      y = nn::conv2d_transpose<W.padding, W.sh, W.sw, W.dh, W.dw>(x, detail::weight<"Conv2DTranspose", "kernel", T, kernel_shape, D, Kernel>());
      detail::bias_and_activation<"Conv2DTranspose", Activation, T, output_shape, D, Bias...>(y);
    }
  };
};

}  // namespace ctflow::embedded
