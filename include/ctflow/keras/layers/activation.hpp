#pragma once
/// @file
/// @brief keras.layers.Activation, ReLU, LeakyReLU and Softmax: an activation as a layer.
///
///     layers::Activation<activations::tanh>
///     layers::ReLU{.max_value = 6}      layers::LeakyReLU{.negative_slope = 0.1}      layers::Softmax<>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/ops/nn/losses.hpp>

namespace ctflow::keras::layers {

namespace detail {
/// A layer without weights that keeps its input's shape: F(x) in both modes.
template <const char* Name, class F> struct elementwise_layer {
  template <class T, ShapeType In, class D = cpu> struct built {
    static constexpr const char* class_name = Name;
    using spec = F;  // what it applies
    static constexpr bool supports_masking = true;  // passes its input's mask on
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = In;
    F f;
    template <class Spec> explicit built(const Spec& c) : f(c) {}
    auto weights() { return std::tuple<>(); }
    template <class X, class Training> auto call(const X& x, Training) const { return f(x); }
  };
};
inline constexpr char activation_name[] = "Activation";
inline constexpr char relu_name[] = "ReLU";
inline constexpr char leaky_relu_name[] = "LeakyReLU";
inline constexpr char softmax_name[] = "Softmax";
}  // namespace detail

/// @brief keras.layers.Activation(activation).
template <auto A> struct Activation {
  static_assert(detail::activation_object<std::remove_cvref_t<decltype(A)>>, "ctflow::keras::Activation: give one of keras::activations");
  CTFLOW_KERAS_LAYER_SPEC("Activation");
  /// @brief Keras's get_config: activation.
  void get_config(config_dict& c) const { c.set("activation", detail::keras_activation_name(A)); }
  struct apply {
    static constexpr auto activation = A;
    explicit apply(const Activation&) {}
    template <class X> auto operator()(const X& x) const { return A(x); }
  };
  template <class T, ShapeType In, class D = cpu> using built = typename detail::elementwise_layer<detail::activation_name, apply>::template built<T, In, D>;
};

/// @brief keras.layers.ReLU(max_value=None, negative_slope=0, threshold=0): x from the threshold
/// up to max_value (and max_value above it), negative_slope * (x - threshold) below it.
struct ReLU {
  double max_value = std::numeric_limits<double>::infinity();
  double negative_slope = 0.0;
  double threshold = 0.0;
  CTFLOW_KERAS_LAYER_SPEC("ReLU");
  /// @brief Keras's get_config: max_value (null when infinite), negative_slope and threshold.
  void get_config(config_dict& c) const {
    if (std::isinf(max_value) && max_value > 0) c.set("max_value", nullptr);
    else c.set("max_value", max_value);
    c.set("negative_slope", negative_slope).set("threshold", threshold);
  }
  struct apply {
    double max_value, negative_slope, threshold;
    explicit apply(const ReLU& c) : max_value(c.max_value), negative_slope(c.negative_slope), threshold(c.threshold) {}
    template <class X> auto operator()(const X& x) const {
      using T = value_t<X>;
      return where(x >= T(threshold), minimum(x, T(max_value)), (x - T(threshold)) * T(negative_slope));
    }
  };
  template <class T, ShapeType In, class D = cpu> using built = typename detail::elementwise_layer<detail::relu_name, apply>::template built<T, In, D>;
};

/// @brief keras.layers.LeakyReLU(negative_slope=0.3).
struct LeakyReLU {
  double negative_slope = 0.3;
  CTFLOW_KERAS_LAYER_SPEC("LeakyReLU");
  /// @brief Keras's get_config: negative_slope.
  void get_config(config_dict& c) const { c.set("negative_slope", negative_slope); }
  struct apply {
    double negative_slope;
    explicit apply(const LeakyReLU& c) : negative_slope(c.negative_slope) {}
    template <class X> auto operator()(const X& x) const { return leaky_relu(x, negative_slope); }
  };
  template <class T, ShapeType In, class D = cpu> using built = typename detail::elementwise_layer<detail::leaky_relu_name, apply>::template built<T, In, D>;
};

/// @brief keras.layers.Softmax(axis=-1).
template <int Axis = -1> struct Softmax {
  CTFLOW_KERAS_LAYER_SPEC("Softmax");
  /// @brief Keras's get_config: axis.
  void get_config(config_dict& c) const { c.set("axis", Axis); }
  struct apply {
    static constexpr int axis = Axis;
    explicit apply(const Softmax&) {}
    template <class X> auto operator()(const X& x) const { return nn::softmax<Axis>(x); }
  };
  template <class T, ShapeType In, class D = cpu> using built = typename detail::elementwise_layer<detail::softmax_name, apply>::template built<T, In, D>;
};

}  // namespace ctflow::keras::layers
