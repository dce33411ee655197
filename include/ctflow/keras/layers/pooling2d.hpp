#pragma once
/// @file
/// @brief The 2-D pooling layers' common form (keras.layers.MaxPooling2D, AveragePooling2D):
/// windows of PoolSize, strides PoolSize unless given, VALID unless layers::same.

#include <string>
#include <tuple>

#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/conv2d.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/ops/nn/pool.hpp>

namespace ctflow::keras::layers::detail {

/// Pooling of kind Max over windows Pool with the options Options...; Name is the layer's class.
template <bool Max, auto Pool, const char* Name, auto... Options> struct pooling2d {
  static constexpr size2 pool_size = as_size<Pool>();
  static constexpr size2 stride = option<strides_t, strides_t{pool_size}, Options...>().s;
  static constexpr nn::padding padding = option<nn::padding, valid, Options...>();
  /// Keras's get_config: pool_size, padding, strides and data_format.
  static void get_config(config_dict& c) {
    c.set("pool_size", {pool_size.h, pool_size.w}).set("padding", padding_name<padding>()).set("strides", {stride.h, stride.w});
    c.set("data_format", "channels_last");
  }

  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(In::rank == 4, "ctflow::keras: a 2-D pooling layer's input must be [batch, height, width, channels]");
    static constexpr const char* class_name = Name;
    using spec = pooling2d;  // its window, strides and padding
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    /// Max pooling's input gradient reaches only inputs equal to their window's output (see
    /// detail::selects_maximum).
    static constexpr bool selects_maximum = Max;
    using output_shape = Shape<detail::extent<In, 0>, extent_t(out_h<In, pool_size, stride, size2{1, 1}, padding>()),
                               extent_t(out_w<In, pool_size, stride, size2{1, 1}, padding>()), detail::extent<In, 3>>;
    template <class Spec> explicit built(const Spec&) {}
    auto weights() { return std::tuple<>(); }
    template <class X, class Training> auto call(const X& x, Training) const {
      if constexpr (Max) return nn::max_pool2d<pool_size.h, pool_size.w, stride.h, stride.w, padding>(x);
      else return nn::avg_pool2d<pool_size.h, pool_size.w, stride.h, stride.w, padding>(x);
    }
  };
};

inline constexpr char max_pooling2d_name[] = "MaxPooling2D";
inline constexpr char average_pooling2d_name[] = "AveragePooling2D";

}  // namespace ctflow::keras::layers::detail
