#pragma once
/// @file
/// @brief Fills, ranges and seeded random tensors (tf.fill, zeros, ones, range, random.uniform,
/// random.normal, random.truncated_normal) on any device. Random values come from a counter-based
/// Philox-4x32 stream: the same seed gives the same tensor on every machine, thread count and
/// device (they are written on the host, then copied where the device's memory is not the host's).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <ctflow/core/tensor.hpp>

namespace ctflow {

namespace detail {
/// A tensor of extents d on device D whose elements `write(data, n)` sets on the host: in place
/// where D's memory is the host's, else into host memory copied to D (the same values on every
/// device).
template <class T, class S, class D, class W> Tensor<T, S, D> written_on_host(const dims_t<std::size_t(S::rank)>& d, W&& write) {
  if constexpr (host_device_v<D>) {
    Tensor<T, S, D> t(d, uninitialized);
    write(t.data(), t.size());
    return t;
  } else {
    Tensor<T, S, cpu> t(d, uninitialized);
    write(t.data(), t.size());
    return to<D>(t);
  }
}
}  // namespace detail

/// @brief tf.fill / zeros / ones for a static shape, or for given extents.
template <DType T, ShapeType S, class D = cpu> Tensor<T, S, D> fill(T value, const dims_t<std::size_t(S::rank)>& d = S::extents) {
  return detail::written_on_host<T, S, D>(d, [&](T* p, std::size_t n) { std::fill_n(p, n, value); });
}
template <DType T, ShapeType S, class D = cpu> Tensor<T, S, D> zeros(const dims_t<std::size_t(S::rank)>& d = S::extents) { return Tensor<T, S, D>(d); }
template <DType T, ShapeType S, class D = cpu> Tensor<T, S, D> ones(const dims_t<std::size_t(S::rank)>& d = S::extents) { return fill<T, S, D>(T(1), d); }

/// @brief tf.range(start, limit, delta): a 1-D tensor [start, start + delta, ...) before limit.
template <DType T, class D = cpu> Tensor<T, Shape<dyn>, D> range(T start, T limit, T delta = T(1)) {
  if (delta == T(0)) ctflow::detail::raise<value_error>("ctflow::range: delta must not be 0");
  const double n = std::ceil((double(limit) - double(start)) / double(delta));
  return detail::written_on_host<T, Shape<dyn>, D>({n > 0 ? std::size_t(n) : 0}, [&](T* p, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) p[i] = T(start + T(i) * delta);
  });
}
template <DType T, class D = cpu> Tensor<T, Shape<dyn>, D> range(T limit) { return range<T, D>(T(0), limit, T(1)); }

namespace random {

/// @brief Philox-4x32-10 (Salmon et al., 2011), the counter-based generator behind every seeded
/// op: block `counter` of stream `seed` is four independent 32-bit words.
inline std::array<std::uint32_t, 4> philox(std::uint64_t seed, std::uint64_t counter) {
  std::uint32_t c0 = std::uint32_t(counter), c1 = std::uint32_t(counter >> 32), c2 = 0, c3 = 0;
  std::uint32_t k0 = std::uint32_t(seed), k1 = std::uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const std::uint64_t p0 = std::uint64_t(0xD2511F53u) * c0, p1 = std::uint64_t(0xCD9E8D57u) * c2;
    const std::uint32_t n0 = std::uint32_t(p1 >> 32) ^ c1 ^ k0, n2 = std::uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = std::uint32_t(p1);
    c3 = std::uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}

/// @brief The i-th value of stream seed, uniform in [0, 1) (53 random bits).
inline double unit(std::uint64_t seed, std::uint64_t i) {
  const auto w = philox(seed, i);
  return double((std::uint64_t(w[0]) << 21) ^ (w[1] >> 11)) * (1.0 / 9007199254740992.0);
}
/// @brief The i-th value of stream seed, standard normal (Box-Muller).
inline double standard_normal(std::uint64_t seed, std::uint64_t i) {
  const auto w = philox(seed, i);
  // Box-Muller on two uniforms in (0, 1].
  const double u1 = (double(w[0]) + 1.0) / 4294967296.0, u2 = double(w[1]) / 4294967296.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace random

/// @brief tf.random.uniform: values in [minval, maxval), seeded.
template <DType T, ShapeType S, class D = cpu>
Tensor<T, S, D> random_uniform(std::uint64_t seed, double minval = 0.0, double maxval = 1.0, const dims_t<std::size_t(S::rank)>& d = S::extents) {
  return detail::written_on_host<T, S, D>(d, [&](T* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      double v = minval + (maxval - minval) * random::unit(seed, i);
      if constexpr (is_integer_v<T>) v = std::floor(v);
      p[i] = T(v >= maxval && is_floating_v<T> ? minval : v);
    }
  });
}

/// @brief tf.random.normal: mean + stddev * N(0, 1), seeded.
template <DType T, ShapeType S, class D = cpu>
Tensor<T, S, D> random_normal(std::uint64_t seed, double mean = 0.0, double stddev = 1.0, const dims_t<std::size_t(S::rank)>& d = S::extents) {
  return detail::written_on_host<T, S, D>(d, [&](T* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) p[i] = T(mean + stddev * random::standard_normal(seed, i));
  });
}

/// @brief tf.random.truncated_normal: normal values, redrawn where more than two standard
/// deviations from the mean.
template <DType T, ShapeType S, class D = cpu>
Tensor<T, S, D> truncated_normal(std::uint64_t seed, double mean = 0.0, double stddev = 1.0, const dims_t<std::size_t(S::rank)>& d = S::extents) {
  return detail::written_on_host<T, S, D>(d, [&](T* p, std::size_t n) {
    const std::uint64_t stride = std::uint64_t(1) << 40;  // redraws use counters far past the first draws
    for (std::size_t i = 0; i < n; ++i) {
      double z = random::standard_normal(seed, i);
      for (std::uint64_t k = 1; std::abs(z) > 2.0; ++k) z = random::standard_normal(seed, i + k * stride);
      p[i] = T(mean + stddev * z);
    }
  });
}

}  // namespace ctflow
