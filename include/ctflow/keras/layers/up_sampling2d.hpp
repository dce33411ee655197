#pragma once
/// @file
/// @brief keras.layers.UpSampling2D(size=(2, 2), interpolation="nearest"): each image scaled by
/// whole factors (nearest repeats rows and columns; "bilinear" interpolates with half-pixel
/// centres, as Keras's).
///
///     layers::UpSampling2D<>                     // 2x
///     layers::UpSampling2D<3>{.interpolation = image::ResizeMethod::BILINEAR}

#include <string>
#include <tuple>

#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/ops/image.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.UpSampling2D(size, interpolation).
template <auto Size = 2> struct UpSampling2D {
  static constexpr size2 factor = detail::as_size<Size>();
  image::ResizeMethod interpolation = image::ResizeMethod::NEAREST_NEIGHBOR;
  CTFLOW_KERAS_LAYER_SPEC("UpSampling2D");
  /// @brief Keras's get_config: size, data_format and interpolation ("nearest" or "bilinear").
  void get_config(config_dict& c) const {
    c.set("size", {factor.h, factor.w}).set("data_format", "channels_last");
    c.set("interpolation", interpolation == image::ResizeMethod::BILINEAR ? "bilinear" : "nearest");
  }
  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(In::rank == 4, "ctflow::keras::UpSampling2D: its input must be [batch, height, width, channels]");
    static_assert(In::extents[1] != dyn && In::extents[2] != dyn, "ctflow::keras::UpSampling2D: the images' height and width must be static");
    static constexpr const char* class_name = "UpSampling2D";
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = Shape<detail::extent<In, 0>, extent_t(In::extents[1] * factor.h), extent_t(In::extents[2] * factor.w), detail::extent<In, 3>>;
    image::ResizeMethod method;
    explicit built(const UpSampling2D& c) : method(c.interpolation) {}
    auto weights() { return std::tuple<>(); }
    template <class X, class Training> auto call(const X& x, Training) const {
      return image::resize<In::extents[1] * factor.h, In::extents[2] * factor.w>(x, method);
    }
  };
};

}  // namespace ctflow::keras::layers
