#pragma once
// Reference kernels of max and average pooling and of their gradients (MaxPoolGrad,
// MaxPoolGradWithArgmax, AvgPoolGrad): one window at a time, the window of output (oy, ox)
// clipped to the image by pool_geometry::window, its elements in row-major order.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <ctflow/backend/reference/kernel.hpp>
#include <ctflow/core/dtype.hpp>
#include <ctflow/ops/nn/pool.hpp>

namespace ctflow::backend::reference {

namespace pool_detail {

/// f(n, k, o, y0, y1, x0, x1) for every output element o = [n, oy, ox, k] (its row-major
/// offset), the window of (oy, ox) being [y0, y1) x [x0, x1).
template <class F> void each_output(const nn::detail::pool_geometry& g, F&& f) {
  for (std::size_t n = 0; n < g.n; ++n)
    for (std::size_t oy = 0; oy < g.oh; ++oy)
      for (std::size_t ox = 0; ox < g.ow; ++ox) {
        std::size_t y0, y1, x0, x1;
        g.window(oy, ox, y0, y1, x0, x1);
        for (std::size_t k = 0; k < g.c; ++k) f(n, k, ((n * g.oh + oy) * g.ow + ox) * g.c + k, y0, y1, x0, x1);
      }
}

/// The element of channel k at pixel (y, x) of image n.
inline std::size_t at(const nn::detail::pool_geometry& g, std::size_t n, std::size_t y, std::size_t x, std::size_t k) {
  return ((n * g.h + y) * g.w + x) * g.c + k;
}

/// The maximum of a window: larger elements replace it, starting from -inf, so that a NaN never
/// wins (a window of NaNs gives -inf).
template <class T> compute_t<T> window_max(const nn::detail::pool_geometry& g, const T* x, std::size_t n, std::size_t k, std::size_t y0,
                                           std::size_t y1, std::size_t x0, std::size_t x1) {
  using V = compute_t<T>;
  V m = -std::numeric_limits<V>::infinity();
  for (std::size_t y = y0; y < y1; ++y)
    for (std::size_t xx = x0; xx < x1; ++xx) {
      const V v = V(x[at(g, n, y, xx, k)]);
      m = v > m ? v : m;
    }
  return m;
}

/// Whether some element of the window equals m: the first one in row-major order at (y, x).
template <class T> bool first_equal(const nn::detail::pool_geometry& g, const T* x, std::size_t n, std::size_t k, std::size_t y0,
                                    std::size_t y1, std::size_t x0, std::size_t x1, compute_t<T> m, std::size_t& y, std::size_t& xx) {
  for (y = y0; y < y1; ++y)
    for (xx = x0; xx < x1; ++xx)
      if (compute_t<T>(x[at(g, n, y, xx, k)]) == m) return true;
  return false;
}

template <class T> void store(T* out, const std::vector<double>& acc) {
  for (std::size_t i = 0; i < acc.size(); ++i) out[i] = T(acc[i]);
}

}  // namespace pool_detail

/// Max pooling: the window's maximum (a NaN never wins); average pooling: the mean of the
/// window's elements inside the image.
template <class T, class SX, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, nn::padding Pad, bool Max> struct kernel<nn::detail::pool_op<T, SX, KH, KW, SH, SW, Pad, Max>> : nn::detail::pool_op<T, SX, KH, KW, SH, SW, Pad, Max> {
  using op = nn::detail::pool_op<T, SX, KH, KW, SH, SW, Pad, Max>;
  using op::g;
  void run(T* out, const expr::strided_view<T, 4>& x) const { run(out, static_cast<std::uint8_t*>(nullptr), x); }
  /// With `saved` (max pooling under value_and_grad), each output's position in its window as
  /// well: that of the window's first element (row-major) equal to its maximum, (y - y0) * KW +
  /// (x - x0) from the clipped window's corner, none (255 as a byte, -1 in the compute type)
  /// where no element equals it (every one NaN).
  template <class P> void run(T* out, P* saved, const expr::strided_view<T, 4>& x) const {
    using namespace pool_detail;
    each_output(g, [&](std::size_t n, std::size_t k, std::size_t o, std::size_t y0, std::size_t y1, std::size_t x0, std::size_t x1) {
      if constexpr (Max) {
        const compute_t<T> m = window_max(g, x.data, n, k, y0, y1, x0, x1);
        out[o] = T(m);
        if (saved) {
          std::size_t y, xx;
          if (first_equal(g, x.data, n, k, y0, y1, x0, x1, m, y, xx)) saved[o] = P((y - y0) * KW + (xx - x0));
          else saved[o] = std::is_same_v<P, std::uint8_t> ? P(255) : P(-1);
        }
      } else {
        double s = 0;
        for (std::size_t y = y0; y < y1; ++y)
          for (std::size_t xx = x0; xx < x1; ++xx) s += double(x.data[at(g, n, y, xx, k)]);
        const std::size_t count = (y1 - y0) * (x1 - x0);
        out[o] = T(count ? s / double(count) : 0.0);
      }
    });
  }
};

/// MaxPoolGrad: each dy added to the first element (row-major) of its window equal to the
/// window's maximum y (nowhere where none is).
template <class T, class SX, std::size_t KH, std::size_t KW> struct kernel<nn::detail::max_pool_grad_op<T, SX, KH, KW>> : nn::detail::max_pool_grad_op<T, SX, KH, KW> {
  using op = nn::detail::max_pool_grad_op<T, SX, KH, KW>;
  using op::g, op::out_dims;
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& y, const expr::strided_view<T, 4>& dy) const {
    using namespace pool_detail;
    std::vector<double> acc(product(out_dims));
    each_output(g, [&](std::size_t n, std::size_t k, std::size_t o, std::size_t y0, std::size_t y1, std::size_t x0, std::size_t x1) {
      std::size_t yy, xx;
      if (first_equal(g, x.data, n, k, y0, y1, x0, x1, compute_t<T>(y.data[o]), yy, xx)) acc[at(g, n, yy, xx, k)] += double(dy.data[o]);
    });
    store(out, acc);
  }
};

