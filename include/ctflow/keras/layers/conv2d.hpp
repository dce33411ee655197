#pragma once
/// @file
/// @brief keras.layers.Conv2D: activation(conv2d(x, kernel) + bias) over NHWC images; kernel
/// [kh, kw, input channels, Filters], bias [Filters].
///
///     layers::Conv2D<32, 3, activations::relu>                              // 3x3, VALID, strides 1
///     layers::Conv2D<64, layers::size<3, 5>, layers::same, layers::strides<2>>

#include <string>
#include <tuple>

#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/kernel_and_bias.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/ops/nn/conv.hpp>

namespace ctflow::keras::layers {

namespace detail {
/// The output extents of a 2-D window (kernel k, strides s, dilation d, padding p) over NHWC input In.
template <class In, size2 K, size2 S, size2 D, nn::padding P> constexpr std::size_t out_h() {
  return nn::detail::static_spatial(In::extents[1], K.h, S.h, D.h, P, 0);
}
template <class In, size2 K, size2 S, size2 D, nn::padding P> constexpr std::size_t out_w() {
  return nn::detail::static_spatial(In::extents[2], K.w, S.w, D.w, P, 1);
}
}  // namespace detail

/// @brief keras.layers.Conv2D(filters, kernel_size, strides, padding, dilation_rate, activation,
/// use_bias, kernel_initializer, ...), channels last.
template <std::size_t Filters, auto Kernel, auto... Options> struct Conv2D {
  /// @brief The rank of its input (the batch axis included) and Keras's words for it.
  static constexpr std::size_t input_rank = 4;
  static constexpr const char* input_form = "[batch, height, width, channels] with static channels";
  static_assert((detail::allowed<Options, detail::any_activation, nn::padding, strides_t, dilation_rate_t, use_bias_t> && ...),
                "ctflow::keras::Conv2D: options are an activation, layers::same / valid, layers::strides<...>, "
                "layers::dilation_rate<...> and layers::use_bias<...>");
  static_assert(Filters > 0, "ctflow::keras::Conv2D: filters must be positive");
  static constexpr size2 kernel_size = detail::as_size<Kernel>();
  static constexpr size2 stride = detail::option<strides_t, strides<1>, Options...>().s;
  static constexpr size2 dilation = detail::option<dilation_rate_t, dilation_rate<1>, Options...>().d;
  static constexpr nn::padding padding = detail::option<nn::padding, valid, Options...>();
  static constexpr auto activation = detail::activation_option<Options...>();
  static constexpr bool has_bias = detail::option<use_bias_t, use_bias<true>, Options...>().on;

  CTFLOW_KERAS_LAYER_SPEC("Conv2D");
  initializers::Initializer kernel_initializer = initializers::GlorotUniform();
  initializers::Initializer bias_initializer = initializers::Zeros();
  regularizers::Regularizer kernel_regularizer{}, bias_regularizer{};

  /// @brief Keras's get_config: filters, kernel_size, strides, padding, data_format, dilation_rate,
  /// groups, activation, use_bias, the initializers, regularizers and constraints.
  void get_config(config_dict& c) const { detail::conv_config<2, padding, false>(c, *this, Filters, kernel_size, stride, dilation); }

  template <class T, ShapeType In, class D = cpu> struct built : detail::kernel_and_bias<Conv2D, T, Shape<kernel_size.h, kernel_size.w, In::extents[3], Filters>, Filters, D> {
    static_assert(In::rank == 4, "ctflow::keras::Conv2D: its input must be [batch, height, width, channels]");
    static constexpr std::size_t channels = In::extents[3];
    static_assert(channels != dyn, "ctflow::keras::Conv2D: the input's channels must have a static extent");
    static constexpr const char* class_name = "Conv2D";
    using value_type = T;
    using input_shape = In;
    using output_shape = Shape<detail::extent<In, 0>, extent_t(detail::out_h<In, kernel_size, stride, dilation, padding>()),
                               extent_t(detail::out_w<In, kernel_size, stride, dilation, padding>()), Filters>;

    using built::kernel_and_bias::kernel_and_bias;
    template <class X, class Training> auto call(const X& x, Training) const {
      return this->bias_and_activation(nn::conv2d<padding, stride.h, stride.w, dilation.h, dilation.w>(x, this->kernel));
    }
  };
};

}  // namespace ctflow::keras::layers
