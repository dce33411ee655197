#pragma once
/// @file
/// @brief keras.layers.DepthwiseConv2D and SeparableConv2D: each input channel convolved with its
/// own depth_multiplier filters (kernel [kh, kw, channels, multiplier], bias [channels *
/// multiplier]); the separable form follows with a 1x1 convolution to Filters outputs
/// (depthwise_kernel, pointwise_kernel [1, 1, channels * multiplier, Filters], bias [Filters]).
///
///     layers::DepthwiseConv2D<3, layers::same, layers::depth_multiplier<2>>
///     layers::SeparableConv2D<64, 3, activations::relu, layers::same>

#include <string>
#include <tuple>
#include <variant>

#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/conv2d.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/ops/nn/depthwise.hpp>

namespace ctflow::keras::layers {

namespace detail {
/// The structure options depthwise and separable convolutions share.
template <auto... Options> struct depthwise_options {
  /// The rank of its input (the batch axis included) and Keras's words for it.
  static constexpr std::size_t input_rank = 4;
  static constexpr const char* input_form = "[batch, height, width, channels] with static channels";
  static_assert((allowed<Options, any_activation, nn::padding, strides_t, dilation_rate_t, use_bias_t, depth_multiplier_t> && ...),
                "ctflow::keras: a depthwise or separable convolution's options are an activation, layers::same / valid, "
                "layers::strides<...>, layers::dilation_rate<...>, layers::depth_multiplier<...> and layers::use_bias<...>");
  static constexpr size2 stride = option<strides_t, strides<1>, Options...>().s;
  static constexpr size2 dilation = option<dilation_rate_t, dilation_rate<1>, Options...>().d;
  static constexpr nn::padding padding = option<nn::padding, valid, Options...>();
  static constexpr auto activation = activation_option<Options...>();
  static constexpr bool has_bias = option<use_bias_t, use_bias<true>, Options...>().on;
  static constexpr std::size_t multiplier = option<depth_multiplier_t, depth_multiplier<1>, Options...>().m;
  /// Keras's kernel_size, strides, padding, data_format, dilation_rate, activation and use_bias.
  static void window_config(config_dict& c, size2 kernel) {
    detail::window_config<2, padding>(c, kernel, stride, dilation);
    c.set("activation", keras_activation_name(activation)).set("use_bias", has_bias);
  }
};
}  // namespace detail

/// @brief keras.layers.DepthwiseConv2D(kernel_size, strides, padding, depth_multiplier, dilation_rate, activation, use_bias, ...).
template <auto Kernel, auto... Options> struct DepthwiseConv2D : detail::depthwise_options<Options...> {
  using opt = detail::depthwise_options<Options...>;
  static constexpr size2 kernel_size = detail::as_size<Kernel>();

  CTFLOW_KERAS_LAYER_SPEC("DepthwiseConv2D");
  initializers::Initializer depthwise_initializer = initializers::GlorotUniform();
  initializers::Initializer bias_initializer = initializers::Zeros();
  regularizers::Regularizer depthwise_regularizer{}, bias_regularizer{};

  /// @brief Keras's get_config: depth_multiplier, the window, activation, use_bias, the
  /// initializers, regularizers and constraints.
  void get_config(config_dict& c) const {
    c.set("depth_multiplier", opt::multiplier);
    opt::window_config(c, kernel_size);
    c.set("depthwise_initializer", depthwise_initializer).set("bias_initializer", bias_initializer);
    c.set("depthwise_regularizer", depthwise_regularizer).set("bias_regularizer", bias_regularizer).set("activity_regularizer", nullptr);
    c.set("depthwise_constraint", nullptr).set("bias_constraint", nullptr);
  }

  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(In::rank == 4, "ctflow::keras::DepthwiseConv2D: its input must be [batch, height, width, channels]");
    static constexpr std::size_t channels = In::extents[3];
    static_assert(channels != dyn, "ctflow::keras::DepthwiseConv2D: the input's channels must have a static extent");
    static constexpr std::size_t outputs = channels * opt::multiplier;
    static constexpr const char* class_name = "DepthwiseConv2D";
    using spec = DepthwiseConv2D;  // its window, strides, padding, activation and bias
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = Shape<detail::extent<In, 0>, extent_t(detail::out_h<In, kernel_size, opt::stride, opt::dilation, opt::padding>()),
                               extent_t(detail::out_w<In, kernel_size, opt::stride, opt::dilation, opt::padding>()), outputs>;
    using kernel_shape = Shape<kernel_size.h, kernel_size.w, channels, opt::multiplier>;
    regularizers::Regularizer kernel_regularizer, bias_regularizer;
    Variable<T, kernel_shape, D> kernel;
    std::conditional_t<opt::has_bias, Variable<T, Shape<outputs>, D>, std::monostate> bias;
    explicit built(const DepthwiseConv2D& c)
        : kernel_regularizer(c.depthwise_regularizer), bias_regularizer(c.bias_regularizer),
          kernel(c.depthwise_initializer.template operator()<T, kernel_shape, D>(), "kernel") {
      if constexpr (opt::has_bias) bias = Variable<T, Shape<outputs>, D>(c.bias_initializer.template operator()<T, Shape<outputs>, D>(), "bias");
    }
    auto weights() {
      if constexpr (opt::has_bias) return std::tie(kernel, bias);
      else return std::tie(kernel);
    }
    auto weight_regularizers() const {
      if constexpr (opt::has_bias) return std::tie(kernel_regularizer, bias_regularizer);
      else return std::tie(kernel_regularizer);
    }
    template <class X, class Training> auto call(const X& x, Training) const {
      auto y = nn::depthwise_conv2d<opt::padding, opt::stride.h, opt::stride.w, opt::dilation.h, opt::dilation.w>(x, kernel);
      if constexpr (opt::has_bias) return opt::activation(std::move(y) + bias);
      else return opt::activation(std::move(y));
    }
  };
};

