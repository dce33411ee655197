#pragma once
/// @file
/// @brief keras.layers.Conv1D: activation(conv1d(x, kernel) + bias) over [batch, steps, channels];
/// kernel [k, input channels, Filters], bias [Filters].
///
///     layers::Conv1D<16, 3, layers::same, activations::relu>

#include <string>
#include <tuple>

#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/kernel_and_bias.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/ops/nn/conv.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.Conv1D(filters, kernel_size, strides, padding, dilation_rate, activation, use_bias, ...).
template <std::size_t Filters, std::size_t Kernel, auto... Options> struct Conv1D {
  /// @brief The rank of its input (the batch axis included) and Keras's words for it.
  static constexpr std::size_t input_rank = 3;
  static constexpr const char* input_form = "[batch, steps, channels] with static channels";
  static_assert((detail::allowed<Options, detail::any_activation, nn::padding, strides_t, dilation_rate_t, use_bias_t> && ...),
                "ctflow::keras::Conv1D: options are an activation, layers::same / valid, layers::strides<...>, "
                "layers::dilation_rate<...> and layers::use_bias<...>");
  static constexpr std::size_t stride = detail::option<strides_t, strides<1>, Options...>().s.h;
  static constexpr std::size_t dilation = detail::option<dilation_rate_t, dilation_rate<1>, Options...>().d.h;
  static constexpr nn::padding padding = detail::option<nn::padding, valid, Options...>();
  static constexpr auto activation = detail::activation_option<Options...>();
  static constexpr bool has_bias = detail::option<use_bias_t, use_bias<true>, Options...>().on;

  CTFLOW_KERAS_LAYER_SPEC("Conv1D");
  initializers::Initializer kernel_initializer = initializers::GlorotUniform();
  initializers::Initializer bias_initializer = initializers::Zeros();
  regularizers::Regularizer kernel_regularizer{}, bias_regularizer{};

  /// @brief Keras's get_config: filters, kernel_size, strides, padding, data_format, dilation_rate,
  /// groups, activation, use_bias, the initializers, regularizers and constraints.
  void get_config(config_dict& c) const { detail::conv_config<1, padding, false>(c, *this, Filters, {Kernel, 1}, {stride, 1}, {dilation, 1}); }

  template <class T, ShapeType In, class D = cpu> struct built : detail::kernel_and_bias<Conv1D, T, Shape<Kernel, In::extents[2], Filters>, Filters, D> {
    static_assert(In::rank == 3, "ctflow::keras::Conv1D: its input must be [batch, steps, channels]");
    static constexpr std::size_t channels = In::extents[2];
    static_assert(channels != dyn, "ctflow::keras::Conv1D: the input's channels must have a static extent");
    static constexpr const char* class_name = "Conv1D";
    using value_type = T;
    using input_shape = In;
    using output_shape = Shape<detail::extent<In, 0>, extent_t(nn::detail::static_spatial(In::extents[1], Kernel, stride, dilation, padding, 1)), Filters>;
    using built::kernel_and_bias::kernel_and_bias;
    template <class X, class Training> auto call(const X& x, Training) const {
      return this->bias_and_activation(nn::conv1d<padding, stride, dilation>(x, this->kernel));
    }
  };
};

}  // namespace ctflow::keras::layers
