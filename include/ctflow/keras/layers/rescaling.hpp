#pragma once
/// @file
/// @brief keras.layers.Rescaling(scale, offset=0): x * scale + offset.
///
///     layers::Rescaling(1.0 / 255)

#include <string>
#include <tuple>

#include <ctflow/keras/config_dict.hpp>
#include <ctflow/keras/layer.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.Rescaling(scale, offset=0.0).
struct Rescaling {
  double scale = 1.0;
  double offset = 0.0;
  CTFLOW_KERAS_LAYER_SPEC("Rescaling");
  /// @brief Keras's get_config: scale and offset.
  void get_config(config_dict& c) const { c.set("scale", scale).set("offset", offset); }
  template <class T, ShapeType In, class D = cpu> struct built {
    static constexpr const char* class_name = "Rescaling";
    static constexpr bool supports_masking = true;  // passes its input's mask on
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = In;
    double scale, offset;
    explicit built(const Rescaling& c) : scale(c.scale), offset(c.offset) {}
    auto weights() { return std::tuple<>(); }
    template <class X, class Training> auto call(const X& x, Training) const { return x * T(scale) + T(offset); }
  };
};

}  // namespace ctflow::keras::layers
