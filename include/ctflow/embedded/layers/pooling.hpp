#pragma once
/// @file
/// @brief embedded::MaxPooling2D, AveragePooling2D (a window: pool extents, strides, padding),
/// GlobalAveragePooling2D and GlobalMaxPooling2D over NHWC images.

#include <cstddef>

#include <ctflow/embedded/layers/common.hpp>
#include <ctflow/embedded/network.hpp>
#include <ctflow/ops/nn/pool.hpp>

namespace ctflow::embedded {

namespace detail {
template <bool Max, window W> struct pooling2d_layer {
  static_assert(W.dh == 1 && W.dw == 1, "ctflow::embedded: a pooling window has no dilation");
  template <class T, ShapeType In> struct built {
    static_assert(In::rank == 4, "ctflow::embedded: a 2-D pooling layer's input must be [batch, height, width, channels]");
    using value_type = T;
    using output_shape = Shape<extent_t(In::extents[0]), extent_t(out_h<In, W>()), extent_t(out_w<In, W>()), extent_t(In::extents[3])>;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::buffer;
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, output_shape, D> y) {
      if constexpr (Max) y = nn::max_pool2d<W.kh, W.kw, W.sh, W.sw, W.padding>(x);
      else y = nn::avg_pool2d<W.kh, W.kw, W.sh, W.sw, W.padding>(x);
    }
  };
};
template <bool Max> struct global_pooling2d_layer {
  template <class T, ShapeType In> struct built {
    static_assert(In::rank == 4, "ctflow::embedded: a global 2-D pooling layer's input must be [batch, height, width, channels]");
    using value_type = T;
    using output_shape = Shape<extent_t(In::extents[0]), extent_t(In::extents[3])>;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::buffer;
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, output_shape, D> y) {
      if constexpr (Max) y = nn::global_max_pool2d(x);
      else y = nn::global_avg_pool2d(x);
    }
  };
};
}  // namespace detail

/// @brief keras.layers.MaxPooling2D(pool_size, strides, padding): W's kh, kw, sh, sw, padding.
template <window W> struct MaxPooling2D : detail::pooling2d_layer<true, W> {};
/// @brief keras.layers.AveragePooling2D(pool_size, strides, padding).
template <window W> struct AveragePooling2D : detail::pooling2d_layer<false, W> {};
/// @brief keras.layers.GlobalAveragePooling2D(): the mean over height and width.
struct GlobalAveragePooling2D : detail::global_pooling2d_layer<false> {};
/// @brief keras.layers.GlobalMaxPooling2D(): the maximum over height and width.
struct GlobalMaxPooling2D : detail::global_pooling2d_layer<true> {};

}  // namespace ctflow::embedded
