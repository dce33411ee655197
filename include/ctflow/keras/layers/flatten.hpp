#pragma once
/// @file
/// @brief keras.layers.Flatten: [batch, ...] to [batch, product of the rest].

#include <string>
#include <tuple>

#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/ops/array.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.Flatten().
struct Flatten {
  CTFLOW_KERAS_LAYER_SPEC("Flatten");
  /// @brief Keras's get_config: data_format.
  void get_config(config_dict& c) const { c.set("data_format", "channels_last"); }
  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(In::rank >= 1, "ctflow::keras::Flatten: its input must have a batch axis");
    static constexpr std::size_t features = [] {
      std::size_t n = 1;
      for (int i = 1; i < In::rank; ++i) n = In::extents[std::size_t(i)] == dyn || n == dyn ? std::size_t(dyn) : n * In::extents[std::size_t(i)];
      return n;
    }();
    static_assert(features != dyn, "ctflow::keras::Flatten: every axis but the batch must have a static extent");
    static constexpr const char* class_name = "Flatten";
    /// Its call is a reshape of its input: its output is a view of the input's memory.
    static constexpr bool views_input = true;
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = Shape<detail::extent<In, 0>, extent_t(features)>;
    explicit built(const Flatten&) {}
    auto weights() { return std::tuple<>(); }
    template <class X, class Training> auto call(const X& x, Training) const { return reshape<output_shape>(x); }
  };
};

}  // namespace ctflow::keras::layers
