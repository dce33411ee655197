#pragma once
/// @file
/// @brief Residual networks as compile-time Sequentials of residual blocks (custom layers):
/// ResNet-20 for CIFAR-size images (keras.io's ResNet v1: convolutions with biases, a 1x1
/// projection where a stack halves the image; 274,442 parameters for 10 classes) and ResNet-18
/// (He et al., 2016, for 224x224 images: convolutions without biases, BatchNormalization with
/// epsilon 1e-5, a projection with BatchNormalization; 11,699,112 parameters for 1000 classes,
/// 9,600 of them the moving statistics). The counts are Keras's, and the compiler's:
///
///     static_assert(keras::applications::ResNet20<>::count_params() == 274442);

#include <ctflow/keras/detail/embedded_header.hpp>
#include <ctflow/keras/layers/activation.hpp>
#include <ctflow/keras/layers/average_pooling2d.hpp>
#include <ctflow/keras/layers/batch_normalization.hpp>
#include <ctflow/keras/layers/conv2d.hpp>
#include <ctflow/keras/layers/dense.hpp>
#include <ctflow/keras/layers/flatten.hpp>
#include <ctflow/keras/layers/global_pooling2d.hpp>
#include <ctflow/keras/layers/max_pooling2d.hpp>
#include <ctflow/keras/sequential.hpp>
#include <ctflow/ops/math.hpp>

