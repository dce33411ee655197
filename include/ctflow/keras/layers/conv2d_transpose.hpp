#pragma once
/// @file
/// @brief keras.layers.Conv2DTranspose: the adjoint of a convolution (a learned upsampling); kernel
/// [kh, kw, Filters, input channels] (outputs before inputs, as Keras), bias [Filters]. The
/// output's height is in * stride with SAME, in * stride + max(window - stride, 0) with VALID.
///
///     layers::Conv2DTranspose<32, 3, layers::strides<2>, layers::same, activations::relu>

#include <string>
#include <tuple>

#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/kernel_and_bias.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/ops/nn/conv.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.Conv2DTranspose(filters, kernel_size, strides, padding, dilation_rate, activation, use_bias, ...).
template <std::size_t Filters, auto Kernel, auto... Options> struct Conv2DTranspose {
  /// @brief The rank of its input (the batch axis included) and Keras's words for it.
  static constexpr std::size_t input_rank = 4;
  static constexpr const char* input_form = "[batch, height, width, channels] with static channels";
  static_assert((detail::allowed<Options, detail::any_activation, nn::padding, strides_t, dilation_rate_t, use_bias_t> && ...),
                "ctflow::keras::Conv2DTranspose: options are an activation, layers::same / valid, layers::strides<...>, "
                "layers::dilation_rate<...> and layers::use_bias<...>");
  static constexpr size2 kernel_size = detail::as_size<Kernel>();
  static constexpr size2 stride = detail::option<strides_t, strides<1>, Options...>().s;
  static constexpr size2 dilation = detail::option<dilation_rate_t, dilation_rate<1>, Options...>().d;
  static constexpr nn::padding padding = detail::option<nn::padding, valid, Options...>();
  static constexpr auto activation = detail::activation_option<Options...>();
  static constexpr bool has_bias = detail::option<use_bias_t, use_bias<true>, Options...>().on;

  CTFLOW_KERAS_LAYER_SPEC("Conv2DTranspose");
  initializers::Initializer kernel_initializer = initializers::GlorotUniform();
  initializers::Initializer bias_initializer = initializers::Zeros();
  regularizers::Regularizer kernel_regularizer{}, bias_regularizer{};

  /// @brief Keras's get_config: filters, kernel_size, strides, padding, output_padding (none),
  /// data_format, dilation_rate, activation, use_bias, the initializers, regularizers and constraints.
  void get_config(config_dict& c) const { detail::conv_config<2, padding, true>(c, *this, Filters, kernel_size, stride, dilation); }

  template <class T, ShapeType In, class D = cpu>
  struct built : detail::kernel_and_bias<Conv2DTranspose, T, Shape<kernel_size.h, kernel_size.w, Filters, In::extents[3]>, Filters, D> {
    static_assert(In::rank == 4, "ctflow::keras::Conv2DTranspose: its input must be [batch, height, width, channels]");
    static constexpr std::size_t channels = In::extents[3];
    static_assert(channels != dyn, "ctflow::keras::Conv2DTranspose: the input's channels must have a static extent");
    static constexpr const char* class_name = "Conv2DTranspose";
    using value_type = T;
    using input_shape = In;
    using output_shape = Shape<detail::extent<In, 0>,
                               extent_t(nn::detail::transposed_extent(In::extents[1], kernel_size.h, stride.h, dilation.h, padding, 0)),
                               extent_t(nn::detail::transposed_extent(In::extents[2], kernel_size.w, stride.w, dilation.w, padding, 1)), Filters>;
    using built::kernel_and_bias::kernel_and_bias;
    template <class X, class Training> auto call(const X& x, Training) const {
      return this->bias_and_activation(nn::conv2d_transpose<padding, stride.h, stride.w, dilation.h, dilation.w>(x, this->kernel));
    }
  };
};

}  // namespace ctflow::keras::layers
