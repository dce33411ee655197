#pragma once
/// @file
/// @brief The embedded recurrent layers, over [batch, timesteps, features] as Keras's take it:
/// embedded::LSTM (Keras's gate order [i, f, c, o]) and embedded::GRU ([z, r, h]), their kernel
/// [features, gates], recurrent kernel [units, gates] and bias given as arrays:
///
///     embedded::LSTM<32, keras::activations::tanh, keras::activations::sigmoid, embedded::recurrence{},
///                    weights::lstm_kernel, weights::lstm_recurrent_kernel, weights::lstm_bias>
///     embedded::GRU<16, keras::activations::tanh, keras::activations::sigmoid,
///                   embedded::recurrence{.return_sequences = true, .reset_after = true},
///                   weights::gru_kernel, weights::gru_recurrent_kernel, weights::gru_bias>   // bias [2, 3 units]
///
/// Each example runs through time on its own: per step one product of the step's input with the
/// kernel and one of the state with the recurrent kernel, into the network's scratch, then the
/// gates element by element. The state is the output's memory (the last step's, or each step's
/// with return_sequences), the LSTM's cell state the scratch: no memory of their own.

#include <algorithm>
#include <cstddef>

#include <ctflow/embedded/layers/common.hpp>
#include <ctflow/embedded/network.hpp>
#include <ctflow/ops/linalg.hpp>

