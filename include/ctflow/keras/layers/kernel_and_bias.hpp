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

namespace ctflow::keras::layers::detail {

/// The base of such a built layer: Spec its spec (with `has_bias`, `activation` and the
/// kernel's and bias's initializers and regularizers), T the weights' dtype, K the kernel's shape,
/// Units the bias's length.
template <class Spec, class T, ShapeType K, std::size_t Units> struct kernel_and_bias {
  static constexpr bool has_bias = Spec::has_bias;
  Spec config;
  Variable<T, K> kernel;
  std::conditional_t<has_bias, Variable<T, Shape<Units>>, std::monostate> bias;

  explicit kernel_and_bias(const Spec& c) : config(c), kernel(c.kernel_initializer.template operator()<T, K>(), "kernel") {
    if constexpr (has_bias) bias = Variable<T, Shape<Units>>(c.bias_initializer.template operator()<T, Shape<Units>>(), "bias");
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

}  // namespace ctflow::keras::layers::detail
