#pragma once
/// @file
/// @brief keras.layers.Dense: activation(x @ kernel + bias) over the last axis of its input (any
/// rank of 2 or more); kernel [input features, Units], bias [Units].
///
///     layers::Dense<128, activations::relu>                 // glorot_uniform kernel, zero bias
///     layers::Dense<10, layers::use_bias<false>>{.kernel_initializer = initializers::HeNormal(7)}

#include <string>
#include <tuple>

#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/kernel_and_bias.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/ops/linalg.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.Dense(units, activation, use_bias, kernel_initializer, ...).
template <std::size_t Units, auto... Options> struct Dense {
  static_assert((detail::allowed<Options, detail::any_activation, use_bias_t> && ...),
                "ctflow::keras::Dense: options are an activation and layers::use_bias<...>");
  static_assert(Units > 0, "ctflow::keras::Dense: units must be positive");
  static constexpr auto activation = detail::activation_option<Options...>();
  static constexpr bool has_bias = detail::option<use_bias_t, use_bias<true>, Options...>().on;

  CTFLOW_KERAS_LAYER_SPEC("Dense");
  initializers::Initializer kernel_initializer = initializers::GlorotUniform();
  initializers::Initializer bias_initializer = initializers::Zeros();
  regularizers::Regularizer kernel_regularizer{}, bias_regularizer{};

  /// @brief Keras's get_config: units, activation, use_bias, the initializers and regularizers,
  /// constraints and quantization_config (none).
  void get_config(config_dict& c) const {
    c.set("units", Units);
    detail::kernel_and_bias_config<false>(c, *this);
    c.set("quantization_config", nullptr);
  }

  template <class T, ShapeType In, class D = cpu> struct built : detail::kernel_and_bias<Dense, T, Shape<(In::rank >= 2 ? In::extents[std::size_t(In::rank - 1)] : 0), Units>, Units, D> {
    static constexpr std::size_t features = In::rank >= 2 ? In::extents[std::size_t(In::rank - 1)] : 0;
    static_assert(In::rank >= 2, "ctflow::keras::Dense: its input must be [batch, ..., features]");
    static_assert(features != dyn, "ctflow::keras::Dense: the input's last axis (its features) must have a static extent");
    static constexpr const char* class_name = "Dense";
    static constexpr bool supports_masking = true;  // passes its input's mask on
    using value_type = T;
    using input_shape = In;
    using output_shape = shape_of<[] {
      auto e = In::extents;
      e[std::size_t(In::rank - 1)] = Units;
      return e;
    }()>;

    using built::kernel_and_bias::kernel_and_bias;
    template <class X, class Training> auto call(const X& x, Training) const {
      if constexpr (In::rank == 2) return this->bias_and_activation(matmul(x, this->kernel));
      else {
        // [..., features] as rows of one product, then back to the input's leading axes.
        auto rows = reshape<Shape<dyn, features>>(x);
        auto d = x.dims();
        d[std::size_t(In::rank - 1)] = Units;
        return this->bias_and_activation(reshape<output_shape>(matmul(rows, this->kernel), d));
      }
    }
  };
};

}  // namespace ctflow::keras::layers