namespace ctflow::embedded {

/// @brief A recurrent layer's flags, as Keras's take them: every step's output or the last one's,
/// the sequence read from its end (the outputs in the order the steps run), and a GRU's reset
/// gate applied after its recurrent product (Keras's default, PyTorch's and ONNX's
/// linear_before_reset) or before.
struct recurrence {
  bool return_sequences = false;
  bool go_backwards = false;
  bool reset_after = true;
  constexpr bool operator==(const recurrence&) const = default;
};

namespace detail {

/// What a recurrent layer of Gates gates of Units units over input In, with flags R, activations
/// and weights, shares: shapes, parameters, the time step each step reads, and the scratch of the
/// step's two products.
template <class T, ShapeType In, std::size_t Units, std::size_t Gates, recurrence R, auto Activation, auto RecurrentActivation, const auto&... Weights>
struct recurrent_base {
  static_assert(In::rank == 3, "ctflow::embedded: a recurrent layer's input must be [batch, timesteps, features]");
  static constexpr std::size_t batch = In::extents[0], steps = In::extents[1], features = In::extents[2];
  static_assert(steps > 0, "ctflow::embedded: a recurrent layer's input has no timesteps");
  using value_type = T;
  using output_shape = std::conditional_t<R.return_sequences, Shape<extent_t(batch), extent_t(steps), extent_t(Units)>, Shape<extent_t(batch), extent_t(Units)>>;
  using row = Shape<1, extent_t(Units)>;
  using gates_row = Shape<1, extent_t(Gates * Units)>;
  static constexpr placement place = placement::buffer;
  static constexpr std::size_t params = (std::size_t(0) + ... + length<Weights>);
  static_assert(elementwise_activation<Activation, T, row> && elementwise_activation<RecurrentActivation, T, row>,
                "ctflow::embedded: a recurrent layer's activations must be element-wise");
  /// The step's input product and recurrent product, each [1, gates].
  static constexpr std::size_t product_bytes = aligned(Gates * Units * sizeof(T));
  /// The time step that step t reads.
  static constexpr std::size_t time(std::size_t t) { return R.go_backwards ? steps - 1 - t : t; }
  /// The state step t writes in y (example b): its row of the output.
  static T* state(T* y, std::size_t b, std::size_t t) { return y + (R.return_sequences ? b * steps + t : b) * Units; }
  template <class D> static TensorView<T, row, D> gate(T* products, std::size_t g) { return TensorView<T, row, D>(products + g * Units); }
  template <class D> static TensorView<const T, row, D> gate(const T* weights, std::size_t g) { return TensorView<const T, row, D>(weights + g * Units); }
  /// xz = x_t @ kernel and hz = h @ recurrent_kernel (zeros at the first step: the state starts at
  /// zero), for example b at step t.
  template <class D, class K, class U> static void products(const T* x, T* y, std::size_t b, std::size_t t, const K& kernel, const U& recurrent, T* xz, T* hz) {
    TensorView<T, gates_row, D> input(xz), state_product(hz);
    input = matmul(TensorView<const T, Shape<1, extent_t(features)>, D>(x + (b * steps + time(t)) * features), kernel);
    if (t == 0) std::fill_n(hz, Gates * Units, T(0));
    else state_product = matmul(TensorView<const T, row, D>(state(y, b, t - 1)), recurrent);
  }
};

}  // namespace detail

/// @brief keras.layers.LSTM(Units, activation=Activation, recurrent_activation=RecurrentActivation,
/// return_sequences, go_backwards) in inference, its kernel [features, 4 units], recurrent kernel
/// [units, 4 units] and bias [4 units] (if any), Keras's gate order [i, f, c, o]:
/// c = f * c + i * activation(z_c), h = o * activation(c).
template <std::size_t Units, auto Activation, auto RecurrentActivation, recurrence R, const auto& Kernel, const auto& RecurrentKernel, const auto&... Bias>
struct LSTM {
  static_assert(sizeof...(Bias) <= 1, "ctflow::embedded::LSTM: give a kernel, a recurrent kernel and at most one bias");
  static_assert(Units > 0, "ctflow::embedded::LSTM: units must be positive");
  template <class T, ShapeType In>
  struct built : detail::recurrent_base<T, In, Units, 4, R, Activation, RecurrentActivation, Kernel, RecurrentKernel, Bias...> {
    using base = typename built::recurrent_base;
    using typename base::output_shape;
    using typename base::row;
    /// The two products and the cell state [1, units].
    static constexpr std::size_t scratch_bytes = 2 * base::product_bytes + detail::aligned(Units * sizeof(T));

    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, output_shape, D> y, std::byte* scratch) {
      constexpr std::size_t gates = 4 * Units;
      const auto kernel = detail::weight<"LSTM", "kernel", T, Shape<extent_t(base::features), extent_t(gates)>, D, Kernel>();
      const auto recurrent = detail::weight<"LSTM", "recurrent_kernel", T, Shape<extent_t(Units), extent_t(gates)>, D, RecurrentKernel>();
      T* xz = reinterpret_cast<T*>(scratch);
      T* hz = reinterpret_cast<T*>(scratch + base::product_bytes);
      TensorView<T, row, D> c(reinterpret_cast<T*>(scratch + 2 * base::product_bytes));
      auto xi = base::template gate<D>(xz, 0), xf = base::template gate<D>(xz, 1), xc = base::template gate<D>(xz, 2), xo = base::template gate<D>(xz, 3);
      auto hi = base::template gate<D>(hz, 0), hf = base::template gate<D>(hz, 1), hc = base::template gate<D>(hz, 2), ho = base::template gate<D>(hz, 3);
      for (std::size_t b = 0; b < base::batch; ++b) {
        std::fill_n(c.data(), Units, T(0));
        for (std::size_t t = 0; t < base::steps; ++t) {
          base::template products<D>(x.data(), y.data(), b, t, kernel, recurrent, xz, hz);
          TensorView<T, row, D> h(base::state(y.data(), b, t));
          if constexpr (sizeof...(Bias) == 1) {
            const auto bias = detail::weight<"LSTM", "bias", T, Shape<extent_t(gates)>, D, Bias...>();
            const auto bi = base::template gate<D>(bias.data(), 0), bf = base::template gate<D>(bias.data(), 1);
            const auto bc = base::template gate<D>(bias.data(), 2), bo = base::template gate<D>(bias.data(), 3);
            c = RecurrentActivation(xf + hf + bf) * c + RecurrentActivation(xi + hi + bi) * Activation(xc + hc + bc);
            h = RecurrentActivation(xo + ho + bo) * Activation(c);
          } else {
            c = RecurrentActivation(xf + hf) * c + RecurrentActivation(xi + hi) * Activation(xc + hc);
            h = RecurrentActivation(xo + ho) * Activation(c);
          }
        }
      }
    }
  };
};

