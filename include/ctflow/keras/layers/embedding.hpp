#pragma once
/// @file
/// @brief keras.layers.Embedding(input_dim, output_dim): integer indices [batch, ...] to rows of
/// an embeddings matrix [InputDim, OutputDim], giving [batch, ..., OutputDim] of dtype Out.
///
///     keras::Sequential<keras::Input<std::int32_t, Shape<10>>, layers::Embedding<1000, 64>, ...>

#include <string>
#include <tuple>

#include <ctflow/keras/config_dict.hpp>
#include <ctflow/keras/layer.hpp>
#include <ctflow/ops/array.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.Embedding(input_dim, output_dim, embeddings_initializer="uniform").
template <std::size_t InputDim, std::size_t OutputDim, DType Out = float> struct Embedding {
  CTFLOW_KERAS_LAYER_SPEC("Embedding");
  initializers::Initializer embeddings_initializer = initializers::RandomUniform();
  regularizers::Regularizer embeddings_regularizer{};
  /// @brief Whether index 0 is padding: the output then carries a mask (index != 0) that the
  /// layers after it read (LSTM and GRU skip the masked steps) or pass on.
  bool mask_zero = false;

  /// @brief Keras's get_config: input_dim, output_dim, the initializer and regularizers, no
  /// constraint, mask_zero and quantization_config (none).
  void get_config(config_dict& c) const {
    c.set("input_dim", InputDim).set("output_dim", OutputDim).set("embeddings_initializer", embeddings_initializer);
    c.set("embeddings_regularizer", embeddings_regularizer).set("activity_regularizer", nullptr).set("embeddings_constraint", nullptr);
    c.set("mask_zero", mask_zero).set("quantization_config", nullptr);
  }

  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(is_integer_v<T>, "ctflow::keras::Embedding: its input must hold integer indices");
    static constexpr const char* class_name = "Embedding";
    static constexpr bool produces_mask = true;
    using input_value_type = T;
    using value_type = Out;
    using device_type = D;
    using input_shape = In;
    using output_shape = shape_of<[] {
      dims_t<std::size_t(In::rank + 1)> e{};
      for (int i = 0; i < In::rank; ++i) e[std::size_t(i)] = In::extents[std::size_t(i)];
      e[std::size_t(In::rank)] = OutputDim;
      return e;
    }()>;
    Embedding config;
    Variable<Out, Shape<InputDim, OutputDim>, D> embeddings;
    explicit built(const Embedding& c) : config(c), embeddings(c.embeddings_initializer.template operator()<Out, Shape<InputDim, OutputDim>, D>(), "embeddings") {}
    auto weights() { return std::tie(embeddings); }
    auto weight_regularizers() const { return std::tie(config.embeddings_regularizer); }
    template <class X, class Training> auto call(const X& x, Training) const { return gather<0>(embeddings, x); }
    /// Keras's compute_mask: with mask_zero, index != 0.
    bool masks() const { return config.mask_zero; }
    template <class X> auto compute_mask(const X& x) const { return not_equal(x, value_t<X>(0)); }
  };
};

}  // namespace ctflow::keras::layers
