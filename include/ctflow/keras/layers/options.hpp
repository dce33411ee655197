#pragma once
/// @file
/// @brief The structure options of Keras layers, given as template arguments in any order after
/// the layer's own (Keras's keyword arguments that shape the network):
///
///     layers::Conv2D<64, 3, activations::relu, layers::same, layers::strides<2>>
///     layers::Dense<10, activations::softmax, layers::use_bias<false>>
///     layers::MaxPooling2D<3, layers::strides<2>, layers::same>
///
/// Numbers that do not change the network's shapes (rates, initializers, regularizers, seeds) are
/// the layer's fields instead.

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>

#include <ctflow/keras/activations.hpp>
#include <ctflow/keras/config_dict.hpp>
#include <ctflow/ops/nn/conv.hpp>

namespace ctflow::keras::layers {

/// @brief Two extents (height, width): a kernel, pool or stride size given as `size<3, 5>`.
struct size2 {
  std::size_t h = 1, w = 1;
  constexpr bool operator==(const size2&) const = default;
};
/// @brief A kernel or pool size of h x w (an integer n means n x n).
template <std::size_t H, std::size_t W = H> inline constexpr size2 size{H, W};

/// @brief Keras's padding="valid" and padding="same".
inline constexpr nn::padding valid = nn::VALID;
inline constexpr nn::padding same = nn::SAME;

/// @brief strides=(h, w).
struct strides_t {
  size2 s;
  constexpr bool operator==(const strides_t&) const = default;
};
template <std::size_t H, std::size_t W = H> inline constexpr strides_t strides{{H, W}};
/// @brief dilation_rate=(h, w).
struct dilation_rate_t {
  size2 d;
  constexpr bool operator==(const dilation_rate_t&) const = default;
};
template <std::size_t H, std::size_t W = H> inline constexpr dilation_rate_t dilation_rate{{H, W}};
/// @brief use_bias=false.
struct use_bias_t {
  bool on;
  constexpr bool operator==(const use_bias_t&) const = default;
};
template <bool On> inline constexpr use_bias_t use_bias{On};
/// @brief depth_multiplier=m (DepthwiseConv2D, SeparableConv2D).
struct depth_multiplier_t {
  std::size_t m;
  constexpr bool operator==(const depth_multiplier_t&) const = default;
};
template <std::size_t M> inline constexpr depth_multiplier_t depth_multiplier{M};
/// @brief return_sequences=true (LSTM, GRU): the output at every step, not only the last.
struct return_sequences_t {
  bool on;
  constexpr bool operator==(const return_sequences_t&) const = default;
};
template <bool On> inline constexpr return_sequences_t return_sequences{On};
/// @brief go_backwards=true (LSTM, GRU): the sequence is processed from its last step.
struct go_backwards_t {
  bool on;
  constexpr bool operator==(const go_backwards_t&) const = default;
};
template <bool On> inline constexpr go_backwards_t go_backwards{On};
/// @brief reset_after=false (GRU): the reset gate applied before the recurrent product (the
/// original GRU; Keras's default, true, applies it after).
struct reset_after_t {
  bool on;
  constexpr bool operator==(const reset_after_t&) const = default;
};
template <bool On> inline constexpr reset_after_t reset_after{On};
/// @brief recurrent_activation=A (LSTM, GRU: the gates' activation; sigmoid by default).
template <class A> struct recurrent_activation_t {
  A activation;
  constexpr bool operator==(const recurrent_activation_t&) const = default;
};
template <auto A> inline constexpr recurrent_activation_t<std::remove_cvref_t<decltype(A)>> recurrent_activation{A};

namespace detail {

template <class T> concept activation_object = requires { T::name; } && requires(const T& a, const Tensor<float, Shape<1>>& x) { a(x); };

/// The first option of type Want among O..., else the default.
template <class Want, auto Default, auto... O> constexpr auto option() {
  if constexpr (sizeof...(O) == 0) return Default;
  else return []<auto First, auto... Rest>() {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(First)>, Want>) return First;
    else return option<Want, Default, Rest...>();
  }.template operator()<O...>();
}
/// The activation among O..., else Default (linear).
template <auto Default, auto... O> constexpr auto activation_or() {
  if constexpr (sizeof...(O) == 0) return Default;
  else return []<auto First, auto... Rest>() {
    if constexpr (activation_object<std::remove_cvref_t<decltype(First)>>) return First;
    else return activation_or<Default, Rest...>();
  }.template operator()<O...>();
}
template <auto... O> constexpr auto activation_option() { return activation_or<activations::linear, O...>(); }
/// The recurrent activation among O..., else sigmoid.
template <auto... O> constexpr auto recurrent_activation_option() {
  if constexpr (sizeof...(O) == 0) return activations::sigmoid;
  else return []<auto First, auto... Rest>() {
    if constexpr (requires { First.activation; }) return First.activation;
    else return recurrent_activation_option<Rest...>();
  }.template operator()<O...>();
}
/// Marks the recurrent activation among the options a layer allows.
struct any_recurrent_activation {};
/// Marks the activation among the options a layer allows.
struct any_activation {};
/// Whether option O is one of Allowed (any_activation: an activation).
template <auto O, class... Allowed> inline constexpr bool allowed =
    (std::is_same_v<std::remove_cvref_t<decltype(O)>, Allowed> || ...) ||
    (activation_object<std::remove_cvref_t<decltype(O)>> && (std::is_same_v<Allowed, any_activation> || ...)) ||
    (requires { O.activation; } && (std::is_same_v<Allowed, any_recurrent_activation> || ...));

/// Extent I of shape S as a Shape argument (dyn stays dyn).
template <class S, std::size_t I> inline constexpr extent_t extent = extent_t(S::extents[I]);

/// A kernel or pool size given as an integer n (n x n) or as size<h, w>.
template <auto K> constexpr size2 as_size() {
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(K)>, size2>) return K;
  else return size2{std::size_t(K), std::size_t(K)};
}

/// Keras's name of activation a (Keras writes swish, the same function as silu, as "silu").
template <class A> constexpr const char* keras_activation_name(const A&) { return std::string_view(A::name) == "swish" ? "silu" : A::name; }
/// Keras's padding argument for P: "same" or "valid" (Keras's layers take no explicit pads).
template <nn::padding P> constexpr const char* padding_name() {
  static_assert(P.type != nn::padding::kind::explicit_pads, "ctflow::keras: Keras's layers take padding same or valid, not explicit pads");
  return P.type == nn::padding::kind::same ? "same" : "valid";
}
/// A window's extents as Keras lists them: [h] for a 1-D layer (N 1), [h, w] for a 2-D one.
template <std::size_t N> constexpr std::array<std::size_t, N> extents_list(size2 s) {
  if constexpr (N == 1) return {s.h};
  else return {s.h, s.w};
}
/// Keras's kernel_size, strides, padding (and a transposed convolution's output_padding, null),
/// data_format and dilation_rate of a convolution window over N axes.
template <std::size_t N, nn::padding P, bool Transposed = false> void window_config(config_dict& c, size2 kernel, size2 strides, size2 dilation) {
  c.set("kernel_size", extents_list<N>(kernel)).set("strides", extents_list<N>(strides)).set("padding", padding_name<P>());
  if constexpr (Transposed) c.set("output_padding", nullptr);
  c.set("data_format", "channels_last").set("dilation_rate", extents_list<N>(dilation));
}

}  // namespace detail

}  // namespace ctflow::keras::layers
