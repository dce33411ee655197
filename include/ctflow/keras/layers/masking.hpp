#pragma once
/// @file
/// @brief keras.layers.Masking(mask_value=0.0): masks the steps of a sequence [batch, timesteps,
/// features] whose features all equal mask_value (the layers after it skip them: LSTM and GRU
/// keep their state), and sets those steps to zero.
///
///     keras::Sequential<keras::Input<float, Shape<20, 8>>, layers::Masking, layers::LSTM<32>, layers::Dense<1>>

#include <tuple>

#include <ctflow/keras/config_dict.hpp>
#include <ctflow/keras/layer.hpp>
#include <ctflow/ops/reduction.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.Masking(mask_value=0.0).
struct Masking {
  double mask_value = 0.0;
  CTFLOW_KERAS_LAYER_SPEC("Masking");
  /// @brief Keras's get_config: mask_value.
  void get_config(config_dict& c) const { c.set("mask_value", mask_value); }
  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(In::rank >= 2, "ctflow::keras::Masking: its input must be [batch, ..., features]");
    static constexpr const char* class_name = "Masking";
    static constexpr bool produces_mask = true;
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = In;
    double mask_value;
    explicit built(const Masking& c) : mask_value(c.mask_value) {}
    auto weights() { return std::tuple<>(); }
    /// The steps whose features are not all mask_value, as Keras's compute_mask.
    bool masks() const { return true; }
    template <class X> auto compute_mask(const X& x) const { return reduce_any<-1>(not_equal(x, T(mask_value))); }
    template <class X, class Training> auto call(const X& x, Training) const {
      return x * cast<T>(reduce_any<-1>(not_equal(x, T(mask_value)), keepdims));
    }
  };
};

}  // namespace ctflow::keras::layers