namespace ctflow::keras::applications {

namespace detail {

/// The built form of the residual blocks below (Spec: ResidualBlock or BasicBlock).
template <class Spec, std::size_t Filters, std::size_t Strides, bool Bias, bool ProjectionNorm> struct residual_block {
  template <class T, ShapeType In, class D = cpu> struct built : Layer<Spec, T, In, D> {
    static constexpr bool projects = Strides != 1 || In::extents[3] != Filters;
    using conv_a_spec = layers::Conv2D<Filters, 3, layers::same, layers::strides<Strides>, layers::use_bias<Bias>>;
    using conv_b_spec = layers::Conv2D<Filters, 3, layers::same, layers::use_bias<Bias>>;
    using projection_spec = layers::Conv2D<Filters, 1, layers::same, layers::strides<Strides>, layers::use_bias<Bias>>;
    using projection_type = sublayer<projection_spec, T, In, D>;
    using projection_bn_type = sublayer_after<projection_type, layers::BatchNormalization>;

    keras::config<Spec, T> config;
    sublayer<conv_a_spec, T, In, D> conv_a{conv_a_spec{.kernel_initializer = config.kernel_initializer}};
    sublayer_after<decltype(conv_a), layers::BatchNormalization> bn_a{norm()};
    sublayer_after<decltype(bn_a), conv_b_spec> conv_b{conv_b_spec{.kernel_initializer = config.kernel_initializer}};
    sublayer_after<decltype(conv_b), layers::BatchNormalization> bn_b{norm()};
    std::conditional_t<projects, projection_type, keras::detail::no_layer> projection = make_projection();
    std::conditional_t<projects && ProjectionNorm, projection_bn_type, keras::detail::no_layer> projection_bn = make_projection_bn();

    template <class X, class Training> auto call(const X& x, Training training) const {
      auto y = bn_b(conv_b(relu(bn_a(conv_a(x, training), training)), training), training);
      if constexpr (!projects) return relu(x + y);
      else if constexpr (ProjectionNorm) return relu(projection_bn(projection(x, training), training) + y);
      else return relu(projection(x, training) + y);
    }

    /// Its embedded form, for keras::export_header: the main path's layers (each through
    /// export_layer(name, built layer), reading the one before), the projection's reading the
    /// block's input, their sum (shortcut + main path, as call adds them) and its relu.
    template <class ExportLayer> void export_embedded(keras::detail::embedded_model& m, const std::string& name, ExportLayer&& export_layer) const {
      const std::size_t input = m.layers.size();  // the activation the block reads
      const auto add = [&](const char* kind, const std::string& layer_name) -> keras::detail::embedded_layer& {
        auto& l = m.layers.emplace_back();
        l.kind = kind, l.name = layer_name, l.activation = std::string(kind) == "Activation" ? "relu" : "linear";
        return l;
      };
      export_layer(conv_a.name, conv_a.layer);
      export_layer(bn_a.name, bn_a.layer);
      add("Activation", name + "_relu_a");
      export_layer(conv_b.name, conv_b.layer);
      export_layer(bn_b.name, bn_b.layer);
      const std::size_t main = m.layers.size();
      std::size_t shortcut = input;
      if constexpr (projects) {
        export_layer(projection.name, projection.layer);
        m.layers.back().inputs = {input};
        if constexpr (ProjectionNorm) export_layer(projection_bn.name, projection_bn.layer);
        shortcut = m.layers.size();
      }
      add("Add", name + "_add").inputs = {shortcut, main};
      add("Activation", name + "_relu");
    }

   private:
    layers::BatchNormalization norm() const { return {.momentum = config.momentum, .epsilon = config.epsilon}; }
    auto make_projection() const {
      if constexpr (projects) return projection_type(projection_spec{.kernel_initializer = config.kernel_initializer});
      else return keras::detail::no_layer{};
    }
    auto make_projection_bn() const {
      if constexpr (projects && ProjectionNorm) return projection_bn_type(norm());
      else return keras::detail::no_layer{};
    }
  };
};

}  // namespace detail

/// @brief ResNet v1's block for CIFAR (keras.io): relu(shortcut(x) + bn(conv(relu(bn(conv(x)))))),
/// two 3x3 SAME convolutions of Filters filters with biases, the first with Strides; the
/// shortcut is x, or where the shape changes a 1x1 convolution with Strides.
template <std::size_t Filters, std::size_t Strides = 1> struct ResidualBlock {
  CTFLOW_KERAS_LAYER_SPEC("ResidualBlock");
  /// @brief The convolutions' kernel initializer, and the BatchNormalizations' momentum and epsilon.
  initializers::Initializer kernel_initializer = initializers::HeNormal();
  double momentum = 0.99, epsilon = 1e-3;
  template <class T, ShapeType In, class D = cpu> using built = typename detail::residual_block<ResidualBlock, Filters, Strides, true, false>::template built<T, In, D>;
};

/// @brief ResNet-18's basic block: the same with convolutions without biases, and a projection
/// followed by BatchNormalization; epsilon 1e-5 as in the paper's implementations.
template <std::size_t Filters, std::size_t Strides = 1> struct BasicBlock {
  CTFLOW_KERAS_LAYER_SPEC("BasicBlock");
  /// @brief The convolutions' kernel initializer, and the BatchNormalizations' momentum and epsilon.
  initializers::Initializer kernel_initializer = initializers::HeNormal();
  double momentum = 0.9, epsilon = 1e-5;
  template <class T, ShapeType In, class D = cpu> using built = typename detail::residual_block<BasicBlock, Filters, Strides, false, true>::template built<T, In, D>;
};

/// @brief ResNet-20 (keras.io's ResNet v1 at depth 20) for Classes classes on 32x32x3 images: a
/// 3x3 convolution of 16 filters with BatchNormalization and ReLU, three stacks of three blocks
/// (16, 32, 64 filters; the second and third start with strides 2), 8x8 average pooling, and a
/// softmax Dense; on device D.
template <std::size_t Classes = 10, class D = cpu>
using ResNet20 = Sequential<Input<float, Shape<32, 32, 3>, dyn, D>, layers::Conv2D<16, 3, layers::same>, layers::BatchNormalization, layers::ReLU,
                            ResidualBlock<16>, ResidualBlock<16>, ResidualBlock<16>,       //
                            ResidualBlock<32, 2>, ResidualBlock<32>, ResidualBlock<32>,    //
                            ResidualBlock<64, 2>, ResidualBlock<64>, ResidualBlock<64>,    //
                            layers::AveragePooling2D<8>, layers::Flatten, layers::Dense<Classes, activations::softmax>>;

/// @brief ResNet-18 for Classes classes on 224x224x3 images: a 7x7 convolution of 64 filters
/// with strides 2, BatchNormalization and ReLU, 3x3 max pooling with strides 2, four stages of
/// two blocks (64, 128, 256, 512 filters; convolutions without biases; stages 2 to 4 start with
/// strides 2 and a projection with BatchNormalization), global average pooling, a softmax Dense;
/// on device D.
template <std::size_t Classes = 1000, class D = cpu>
using ResNet18 = Sequential<Input<float, Shape<224, 224, 3>, dyn, D>, layers::Conv2D<64, 7, layers::same, layers::strides<2>, layers::use_bias<false>>,
                            layers::BatchNormalization, layers::ReLU, layers::MaxPooling2D<3, layers::strides<2>, layers::same>,
                            BasicBlock<64>, BasicBlock<64>, BasicBlock<128, 2>, BasicBlock<128>,  //
                            BasicBlock<256, 2>, BasicBlock<256>, BasicBlock<512, 2>, BasicBlock<512>,
                            layers::GlobalAveragePooling2D, layers::Dense<Classes, activations::softmax>>;

}  // namespace ctflow::keras::applications