/// @brief keras.layers.SeparableConv2D(filters, kernel_size, strides, padding, depth_multiplier, activation, use_bias, ...).
template <std::size_t Filters, auto Kernel, auto... Options> struct SeparableConv2D : detail::depthwise_options<Options...> {
  using opt = detail::depthwise_options<Options...>;
  static constexpr size2 kernel_size = detail::as_size<Kernel>();

  CTFLOW_KERAS_LAYER_SPEC("SeparableConv2D");
  initializers::Initializer depthwise_initializer = initializers::GlorotUniform();
  initializers::Initializer pointwise_initializer = initializers::GlorotUniform();
  initializers::Initializer bias_initializer = initializers::Zeros();
  regularizers::Regularizer depthwise_regularizer{}, pointwise_regularizer{}, bias_regularizer{};

  /// @brief Keras's get_config: depth_multiplier, filters, the window, activation, use_bias, the
  /// initializers, regularizers and constraints.
  void get_config(config_dict& c) const {
    c.set("depth_multiplier", opt::multiplier).set("filters", Filters);
    opt::window_config(c, kernel_size);
    c.set("depthwise_initializer", depthwise_initializer).set("pointwise_initializer", pointwise_initializer).set("bias_initializer", bias_initializer);
    c.set("depthwise_regularizer", depthwise_regularizer).set("pointwise_regularizer", pointwise_regularizer).set("bias_regularizer", bias_regularizer);
    c.set("activity_regularizer", nullptr).set("depthwise_constraint", nullptr).set("pointwise_constraint", nullptr).set("bias_constraint", nullptr);
  }

  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(In::rank == 4, "ctflow::keras::SeparableConv2D: its input must be [batch, height, width, channels]");
    static constexpr std::size_t channels = In::extents[3];
    static_assert(channels != dyn, "ctflow::keras::SeparableConv2D: the input's channels must have a static extent");
    static constexpr const char* class_name = "SeparableConv2D";
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = Shape<detail::extent<In, 0>, extent_t(detail::out_h<In, kernel_size, opt::stride, opt::dilation, opt::padding>()),
                               extent_t(detail::out_w<In, kernel_size, opt::stride, opt::dilation, opt::padding>()), Filters>;
    using depthwise_shape = Shape<kernel_size.h, kernel_size.w, channels, opt::multiplier>;
    using pointwise_shape = Shape<1, 1, channels * opt::multiplier, Filters>;
    regularizers::Regularizer depthwise_regularizer, pointwise_regularizer, bias_regularizer;
    Variable<T, depthwise_shape, D> depthwise_kernel;
    Variable<T, pointwise_shape, D> pointwise_kernel;
    std::conditional_t<opt::has_bias, Variable<T, Shape<Filters>, D>, std::monostate> bias;
    explicit built(const SeparableConv2D& c)
        : depthwise_regularizer(c.depthwise_regularizer), pointwise_regularizer(c.pointwise_regularizer), bias_regularizer(c.bias_regularizer),
          depthwise_kernel(c.depthwise_initializer.template operator()<T, depthwise_shape, D>(), "depthwise_kernel"),
          pointwise_kernel(c.pointwise_initializer.template operator()<T, pointwise_shape, D>(), "pointwise_kernel") {
      if constexpr (opt::has_bias) bias = Variable<T, Shape<Filters>, D>(c.bias_initializer.template operator()<T, Shape<Filters>, D>(), "bias");
    }
    auto weights() {
      if constexpr (opt::has_bias) return std::tie(depthwise_kernel, pointwise_kernel, bias);
      else return std::tie(depthwise_kernel, pointwise_kernel);
    }
    auto weight_regularizers() const {
      if constexpr (opt::has_bias) return std::tie(depthwise_regularizer, pointwise_regularizer, bias_regularizer);
      else return std::tie(depthwise_regularizer, pointwise_regularizer);
    }
    template <class X, class Training> auto call(const X& x, Training) const {
      auto y = nn::separable_conv2d<opt::padding, opt::stride.h, opt::stride.w, opt::dilation.h, opt::dilation.w>(x, depthwise_kernel, pointwise_kernel);
      if constexpr (opt::has_bias) return opt::activation(std::move(y) + bias);
      else return opt::activation(std::move(y));
    }
  };
};

}  // namespace ctflow::keras::layers
