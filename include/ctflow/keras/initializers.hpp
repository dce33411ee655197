#pragma once
/// @file
/// @brief keras.initializers: how a layer's variables start, with Keras's classes, defaults and
/// formulas (fans as Keras computes them, truncated normals redrawn past two standard
/// deviations, orthogonal matrices from the QR of a normal one). Values come from ctflow's
/// Philox streams: a seed gives the same values on every machine (not Keras's values). An
/// initializer without a seed takes one from keras::utils::set_random_seed's sequence when it is
/// made, so a program starts from the same weights on every run.
///
///     layers::Dense<64, activations::relu>{.kernel_initializer = initializers::HeNormal(42)}

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/core/tensor.hpp>
#include <ctflow/ops/random.hpp>

namespace ctflow::keras {

namespace utils {
namespace detail {
inline std::atomic<std::uint64_t>& seed_state() {
  static std::atomic<std::uint64_t> s{0};
  return s;
}
inline std::atomic<std::uint64_t>& seed_counter() {
  static std::atomic<std::uint64_t> c{0};
  return c;
}
}  // namespace detail

/// @brief keras.utils.set_random_seed: restarts the sequence that unseeded initializers and
/// layers (Dropout) draw their seeds from.
inline void set_random_seed(std::uint64_t seed) {
  detail::seed_state() = seed;
  detail::seed_counter() = 0;
}
/// @brief The next seed of that sequence.
inline std::uint64_t next_seed() {
  const auto w = random::philox(detail::seed_state().load(), detail::seed_counter().fetch_add(1) + (std::uint64_t(1) << 48));
  return std::uint64_t(w[0]) << 32 | w[1];
}
}  // namespace utils

namespace initializers {

/// @brief Keras's compute_fans: (fan_in, fan_out) of a variable's shape; a convolution kernel's
/// receptive field counts in both.
inline std::pair<double, double> compute_fans(const std::vector<std::size_t>& shape) {
  if (shape.empty()) return {1, 1};
  if (shape.size() == 1) return {double(shape[0]), double(shape[0])};
  if (shape.size() == 2) return {double(shape[0]), double(shape[1])};
  double receptive = 1;
  for (std::size_t i = 0; i + 2 < shape.size(); ++i) receptive *= double(shape[i]);
  return {double(shape[shape.size() - 2]) * receptive, double(shape.back()) * receptive};
}

/// @brief A Keras initializer (the base of the classes below, which set its fields): fills a
/// variable given its shape.
struct Initializer {
  enum class kind { zeros, ones, constant, random_uniform, random_normal, truncated_normal, variance_scaling, orthogonal };
  kind type = kind::zeros;
  const char* class_name = "Zeros";
  double a = 0, b = 0;  // minval/maxval, mean/stddev, value, or the variance scale and gain
  const char* mode = "fan_in";
  const char* distribution = "truncated_normal";
  std::uint64_t seed = 0;

  /// @brief Fills n values of the given shape.
  template <class T> void fill(T* out, const std::vector<std::size_t>& shape) const {
    std::size_t n = 1;
    for (auto e : shape) n *= e;
    switch (type) {
      case kind::zeros: std::fill_n(out, n, T(0)); return;
      case kind::ones: std::fill_n(out, n, T(1)); return;
      case kind::constant: std::fill_n(out, n, T(a)); return;
      case kind::random_uniform: uniform(out, n, a, b); return;
      case kind::random_normal:
        for (std::size_t i = 0; i < n; ++i) out[i] = T(a + b * random::standard_normal(seed, i));
        return;
      case kind::truncated_normal: truncated(out, n, a, b); return;
      case kind::variance_scaling: {
        const auto [fan_in, fan_out] = compute_fans(shape);
        const double fan = std::string_view(mode) == "fan_in" ? fan_in : std::string_view(mode) == "fan_out" ? fan_out : (fan_in + fan_out) / 2;
        const double s = a / std::max(1.0, fan);
        if (std::string_view(distribution) == "uniform") uniform(out, n, -std::sqrt(3 * s), std::sqrt(3 * s));
        else if (std::string_view(distribution) == "untruncated_normal")
          for (std::size_t i = 0; i < n; ++i) out[i] = T(std::sqrt(s) * random::standard_normal(seed, i));
        else truncated(out, n, 0, std::sqrt(s) / 0.87962566103423978);
        return;
      }
      case kind::orthogonal: orthogonal(out, shape); return;
    }
  }
  /// @brief A tensor of shape S (and extents d) on device D filled by this initializer (the same
  /// values on every device: drawn on the host, copied where D's memory is not the host's).
  template <class T, class S, class D = cpu> Tensor<T, S, D> operator()(const dims_t<std::size_t(S::rank)>& d = S::extents) const {
    if constexpr (host_device_v<D>) {
      Tensor<T, S, D> t(d);
      fill(t.data(), std::vector<std::size_t>(d.begin(), d.end()));
      return t;
    } else {
      return to<D>(operator()<T, S>(d));
    }
  }