/// MaxPoolGradWithArgmax: each dy added to the element of its window at the position the forward
/// pass saved ((y - y0) * KW + (x - x0)); a position outside the window (none) takes nothing.
template <class T, class SX, std::size_t KH, std::size_t KW> struct kernel<nn::detail::max_pool_argmax_grad_op<T, SX, KH, KW>> : nn::detail::max_pool_argmax_grad_op<T, SX, KH, KW> {
  using op = nn::detail::max_pool_argmax_grad_op<T, SX, KH, KW>;
  using typename op::positions;
  using op::g, op::out_dims;
  void run(T* out, const expr::strided_view<T, 4>& dy, const expr::strided_view<positions, 4>& saved) const {
    using namespace pool_detail;
    std::vector<double> acc(product(out_dims));
    each_output(g, [&](std::size_t n, std::size_t k, std::size_t o, std::size_t y0, std::size_t y1, std::size_t x0, std::size_t x1) {
      const double p = double(saved.data[o]);
      if (!(p >= 0 && p < double(KH * KW))) return;
      const std::size_t ky = std::size_t(p) / KW, kx = std::size_t(p) % KW;
      if (y0 + ky < y1 && x0 + kx < x1) acc[at(g, n, y0 + ky, x0 + kx, k)] += double(dy.data[o]);
    });
    store(out, acc);
  }
};

/// AvgPoolGrad: each dy spread evenly over the elements of its window inside the image.
template <class T, class SX> struct kernel<nn::detail::avg_pool_grad_op<T, SX>> : nn::detail::avg_pool_grad_op<T, SX> {
  using op = nn::detail::avg_pool_grad_op<T, SX>;
  using op::g, op::out_dims;
  void run(T* out, const expr::strided_view<T, 4>& dy) const {
    using namespace pool_detail;
    std::vector<double> acc(product(out_dims));
    each_output(g, [&](std::size_t n, std::size_t k, std::size_t o, std::size_t y0, std::size_t y1, std::size_t x0, std::size_t x1) {
      const double share = double(dy.data[o]) / double((y1 - y0) * (x1 - x0));
      for (std::size_t y = y0; y < y1; ++y)
        for (std::size_t xx = x0; xx < x1; ++xx) acc[at(g, n, y, xx, k)] += share;
    });
    store(out, acc);
  }
};

}  // namespace ctflow::backend::reference
