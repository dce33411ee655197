#pragma once
/// @file
/// @brief keras.regularizers: L1, L2 and L1L2 penalties on a layer's weights (or on its output,
/// `activity_regularizer`), which a model reports in `losses()` and adds to the gradients it
/// computes, as Keras adds them to the loss it trains.
///
///     layers::Dense<64>{.kernel_regularizer = regularizers::L2(1e-4)}

#include <cmath>
#include <cstddef>

namespace ctflow::keras::regularizers {

/// @brief A penalty l1 * sum(|w|) + l2 * sum(w^2) (none when both are 0: the default of a layer).
struct Regularizer {
  double l1 = 0, l2 = 0;
  const char* class_name = "";
  /// @brief Whether it penalises anything.
  bool active() const { return l1 != 0 || l2 != 0; }
  /// @brief Its value for the n weights at w.
  template <class T> double operator()(const T* w, std::size_t n) const {
    double a = 0, s = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double v = double(w[i]);
      a += std::abs(v);
      s += v * v;
    }
    return l1 * a + l2 * s;
  }
  /// @brief Adds its gradient, l1 * sign(w) + 2 * l2 * w, to g.
  template <class T> void add_gradient(const T* w, T* g, std::size_t n) const {
    for (std::size_t i = 0; i < n; ++i) {
      const double v = double(w[i]);
      g[i] = T(double(g[i]) + l1 * double((v > 0) - (v < 0)) + 2 * l2 * v);
    }
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
