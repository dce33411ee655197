#pragma once
/// @file
/// @brief keras.layers.LayerNormalization over the last axis: each example normalised by its own
/// mean and (biased) variance, then scaled by gamma and shifted by beta.

#include <string>
#include <tuple>

#include <ctflow/keras/config_dict.hpp>
#include <ctflow/keras/layer.hpp>
#include <ctflow/ops/nn/normalization.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.LayerNormalization(axis=-1, epsilon=0.001, center=True, scale=True).
struct LayerNormalization {
  double epsilon = 1e-3;
  CTFLOW_KERAS_LAYER_SPEC("LayerNormalization");
  initializers::Initializer beta_initializer = initializers::Zeros();
  initializers::Initializer gamma_initializer = initializers::Ones();
  regularizers::Regularizer gamma_regularizer{}, beta_regularizer{};

  /// @brief Keras's get_config: axis (the last), epsilon, center and scale (true), rms_scaling
  /// (false), the initializers, regularizers and constraints.
  void get_config(config_dict& c) const {
    c.set("axis", -1).set("epsilon", epsilon).set("center", true).set("scale", true).set("rms_scaling", false);
    c.set("beta_initializer", beta_initializer).set("gamma_initializer", gamma_initializer);
    c.set("beta_regularizer", beta_regularizer).set("gamma_regularizer", gamma_regularizer).set("beta_constraint", nullptr).set("gamma_constraint", nullptr);
  }

  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(In::rank >= 2, "ctflow::keras::LayerNormalization: its input must be [batch, ..., features]");
    static constexpr std::size_t features = In::extents[std::size_t(In::rank - 1)];
    static_assert(features != dyn, "ctflow::keras::LayerNormalization: the input's last axis must have a static extent");
    static constexpr const char* class_name = "LayerNormalization";
    static constexpr bool supports_masking = true;  // passes its input's mask on
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = In;
    using vector = Shape<features>;
    double epsilon;
    regularizers::Regularizer gamma_regularizer, beta_regularizer;
    Variable<T, vector, D> gamma, beta;
    explicit built(const LayerNormalization& c)
        : epsilon(c.epsilon), gamma_regularizer(c.gamma_regularizer), beta_regularizer(c.beta_regularizer), gamma(c.gamma_initializer.template operator()<T, vector, D>(), "gamma"), beta(c.beta_initializer.template operator()<T, vector, D>(), "beta") {}
    auto weights() { return std::tie(gamma, beta); }
    auto weight_regularizers() const { return std::tie(gamma_regularizer, beta_regularizer); }
    template <class X, class Training> auto call(const X& x, Training) const { return nn::layer_normalization(x, gamma, beta, epsilon); }
  };
};


}  // namespace ctflow::keras::layers
