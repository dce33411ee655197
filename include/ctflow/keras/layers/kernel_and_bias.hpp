#pragma once
/// @file
/// @brief What Dense and the convolutions (Conv1D, Conv2D, Conv2DTranspose) share: a kernel and,
/// unless `use_bias<false>`, a bias, made by the spec's initializers, listed in Keras's order with
/// the spec's regularizers, and the bias and activation applied to the layer's product.

#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include <ctflow/core/shape.hpp>
#include <ctflow/core/variable.hpp>
#include <ctflow/keras/config_dict.hpp>
#include <ctflow/keras/layers/options.hpp>

namespace ctflow::keras::layers::detail {

/// The base of such a built layer: Spec its spec (with `has_bias`, `activation` and the
/// kernel's and bias's initializers and regularizers), T the weights' dtype, K the kernel's shape,
/// Units the bias's length, D the device they live on.
template <class Spec, class T, ShapeType K, std::size_t Units, class D> struct kernel_and_bias {
  static constexpr bool has_bias = Spec::has_bias;
  using spec = Spec;  // its structure: window, strides, padding, activation
  using device_type = D;
  Spec config;
  Variable<T, K, D> kernel;
  std::conditional_t<has_bias, Variable<T, Shape<Units>, D>, std::monostate> bias;

  explicit kernel_and_bias(const Spec& c) : config(c), kernel(c.kernel_initializer.template operator()<T, K, D>(), "kernel") {
    if constexpr (has_bias) bias = Variable<T, Shape<Units>, D>(c.bias_initializer.template operator()<T, Shape<Units>, D>(), "bias");
  }
  auto weights() {
    if constexpr (has_bias) return std::tie(kernel, bias);
    else return std::tie(kernel);
  }
  auto weight_regularizers() const {
    if constexpr (has_bias) return std::tie(config.kernel_regularizer, config.bias_regularizer);
    else return std::tie(config.kernel_regularizer);
  }
  /// activation(y + bias), or activation(y) without a bias.
  template <class Y> auto bias_and_activation(Y&& y) const {
    if constexpr (has_bias) return Spec::activation(std::forward<Y>(y) + bias);
    else return Spec::activation(std::forward<Y>(y));
  }
};

/// Keras's activation, use_bias, kernel's and bias's initializers and regularizers, (a
/// convolution's activity_regularizer, with Activity) and constraints (none) of spec s.
template <bool Activity, class Spec> void kernel_and_bias_config(config_dict& c, const Spec& s) {
  c.set("activation", keras_activation_name(Spec::activation)).set("use_bias", Spec::has_bias);
  c.set("kernel_initializer", s.kernel_initializer).set("bias_initializer", s.bias_initializer);
  c.set("kernel_regularizer", s.kernel_regularizer).set("bias_regularizer", s.bias_regularizer);
  if constexpr (Activity) c.set("activity_regularizer", nullptr);
  c.set("kernel_constraint", nullptr).set("bias_constraint", nullptr);
}
/// Keras's get_config of a convolution over N axes (Conv1D, Conv2D; Conv2DTranspose when
/// Transposed) of spec s with the given window and padding P.
template <std::size_t N, nn::padding P, bool Transposed, class Spec>
void conv_config(config_dict& c, const Spec& s, std::size_t filters, size2 kernel, size2 strides, size2 dilation) {
  c.set("filters", filters);
  window_config<N, P, Transposed>(c, kernel, strides, dilation);
  if constexpr (!Transposed) c.set("groups", 1);
  kernel_and_bias_config<true>(c, s);
}

}  // namespace ctflow::keras::layers::detail
