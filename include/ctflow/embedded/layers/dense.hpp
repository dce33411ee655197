#pragma once
/// @file
/// @brief embedded::Dense: activation(x @ kernel + bias) over the last axis of its input, the
/// kernel [input features, Units] and the bias [Units] given as arrays:
///
///     embedded::Dense<128, keras::activations::relu, weights::dense_kernel, weights::dense_bias>
///     embedded::Dense<10, keras::activations::linear, weights::dense_1_kernel>   // use_bias=False

#include <cstddef>

#include <ctflow/embedded/layers/common.hpp>
#include <ctflow/embedded/network.hpp>
#include <ctflow/ops/linalg.hpp>

namespace ctflow::embedded {

/// @brief keras.layers.Dense(Units, activation=Activation) with its kernel (and bias, if any).
template <std::size_t Units, auto Activation, const auto& Kernel, const auto&... Bias> struct Dense {
  static_assert(sizeof...(Bias) <= 1, "ctflow::embedded::Dense: give a kernel and at most one bias");
  template <class T, ShapeType In> struct built {
    static_assert(In::rank >= 2, "ctflow::embedded::Dense: its input must be [batch, ..., features]");
    static constexpr std::size_t features = In::extents[std::size_t(In::rank - 1)];
    using value_type = T;
    using output_shape = shape_of<detail::with_last(In::extents, Units)>;
    static constexpr std::size_t params = detail::length<Kernel> + (std::size_t(0) + ... + detail::length<Bias>);
    static constexpr placement place = placement::buffer;

    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, output_shape, D> y) {
      const auto k = detail::weight<"Dense", "kernel", T, Shape<extent_t(features), extent_t(Units)>, D, Kernel>();
      if constexpr (In::rank == 2) {
        y = matmul(x, k);
      } else {
        // [..., features] as the rows of one product.
        constexpr auto rows = extent_t(In::static_size / features);
        TensorView<T, Shape<rows, extent_t(Units)>, D>(y.data()) = matmul(TensorView<const T, Shape<rows, extent_t(features)>, D>(x.data()), k);
      }
      detail::bias_and_activation<"Dense", Activation, T, output_shape, D, Bias...>(y);
    }
  };
};

}  // namespace ctflow::embedded
