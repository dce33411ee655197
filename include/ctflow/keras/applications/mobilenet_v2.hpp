#pragma once
/// @file
/// @brief MobileNetV2 (Sandler et al., 2018) as keras.applications.MobileNetV2(alpha=1.0,
/// include_top=True) builds it for 224x224x3 images: 3,538,984 parameters for 1000 classes,
/// 34,112 of them the moving statistics, counted by the compiler as Keras counts them.
/// Keras pads before its strided depthwise convolutions (ZeroPadding2D, then VALID); SAME
/// padding is the same computation on these even image sizes.

#include <ctflow/keras/layers/activation.hpp>
#include <ctflow/keras/layers/batch_normalization.hpp>
#include <ctflow/keras/layers/conv2d.hpp>
#include <ctflow/keras/layers/dense.hpp>
#include <ctflow/keras/layers/depthwise_conv2d.hpp>
#include <ctflow/keras/layers/global_pooling2d.hpp>
#include <ctflow/keras/sequential.hpp>
#include <ctflow/ops/math.hpp>

namespace ctflow::keras::applications {

/// @brief MobileNetV2's inverted residual block: a 1x1 expansion to Expansion times the input's
/// channels (none when Expansion is 1), a 3x3 depthwise convolution with Strides, a linear 1x1
/// projection to Filters channels, each followed by BatchNormalization (momentum 0.999) and the
/// first two by ReLU6; x is added when the block keeps the shape.
template <std::size_t Filters, std::size_t Strides, std::size_t Expansion> struct InvertedResidual {
  CTFLOW_KERAS_LAYER_SPEC("InvertedResidual");
  /// @brief The BatchNormalizations' momentum and epsilon.
  double momentum = 0.999, epsilon = 1e-3;

  template <class T, ShapeType In, class D = cpu> struct built : Layer<InvertedResidual, T, In, D> {
    static constexpr std::size_t channels = In::extents[3];
    static constexpr bool expands = Expansion != 1;
    static constexpr bool adds = Strides == 1 && channels == Filters;
    using expand_spec = layers::Conv2D<channels * Expansion, 1, layers::same, layers::use_bias<false>>;
    using expand_type = sublayer<expand_spec, T, In, D>;
    using expand_bn_type = sublayer_after<expand_type, layers::BatchNormalization>;
    using depthwise_in = std::conditional_t<expands, typename expand_bn_type::output_shape, In>;
    using depthwise_spec = layers::DepthwiseConv2D<3, layers::same, layers::strides<Strides>, layers::use_bias<false>>;
    using project_spec = layers::Conv2D<Filters, 1, layers::same, layers::use_bias<false>>;

    keras::config<InvertedResidual, T> config;
    std::conditional_t<expands, expand_type, keras::detail::no_layer> expand{};
    std::conditional_t<expands, expand_bn_type, keras::detail::no_layer> expand_bn = norm_if<expands, expand_bn_type>();
    sublayer<depthwise_spec, T, depthwise_in, D> depthwise{};
    sublayer_after<decltype(depthwise), layers::BatchNormalization> depthwise_bn{norm()};
    sublayer_after<decltype(depthwise_bn), project_spec> project{};
    sublayer_after<decltype(project), layers::BatchNormalization> project_bn{norm()};

    template <class X, class Training> auto call(const X& x, Training training) const {
      auto body = [&](const auto& h) { return project_bn(project(relu6(depthwise_bn(depthwise(h, training), training)), training), training); };
      if constexpr (expands && adds) return x + body(relu6(expand_bn(expand(x, training), training)));
      else if constexpr (expands) return body(relu6(expand_bn(expand(x, training), training)));
      else if constexpr (adds) return x + body(x);
      else return body(x);
    }

   private:
    layers::BatchNormalization norm() const { return {.momentum = config.momentum, .epsilon = config.epsilon}; }
    template <bool Has, class S> auto norm_if() const {
      if constexpr (Has) return S(norm());
      else return keras::detail::no_layer{};
    }
  };
};

/// @brief MobileNetV2 for Classes classes on 224x224x3 images: a 3x3 convolution of 32 filters
/// with strides 2, seventeen inverted residual blocks (16, 24, 32, 64, 96, 160 and 320 filters),
/// a 1x1 convolution to 1280 channels, global average pooling and a softmax Dense; on device D.
template <std::size_t Classes = 1000, class D = cpu>
using MobileNetV2 = Sequential<Input<float, Shape<224, 224, 3>, dyn, D>,  //
                               layers::Conv2D<32, 3, layers::same, layers::strides<2>, layers::use_bias<false>>, layers::BatchNormalization,
                               layers::Activation<activations::relu6>, InvertedResidual<16, 1, 1>,                                              //
                               InvertedResidual<24, 2, 6>, InvertedResidual<24, 1, 6>,                                //
                               InvertedResidual<32, 2, 6>, InvertedResidual<32, 1, 6>, InvertedResidual<32, 1, 6>,    //
                               InvertedResidual<64, 2, 6>, InvertedResidual<64, 1, 6>, InvertedResidual<64, 1, 6>,    //
                               InvertedResidual<64, 1, 6>,                                                            //
                               InvertedResidual<96, 1, 6>, InvertedResidual<96, 1, 6>, InvertedResidual<96, 1, 6>,    //
                               InvertedResidual<160, 2, 6>, InvertedResidual<160, 1, 6>, InvertedResidual<160, 1, 6>, //
                               InvertedResidual<320, 1, 6>,                                                           //
                               layers::Conv2D<1280, 1, layers::same, layers::use_bias<false>>, layers::BatchNormalization,
                               layers::Activation<activations::relu6>, layers::GlobalAveragePooling2D, layers::Dense<Classes, activations::softmax>>;

}  // namespace ctflow::keras::applications
