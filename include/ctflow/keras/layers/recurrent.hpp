#pragma once
/// @file
/// @brief What LSTM and GRU share: their input [batch, timesteps, features], their output (the
/// last step's, or every step's with return_sequences), the scalar activations of their gates, and
/// the products of their steps (ctflow's matmul on strided views). Both compute their own backward
/// pass through time (`differentiates_itself`): a step's recurrence is a loop over time, which an
/// expression of fixed type cannot unroll for a run-time number of steps. Both read the mask of
/// their input (Embedding's mask_zero, Masking) and pass it on with return_sequences.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <type_traits>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/core/tensor.hpp>
#include <ctflow/keras/activations.hpp>
#include <ctflow/keras/config_dict.hpp>
#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/options.hpp>

namespace ctflow::keras::layers::detail {

/// An activation of a recurrent layer, applied to one number, with its derivative written in
/// terms of its output (what the backward pass keeps).
template <class A> struct scalar_activation {
  static_assert(sizeof(A) == 0,
                "ctflow::keras: a recurrent layer's activations are tanh, sigmoid, hard_sigmoid, relu or linear");
};
template <> struct scalar_activation<activations::tanh_t> {
  template <class T> static T value(T x) { return std::tanh(x); }
  template <class T> static T derivative(T y) { return T(1) - y * y; }
};
template <> struct scalar_activation<activations::sigmoid_t> {
  template <class T> static T value(T x) { return T(1) / (T(1) + std::exp(-x)); }
  template <class T> static T derivative(T y) { return y * (T(1) - y); }
};
template <> struct scalar_activation<activations::hard_sigmoid_t> {
  template <class T> static T value(T x) { return std::clamp(x + T(3), T(0), T(6)) / T(6); }
  template <class T> static T derivative(T y) { return y > T(0) && y < T(1) ? T(1) / T(6) : T(0); }
};
template <> struct scalar_activation<activations::relu_t> {
  template <class T> static T value(T x) { return x > T(0) ? x : T(0); }
  template <class T> static T derivative(T y) { return y > T(0) ? T(1) : T(0); }
};
template <> struct scalar_activation<activations::linear_t> {
  template <class T> static T value(T x) { return x; }
  template <class T> static T derivative(T) { return T(1); }
};
template <auto A> using scalar_of = scalar_activation<std::remove_cvref_t<decltype(A)>>;

/// The output shape of a recurrent layer of Units units on In = [batch, timesteps, features].
template <class In, std::size_t Units, bool Sequences> using recurrent_output =
    std::conditional_t<Sequences, Shape<extent<In, 0>, extent<In, 1>, extent_t(Units)>, Shape<extent<In, 0>, extent_t(Units)>>;
/// The extents of that output for input extents in ([batch, timesteps, features]).
template <std::size_t Units, bool Sequences> auto recurrent_dims(const dims_t<3>& in) {
  if constexpr (Sequences) return dims_t<3>{in[0], in[1], Units};
  else return dims_t<2>{in[0], Units};
}

/// C[m x n] (+)= A[m x k] * B[k x n] with strides (rsa, csa), (rsb, csb) and C's row stride ldc:
/// ctflow's matmul on views of the three, evaluated by device D (the layer's input's).
template <class D, class T>
void product(std::size_t m, std::size_t n, std::size_t k, const T* a, std::ptrdiff_t rsa, std::ptrdiff_t csa, const T* b, std::ptrdiff_t rsb,
             std::ptrdiff_t csb, T* c, std::ptrdiff_t ldc, bool accumulate) {
  using M = Shape<dyn, dyn>;
  const TensorView<const T, M, D> lhs(a, {m, k}, {rsa, csa}), rhs(b, {k, n}, {rsb, csb});
  TensorView<T, M, D> out(c, {m, n}, {ldc, 1});
  if (accumulate) out = out + matmul(lhs, rhs);
  else out = matmul(lhs, rhs);
}

/// z[r][j] += b[j] for rows r of n numbers.
template <class T> void add_bias(T* z, const T* b, std::size_t rows, std::size_t n) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < n; ++j) z[r * n + j] += b[j];
}
/// g[j] += sum over rows r of z[r][j]; nothing when g is null.
template <class T> void add_column_sums(T* g, const T* z, std::size_t rows, std::size_t n) {
  if (!g) return;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < n; ++j) g[j] += z[r * n + j];
}

/// The gradient a backward pass writes for a target: a zeroed tensor of the target's extents when
/// the target is wanted (non-null), else nothing; returns where to accumulate (or null).
template <class G, class Target> auto* gradient_slot(maybe<G>& g, const Target* target) {
  using T = value_t<G>;
  if (!target) {
    g.reset();
    return static_cast<T*>(nullptr);
  }
  // (A tensor handed out by a model's backward pass leaves g holding an empty one.)
  if (!g || g->dims() != target->dims() || g->size() != ctflow::product(target->dims())) g.emplace(target->dims());
  std::fill_n(g->data(), g->size(), T(0));
  return g->data();
}

/// The extents of a sequence, the time index of each step (the last first with go_backwards) and
/// its mask ([batch, timesteps], Keras's: a masked step leaves the state as it was and outputs it;
/// null: none).
struct sequence {
  std::size_t batch = 0, steps = 0;
  bool backwards = false;
  const bool* mask = nullptr;
  std::size_t time(std::size_t step) const { return backwards ? steps - 1 - step : step; }
  /// Whether sequence b's step `step` (in the order the layer runs) is masked out.
  bool skipped(std::size_t b, std::size_t step) const { return mask && !mask[b * steps + time(step)]; }
};

/// Keras's get_config of a recurrent layer (LSTM, GRU) of spec s, Units units, up to its
/// initializers: the RNN's flags (no state returned or kept, no unrolling), then the cell's
/// units, activations, use_bias and initializers.
template <std::size_t Units, class Spec> void recurrent_config_head(config_dict& c, const Spec& s) {
  c.set("return_sequences", Spec::sequences).set("return_state", false).set("go_backwards", Spec::backwards);
  c.set("stateful", false).set("unroll", false).set("zero_output_for_mask", false);
  c.set("units", Units).set("activation", keras_activation_name(Spec::activation)).set("recurrent_activation", keras_activation_name(Spec::recurrent_activation));
  c.set("use_bias", Spec::has_bias).set("kernel_initializer", s.kernel_initializer).set("recurrent_initializer", s.recurrent_initializer);
  c.set("bias_initializer", s.bias_initializer);
}
/// The rest: its regularizers, constraints (none) and dropouts (none).
template <class Spec> void recurrent_config_tail(config_dict& c, const Spec& s) {
  c.set("kernel_regularizer", s.kernel_regularizer).set("recurrent_regularizer", s.recurrent_regularizer).set("bias_regularizer", s.bias_regularizer);
  c.set("activity_regularizer", nullptr).set("kernel_constraint", nullptr).set("recurrent_constraint", nullptr).set("bias_constraint", nullptr);
  c.set("dropout", 0.0).set("recurrent_dropout", 0.0);
}

}  // namespace ctflow::keras::layers::detail
