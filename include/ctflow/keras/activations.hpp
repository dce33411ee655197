#pragma once
/// @file
/// @brief keras.activations as compile-time objects: a layer's activation is part of its type
/// (`layers::Dense<128, activations::relu>`) and is applied to the layer's expression, so that it
/// fuses into the same loop.

#include <type_traits>
#include <utility>

#include <ctflow/ops/math.hpp>
#include <ctflow/ops/nn/losses.hpp>

namespace ctflow::keras::activations {

// Each activation is an empty type (a structural value, so a template argument) with Keras's
// name and a call that builds the ctflow expression.
#define CTFLOW_KERAS_ACTIVATION(NAME, ...)                                                      \
  struct NAME##_t {                                                                             \
    static constexpr const char* name = #NAME;                                                  \
    template <Expression X> auto operator()(X&& x) const { return __VA_ARGS__; }                \
  };                                                                                            \
  inline constexpr NAME##_t NAME{};

/// @brief keras.activations.linear: the identity.
CTFLOW_KERAS_ACTIVATION(linear, std::remove_cvref_t<X>(std::forward<X>(x)))
/// @brief keras.activations.relu.
CTFLOW_KERAS_ACTIVATION(relu, ctflow::relu(std::forward<X>(x)))
/// @brief keras.activations.relu6: min(max(x, 0), 6).
CTFLOW_KERAS_ACTIVATION(relu6, ctflow::relu6(std::forward<X>(x)))
/// @brief keras.activations.sigmoid.
CTFLOW_KERAS_ACTIVATION(sigmoid, ctflow::sigmoid(std::forward<X>(x)))
/// @brief keras.activations.tanh.
CTFLOW_KERAS_ACTIVATION(tanh, ctflow::tanh(std::forward<X>(x)))
/// @brief keras.activations.softmax over the last axis.
CTFLOW_KERAS_ACTIVATION(softmax, nn::softmax(x))
/// @brief keras.activations.log_softmax over the last axis.
CTFLOW_KERAS_ACTIVATION(log_softmax, nn::log_softmax(x))
/// @brief keras.activations.elu (alpha 1).
CTFLOW_KERAS_ACTIVATION(elu, ctflow::elu(std::forward<X>(x)))
/// @brief keras.activations.selu.
CTFLOW_KERAS_ACTIVATION(selu, ctflow::selu(std::forward<X>(x)))
/// @brief keras.activations.softplus: log(1 + e^x).
CTFLOW_KERAS_ACTIVATION(softplus, ctflow::softplus(std::forward<X>(x)))
/// @brief keras.activations.softsign: x / (1 + |x|).
CTFLOW_KERAS_ACTIVATION(softsign, ctflow::softsign(std::forward<X>(x)))
/// @brief keras.activations.silu (also swish): x * sigmoid(x).
CTFLOW_KERAS_ACTIVATION(silu, ctflow::swish(std::forward<X>(x)))
/// @brief keras.activations.swish, the same as silu.
CTFLOW_KERAS_ACTIVATION(swish, ctflow::swish(std::forward<X>(x)))
/// @brief keras.activations.gelu, exact (erf), as Keras's default approximate=False.
CTFLOW_KERAS_ACTIVATION(gelu, ctflow::gelu(std::forward<X>(x)))
/// @brief keras.activations.exponential: e^x.
CTFLOW_KERAS_ACTIVATION(exponential, ctflow::exp(std::forward<X>(x)))
/// @brief keras.activations.leaky_relu (negative_slope 0.2).
CTFLOW_KERAS_ACTIVATION(leaky_relu, ctflow::leaky_relu(std::forward<X>(x), 0.2))
/// @brief keras.activations.hard_sigmoid: relu6(x + 3) / 6.
CTFLOW_KERAS_ACTIVATION(hard_sigmoid, ctflow::relu6(std::forward<X>(x) + 3.0) * (1.0 / 6.0))
/// @brief keras.activations.mish: x * tanh(softplus(x)).
CTFLOW_KERAS_ACTIVATION(mish, x * ctflow::tanh(ctflow::softplus(x)))

#undef CTFLOW_KERAS_ACTIVATION

/// @brief Whether activation A is the identity (a layer then adds no node for it).
template <auto A> inline constexpr bool is_linear = std::is_same_v<std::remove_cvref_t<decltype(A)>, linear_t>;

}  // namespace ctflow::keras::activations
