#pragma once
/// @file
/// @brief keras.regularizers: L1, L2 and L1L2 penalties on a layer's weights (or on its output,
/// `activity_regularizer`), which a model reports in `losses()` and adds to the gradients it
/// computes, as Keras adds them to the loss it trains.
///
///     layers::Dense<64>{.kernel_regularizer = regularizers::L2(1e-4)}

#include <cstddef>

#include <ctflow/ctflow.hpp>

namespace ctflow::keras::regularizers {

/// @brief A penalty l1 * sum(|w|) + l2 * sum(w^2) (none when both are 0: the default of a layer).
struct Regularizer {
  double l1 = 0, l2 = 0;
  const char* class_name = "";
  /// @brief Whether it penalises anything.
  bool active() const { return l1 != 0 || l2 != 0; }
  /// @brief Its value for weight w (l1 * sum(|w|) + l2 * sum(w^2), each term only when its
  /// factor is not 0).
  template <class W> double operator()(const W& w) const { return value(flat(w)); }
  /// @brief Adds its gradient with respect to w, l1 * sign(w) + 2 * l2 * w, to g (one fused loop,
  /// on the weight's device).
  template <class W, class G> void add_gradient(const W& w, G& g) const { add_gradient_flat(flat(w), flat(g)); }

 private:
  /// A tensor's memory as one axis (read-only where the tensor is): the penalty and its gradient
  /// are the same loop for every weight of a dtype, whatever its shape.
  template <class W> static auto flat(W& w) {
    return TensorView<std::remove_pointer_t<decltype(w.data())>, Shape<dyn>, placed_device_t<device_t<W>>>(w.data(), {w.size()});
  }
  template <class V> double value(const V& w) const {
    double r = 0;
    if (l1 != 0) r += l1 * double(ctflow::item(reduce_sum(abs(w))));
    if (l2 != 0) r += l2 * double(ctflow::item(reduce_sum(square(w))));
    return r;
  }
  template <class V, class G> void add_gradient_flat(const V& w, G g) const {
    using T = std::remove_const_t<value_t<V>>;
    g = g + T(l1) * sign(w) + T(2 * l2) * w;
  }
};

/// @brief keras.regularizers.L1(l1=0.01).
struct L1 : Regularizer {
  explicit L1(double l1 = 0.01) : Regularizer{l1, 0, "L1"} {}
};
/// @brief keras.regularizers.L2(l2=0.01).
struct L2 : Regularizer {
  explicit L2(double l2 = 0.01) : Regularizer{0, l2, "L2"} {}
};
/// @brief keras.regularizers.L1L2(l1=0, l2=0).
struct L1L2 : Regularizer {
  explicit L1L2(double l1 = 0.0, double l2 = 0.0) : Regularizer{l1, l2, "L1L2"} {}
};

}  // namespace ctflow::keras::regularizers