/// @brief keras.layers.GRU(Units, activation=Activation, recurrent_activation=RecurrentActivation,
/// return_sequences, go_backwards, reset_after) in inference, its kernel [features, 3 units] and
/// recurrent kernel [units, 3 units], Keras's gate order [z, r, h], its bias (if any) [2, 3 units]
/// (an input bias and a recurrent one) with reset_after, [3 units] without:
/// h = z * h + (1 - z) * activation(x_h + r * (h @ recurrent_kernel_h)), or
/// activation(x_h + (r * h) @ recurrent_kernel_h) without reset_after.
template <std::size_t Units, auto Activation, auto RecurrentActivation, recurrence R, const auto& Kernel, const auto& RecurrentKernel, const auto&... Bias>
struct GRU {
  static_assert(sizeof...(Bias) <= 1, "ctflow::embedded::GRU: give a kernel, a recurrent kernel and at most one bias");
  static_assert(Units > 0, "ctflow::embedded::GRU: units must be positive");
  template <class T, ShapeType In>
  struct built : detail::recurrent_base<T, In, Units, 3, R, Activation, RecurrentActivation, Kernel, RecurrentKernel, Bias...> {
    using base = typename built::recurrent_base;
    using typename base::output_shape;
    using typename base::row;
    static constexpr std::size_t scratch_bytes = 2 * base::product_bytes;

    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, output_shape, D> y, std::byte* scratch) {
      constexpr std::size_t gates = 3 * Units;
      constexpr bool bias = sizeof...(Bias) == 1;
      const auto kernel = detail::weight<"GRU", "kernel", T, Shape<extent_t(base::features), extent_t(gates)>, D, Kernel>();
      const auto recurrent = detail::weight<"GRU", "recurrent_kernel", T, Shape<extent_t(Units), extent_t(gates)>, D, RecurrentKernel>();
      T* xz = reinterpret_cast<T*>(scratch);
      T* hz = reinterpret_cast<T*>(scratch + base::product_bytes);
      auto xu = base::template gate<D>(xz, 0), xr = base::template gate<D>(xz, 1), xh = base::template gate<D>(xz, 2);
      auto hu = base::template gate<D>(hz, 0), hr = base::template gate<D>(hz, 1), hh = base::template gate<D>(hz, 2);
      for (std::size_t b = 0; b < base::batch; ++b) {
        for (std::size_t t = 0; t < base::steps; ++t) {
          base::template products<D>(x.data(), y.data(), b, t, kernel, recurrent, xz, hz);
          // The biases added to the products: the input's to xz; the recurrent one (reset_after) to hz.
          if constexpr (bias) {
            const auto w = detail::weight<"GRU", "bias", T, Shape<extent_t((R.reset_after ? 2 : 1) * gates)>, D, Bias...>();
            const TensorView<const T, typename base::gates_row, D> input_bias(w.data());
            TensorView<T, typename base::gates_row, D> xzv(xz);
            xzv = xzv + input_bias;
            if constexpr (R.reset_after) {
              TensorView<T, typename base::gates_row, D> hzv(hz);
              hzv = hzv + TensorView<const T, typename base::gates_row, D>(w.data() + gates);
            }
          }
          TensorView<T, row, D> h(base::state(y.data(), b, t));
          const T* before = t == 0 ? nullptr : base::state(y.data(), b, t - 1);
          xu = RecurrentActivation(xu + hu);  // z
          xr = RecurrentActivation(xr + hr);  // r
          if constexpr (R.reset_after) {
            xh = Activation(xh + xr * hh);
          } else {
            // (r * h) @ recurrent_kernel_h: the recurrent kernel's last units columns.
            for (std::size_t j = 0; j < Units; ++j) {
              T s = T(0);
              if (before)
                for (std::size_t k = 0; k < Units; ++k) s += xr.data()[k] * before[k] * recurrent.data()[k * gates + 2 * Units + j];
              hh.data()[j] = s;
            }
            xh = Activation(xh + hh);
          }
          if (before) h = xu * TensorView<const T, row, D>(before) + (T(1) - xu) * xh;
          else h = (T(1) - xu) * xh;
        }
      }
    }
  };
};

}  // namespace ctflow::embedded
