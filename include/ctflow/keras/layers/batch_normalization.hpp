#pragma once
/// @file
/// @brief keras.layers.BatchNormalization over the last axis (channels last): in training,
/// (x - mean) / sqrt(var + epsilon) * gamma + beta with the batch's statistics (one kernel, and
/// TensorFlow's FusedBatchNormGrad backward), and the moving statistics updated as Keras does
/// (moving = moving * momentum + batch * (1 - momentum), the batch variance biased); in
/// inference, and in training when frozen, the moving statistics.
///
///     layers::BatchNormalization{}                     // momentum 0.99, epsilon 1e-3

#include <string>
#include <tuple>
#include <utility>

#include <ctflow/keras/config_dict.hpp>
#include <ctflow/keras/layer.hpp>
#include <ctflow/ops/nn/normalization.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.BatchNormalization(axis=-1, momentum=0.99, epsilon=0.001, ...).
struct BatchNormalization {
  double momentum = 0.99;
  double epsilon = 1e-3;
  CTFLOW_KERAS_LAYER_SPEC("BatchNormalization");
  initializers::Initializer beta_initializer = initializers::Zeros();
  initializers::Initializer gamma_initializer = initializers::Ones();
  initializers::Initializer moving_mean_initializer = initializers::Zeros();
  initializers::Initializer moving_variance_initializer = initializers::Ones();
  regularizers::Regularizer gamma_regularizer{}, beta_regularizer{};

  /// @brief Keras's get_config: axis (the last), momentum, epsilon, center and scale (true), the
  /// initializers, regularizers and constraints, and no synchronized or renormalized batches.
  void get_config(config_dict& c) const {
    c.set("axis", -1).set("momentum", momentum).set("epsilon", epsilon).set("center", true).set("scale", true);
    c.set("beta_initializer", beta_initializer).set("gamma_initializer", gamma_initializer);
    c.set("moving_mean_initializer", moving_mean_initializer).set("moving_variance_initializer", moving_variance_initializer);
    c.set("beta_regularizer", beta_regularizer).set("gamma_regularizer", gamma_regularizer).set("beta_constraint", nullptr).set("gamma_constraint", nullptr);
    c.set("synchronized", false).set("renorm", false).set("renorm_clipping", nullptr).set("renorm_momentum", 0.99);
  }

  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(In::rank >= 2, "ctflow::keras::BatchNormalization: its input must be [batch, ..., channels]");
    static constexpr std::size_t channels = In::extents[std::size_t(In::rank - 1)];
    static_assert(channels != dyn, "ctflow::keras::BatchNormalization: the input's last axis must have a static extent");
    static constexpr const char* class_name = "BatchNormalization";
    /// Frozen, it runs with the moving statistics even in training (Keras's rule).
    static constexpr bool inference_when_frozen = true;
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = In;
    using vector = Shape<channels>;

    double momentum, epsilon;
    regularizers::Regularizer gamma_regularizer, beta_regularizer;
    Variable<T, vector, D> gamma, beta, moving_mean, moving_variance;
    bool trainable = true;

    explicit built(const BatchNormalization& c)
        : momentum(c.momentum),
          epsilon(c.epsilon),
          gamma_regularizer(c.gamma_regularizer),
          beta_regularizer(c.beta_regularizer),
          gamma(c.gamma_initializer.template operator()<T, vector, D>(), "gamma"),
          beta(c.beta_initializer.template operator()<T, vector, D>(), "beta"),
          moving_mean(c.moving_mean_initializer.template operator()<T, vector, D>(), "moving_mean", false),
          moving_variance(c.moving_variance_initializer.template operator()<T, vector, D>(), "moving_variance", false) {}
    auto weights() { return std::tie(gamma, beta, moving_mean, moving_variance); }
    auto weight_regularizers() const {
      static const regularizers::Regularizer none{};
      return std::tie(gamma_regularizer, beta_regularizer, none, none);
    }
    /// In training, the batch's statistics normalize x, and the same evaluation moves the moving
    /// statistics toward them (once per evaluation: a model's call records it once).
    template <class X, class Training> auto call(const X& x, Training training) const {
      if constexpr (training) {
        auto y = nn::detail::batch_norm_node(x, gamma, beta, epsilon);
        y.k.moving = {const_cast<T*>(moving_mean.data()), const_cast<T*>(moving_variance.data()), momentum};
        return y;
      } else {
        return nn::batch_normalization(x, moving_mean, moving_variance, beta, gamma, epsilon);
      }
    }
  };
};


}  // namespace ctflow::keras::layers
