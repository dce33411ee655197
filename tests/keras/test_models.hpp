// Models and custom layers that more than one Keras test unit builds: the residual block and the
// MobileNetV2 block generate.py writes Keras's files of, and Keras's guide's custom layers.
#pragma once

#include "keras_check.hpp"

namespace test_models {

using namespace ctflow;
namespace layers = keras::layers;
namespace activations = keras::activations;

/// A residual block (Conv2D, BatchNormalization, ReLU, Conv2D, Add) and a pooled Dense head, as
/// generate.py's "residual"; made after clear_session, so its layers have Keras's names.
template <int = 0> auto residual_model() {  // (a template: built only where a unit calls it)
  keras::backend::clear_session();
  keras::Input<float, Shape<6, 6, 3>> inputs;
  auto x = layers::Conv2D<4, 3, layers::same>{}(inputs);
  auto y = layers::Conv2D<4, 3, layers::same>{}(layers::ReLU{}(layers::BatchNormalization{}(x)));
  auto out = layers::Dense<3>{}(layers::GlobalAveragePooling2D{}(layers::Add{}(x, y)));
  return keras::Model(inputs, out);
}

/// MobileNetV2's inverted residual block (expand, depthwise, project, Add) with a head, as
/// generate.py's "mobile_block".
template <int = 0> auto mobile_block_model() {
  keras::backend::clear_session();
  keras::Input<float, Shape<8, 8, 4>> inputs;
  auto expand = layers::Conv2D<8, 1, layers::use_bias<false>>{}(inputs);
  auto expand_relu = layers::ReLU{.max_value = 6}(layers::BatchNormalization{}(expand));
  auto depthwise = layers::DepthwiseConv2D<3, layers::same, layers::use_bias<false>>{}(expand_relu);
  auto depthwise_relu = layers::ReLU{.max_value = 6}(layers::BatchNormalization{}(depthwise));
  auto project = layers::BatchNormalization{}(layers::Conv2D<4, 1, layers::use_bias<false>>{}(depthwise_relu));
  auto out = layers::Dense<3>{}(layers::GlobalAveragePooling2D{}(layers::Add{}(inputs, project)));
  return keras::Model(inputs, out);
}

// Keras's guide's Linear layer: its own weights, made by add_weight.
template <std::size_t Units> struct Linear {
  CTFLOW_KERAS_LAYER_SPEC("Linear");
  template <class T, ShapeType In> struct built : keras::Layer<Linear, T, In> {
    Variable<T, Shape<In::extents[1], Units>> w = keras::add_weight("w", keras::initializers::RandomNormal(0.0, 0.05, 3));
    Variable<T, Shape<Units>> b = keras::add_weight("b", keras::initializers::Zeros());
    template <class X, class Training> auto call(const X& x, Training) const { return matmul(x, w) + b; }
  };
};

// Two Dense sub-layers and a Dropout whose rate comes from the layer's own spec.
struct MLPBlock {
  CTFLOW_KERAS_LAYER_SPEC("MLPBlock");
  double rate = 0.0;
  template <class T, ShapeType In> struct built : keras::Layer<MLPBlock, T, In> {
    keras::config<MLPBlock, T> config;
    keras::sublayer<layers::Dense<6, activations::relu>, T, In> dense1;
    keras::sublayer_after<decltype(dense1), layers::Dense<3>> dense2;
    template <class X, class Training> auto call(const X& x, Training training) const {
      if constexpr (training) return dense2(nn::dropout(dense1(x, training), config.rate, 7), training);
      else return dense2(dense1(x, training), training);
    }
  };
};

}  // namespace test_models