 private:
  template <class T> void uniform(T* out, std::size_t n, double lo, double hi) const {
    for (std::size_t i = 0; i < n; ++i) out[i] = T(lo + (hi - lo) * random::unit(seed, i));
  }
  template <class T> void truncated(T* out, std::size_t n, double mean, double stddev) const {
    const std::uint64_t stride = std::uint64_t(1) << 40;  // redraws use counters far past the first draws
    for (std::size_t i = 0; i < n; ++i) {
      double z = random::standard_normal(seed, i);
      for (std::uint64_t k = 1; std::abs(z) > 2.0; ++k) z = random::standard_normal(seed, i + k * stride);
      out[i] = T(mean + stddev * z);
    }
  }
  /// Keras's Orthogonal: Q of the QR decomposition of a normal [max(r, c), min(r, c)] matrix
  /// (r the product of all extents but the last, c the last), its columns' signs those of R's
  /// diagonal, transposed when r < c, times the gain.
  template <class T> void orthogonal(T* out, const std::vector<std::size_t>& shape) const {
    if (shape.size() < 2) throw value_error("ctflow::keras::initializers::Orthogonal: needs a shape of rank 2 or more");
    std::size_t rows = 1;
    for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
    const std::size_t cols = shape.back(), m = std::max(rows, cols), k = std::min(rows, cols);
    std::vector<double> q(m * k);  // column-major: q[j * m + i]
    for (std::size_t i = 0; i < m * k; ++i) q[i] = random::standard_normal(seed, i);
    // Modified Gram-Schmidt, twice (numerically as good as Householder's Q for these sizes).
    for (std::size_t j = 0; j < k; ++j) {
      double* v = q.data() + j * m;
      for (int pass = 0; pass < 2; ++pass)
        for (std::size_t p = 0; p < j; ++p) {
          const double* u = q.data() + p * m;
          double dot = 0;
          for (std::size_t i = 0; i < m; ++i) dot += u[i] * v[i];
          for (std::size_t i = 0; i < m; ++i) v[i] -= dot * u[i];
        }
      double norm = 0;
      for (std::size_t i = 0; i < m; ++i) norm += v[i] * v[i];
      norm = std::sqrt(norm);
      for (std::size_t i = 0; i < m; ++i) v[i] /= norm;
    }
    // Gram-Schmidt's R has a positive diagonal, so its Q is the one Keras's sign correction of
    // Householder's gives.
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) out[i * cols + j] = T(b * (rows >= cols ? q[j * m + i] : q[i * m + j]));
  }
};

namespace detail {
inline std::uint64_t seed_or_next(std::optional<std::uint64_t> seed) { return seed ? *seed : utils::next_seed(); }
}  // namespace detail

/// @brief keras.initializers.Zeros.
struct Zeros : Initializer {
  Zeros() : Initializer{kind::zeros, "Zeros"} {}
};
/// @brief keras.initializers.Ones.
struct Ones : Initializer {
  Ones() : Initializer{kind::ones, "Ones"} {}
};
/// @brief keras.initializers.Constant(value).
struct Constant : Initializer {
  explicit Constant(double value = 0.0) : Initializer{kind::constant, "Constant", value} {}
};
/// @brief keras.initializers.RandomUniform(minval=-0.05, maxval=0.05, seed).
struct RandomUniform : Initializer {
  explicit RandomUniform(double minval = -0.05, double maxval = 0.05, std::optional<std::uint64_t> seed = std::nullopt)
      : Initializer{kind::random_uniform, "RandomUniform", minval, maxval, "", "", detail::seed_or_next(seed)} {}
};
/// @brief keras.initializers.RandomNormal(mean=0, stddev=0.05, seed).
struct RandomNormal : Initializer {
  explicit RandomNormal(double mean = 0.0, double stddev = 0.05, std::optional<std::uint64_t> seed = std::nullopt)
      : Initializer{kind::random_normal, "RandomNormal", mean, stddev, "", "", detail::seed_or_next(seed)} {}
};
/// @brief keras.initializers.TruncatedNormal(mean=0, stddev=0.05, seed): values past two
/// standard deviations are redrawn.
struct TruncatedNormal : Initializer {
  explicit TruncatedNormal(double mean = 0.0, double stddev = 0.05, std::optional<std::uint64_t> seed = std::nullopt)
      : Initializer{kind::truncated_normal, "TruncatedNormal", mean, stddev, "", "", detail::seed_or_next(seed)} {}
};
/// @brief keras.initializers.VarianceScaling(scale=1, mode="fan_in", distribution="truncated_normal"):
/// variance scale / n, n the fan_in, the fan_out or their mean ("fan_avg"); distribution
/// "truncated_normal", "untruncated_normal" or "uniform".
struct VarianceScaling : Initializer {
  explicit VarianceScaling(double scale = 1.0, const char* mode = "fan_in", const char* distribution = "truncated_normal",
                           std::optional<std::uint64_t> seed = std::nullopt, const char* name = "VarianceScaling")
      : Initializer{kind::variance_scaling, name, scale, 0, mode, distribution, detail::seed_or_next(seed)} {
    const std::string_view m(mode), d(distribution);
    if (m != "fan_in" && m != "fan_out" && m != "fan_avg")
      throw value_error("ctflow::keras::initializers::VarianceScaling: mode must be fan_in, fan_out or fan_avg, got " + std::string(m));
    if (d != "truncated_normal" && d != "untruncated_normal" && d != "uniform")
      throw value_error("ctflow::keras::initializers::VarianceScaling: distribution must be truncated_normal, untruncated_normal or uniform, got " +
                        std::string(d));
    if (!(scale > 0)) throw value_error("ctflow::keras::initializers::VarianceScaling: scale must be positive");
  }
};
/// @brief keras.initializers.GlorotUniform: U(-l, l), l = sqrt(6 / (fan_in + fan_out)).
struct GlorotUniform : VarianceScaling {
  explicit GlorotUniform(std::optional<std::uint64_t> seed = std::nullopt) : VarianceScaling(1.0, "fan_avg", "uniform", seed, "GlorotUniform") {}
};
/// @brief keras.initializers.GlorotNormal: truncated normal, variance 2 / (fan_in + fan_out).
struct GlorotNormal : VarianceScaling {
  explicit GlorotNormal(std::optional<std::uint64_t> seed = std::nullopt) : VarianceScaling(1.0, "fan_avg", "truncated_normal", seed, "GlorotNormal") {}
};
/// @brief keras.initializers.HeNormal: truncated normal, variance 2 / fan_in.
struct HeNormal : VarianceScaling {
  explicit HeNormal(std::optional<std::uint64_t> seed = std::nullopt) : VarianceScaling(2.0, "fan_in", "truncated_normal", seed, "HeNormal") {}
};
/// @brief keras.initializers.HeUniform: U(-l, l), l = sqrt(6 / fan_in).
struct HeUniform : VarianceScaling {
  explicit HeUniform(std::optional<std::uint64_t> seed = std::nullopt) : VarianceScaling(2.0, "fan_in", "uniform", seed, "HeUniform") {}
};
/// @brief keras.initializers.LecunNormal: truncated normal, variance 1 / fan_in.
struct LecunNormal : VarianceScaling {
  explicit LecunNormal(std::optional<std::uint64_t> seed = std::nullopt) : VarianceScaling(1.0, "fan_in", "truncated_normal", seed, "LecunNormal") {}
};
/// @brief keras.initializers.LecunUniform: U(-l, l), l = sqrt(3 / fan_in).
struct LecunUniform : VarianceScaling {
  explicit LecunUniform(std::optional<std::uint64_t> seed = std::nullopt) : VarianceScaling(1.0, "fan_in", "uniform", seed, "LecunUniform") {}
};
/// @brief keras.initializers.Orthogonal(gain=1): an orthogonal matrix (rows or columns) times gain.
struct Orthogonal : Initializer {
  explicit Orthogonal(double gain = 1.0, std::optional<std::uint64_t> seed = std::nullopt)
      : Initializer{kind::orthogonal, "Orthogonal", 0, gain, "", "", detail::seed_or_next(seed)} {}
};

}  // namespace initializers
}  // namespace ctflow::keras
