#pragma once
// Reference kernels of conv2d and depthwise_conv2d and of their backward passes, straight from
// the definition: output (n, oy, ox) reads, through tap (ky, kx), the input pixel
// y = oy * sh + ky * dh - pt, x = ox * sw + kx * dw - pl (none outside the image). Input NHWC,
// filters HWIO ([kh, kw, c, o]; depthwise [kh, kw, c, m], output channel k * m + j). Sums in
// double.

#include <cstddef>
#include <vector>

#include <ctflow/backend/reference/kernel.hpp>
#include <ctflow/ops/nn/conv.hpp>
#include <ctflow/ops/nn/depthwise.hpp>

namespace ctflow::backend::reference {

namespace conv_detail {

/// f(ky, kx, y, x) for every tap of output pixel (oy, ox) whose input pixel (y, x) is inside the
/// image, in row-major order of (ky, kx).
template <class F> void each_tap_of(const nn::detail::conv_geometry& g, std::size_t oy, std::size_t ox, F&& f) {
  for (std::size_t ky = 0; ky < g.kh; ++ky)
    for (std::size_t kx = 0; kx < g.kw; ++kx) {
      const std::ptrdiff_t y = std::ptrdiff_t(oy * g.sh + ky * g.dh) - std::ptrdiff_t(g.pt);
      const std::ptrdiff_t x = std::ptrdiff_t(ox * g.sw + kx * g.dw) - std::ptrdiff_t(g.pl);
      if (y < 0 || x < 0 || y >= std::ptrdiff_t(g.h) || x >= std::ptrdiff_t(g.w)) continue;
      f(ky, kx, std::size_t(y), std::size_t(x));
    }
}

/// f(n, oy, ox, ky, kx, y, x) for every output pixel and tap whose input pixel (y, x) is inside
/// the image, in row-major order of (n, oy, ox, ky, kx).
template <class F> void each_tap(const nn::detail::conv_geometry& g, F&& f) {
  for (std::size_t n = 0; n < g.n; ++n)
    for (std::size_t oy = 0; oy < g.oh; ++oy)
      for (std::size_t ox = 0; ox < g.ow; ++ox)
        each_tap_of(g, oy, ox, [&](std::size_t ky, std::size_t kx, std::size_t y, std::size_t x) { f(n, oy, ox, ky, kx, y, x); });
}

/// f(n, oy, ox) for every output pixel, in row-major order.
template <class F> void each_output(const nn::detail::conv_geometry& g, F&& f) {
  for (std::size_t n = 0; n < g.n; ++n)
    for (std::size_t oy = 0; oy < g.oh; ++oy)
      for (std::size_t ox = 0; ox < g.ow; ++ox) f(n, oy, ox);
}

/// Offsets of input pixel (n, y, x), output pixel (n, oy, ox) and tap (ky, kx), in elements
/// per channel (multiply by the channel count).
inline std::size_t pixel(const nn::detail::conv_geometry& g, std::size_t n, std::size_t y, std::size_t x) { return (n * g.h + y) * g.w + x; }
inline std::size_t out_pixel(const nn::detail::conv_geometry& g, std::size_t n, std::size_t oy, std::size_t ox) { return (n * g.oh + oy) * g.ow + ox; }
inline std::size_t tap(const nn::detail::conv_geometry& g, std::size_t ky, std::size_t kx) { return ky * g.kw + kx; }

template <class T> void store(T* out, const std::vector<double>& acc) {
  for (std::size_t i = 0; i < acc.size(); ++i) out[i] = T(acc[i]);
}

}  // namespace conv_detail

/// y[n, oy, ox, co] = sum over taps and ci of x[n, y, x, ci] f[ky, kx, ci, co], each output's sum
/// in the order of (ky, kx, ci) and with no memory but its own (a microcontroller's inference).
template <class T, class SX, class SF, nn::detail::conv_options P> struct kernel<nn::detail::conv2d_op<T, SX, SF, P>> : nn::detail::conv2d_op<T, SX, SF, P> {
  using op = nn::detail::conv2d_op<T, SX, SF, P>;
  using op::g;
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& f) const {
    using namespace conv_detail;
    each_output(g, [&](std::size_t n, std::size_t oy, std::size_t ox) {
      for (std::size_t co = 0; co < g.o; ++co) {
        double acc = 0;
        each_tap_of(g, oy, ox, [&](std::size_t ky, std::size_t kx, std::size_t y, std::size_t xx) {
          for (std::size_t ci = 0; ci < g.c; ++ci) acc += double(x.data[pixel(g, n, y, xx) * g.c + ci]) * double(f.data[(tap(g, ky, kx) * g.c + ci) * g.o + co]);
        });
        out[out_pixel(g, n, oy, ox) * g.o + co] = T(acc);
      }
    });
  }
};

/// Conv2DBackpropInput: dx[n, y, x, ci] = the sum of dy[n, oy, ox, co] f[ky, kx, ci, co] over the
/// output pixels and taps that read (y, x), gathered per element of dx in the order a scatter over
/// (n, oy, ox, ky, kx, co) adds them (output pixels ascending: taps descending), with no memory
/// but its own (a transposed convolution's inference on a microcontroller).
template <class T, class SX, class SF, nn::detail::conv_options P> struct kernel<nn::detail::conv2d_backprop_input_op<T, SX, SF, P>> : nn::detail::conv2d_backprop_input_op<T, SX, SF, P> {
  using op = nn::detail::conv2d_backprop_input_op<T, SX, SF, P>;
  using op::g;
  void run(T* out, const expr::strided_view<T, 4>& dy, const expr::strided_view<T, 4>& f) const {
    using namespace conv_detail;
    // The output pixel that reads input row (or column) i through tap k, if one does.
    const auto reader = [](std::size_t i, std::size_t pad, std::size_t k, std::size_t dilation, std::size_t stride, std::size_t extent, std::size_t& o) {
      const std::ptrdiff_t t = std::ptrdiff_t(i + pad) - std::ptrdiff_t(k * dilation);
      if (t < 0 || std::size_t(t) % stride) return false;
      o = std::size_t(t) / stride;
      return o < extent;
    };
    for (std::size_t n = 0; n < g.n; ++n)
      for (std::size_t y = 0; y < g.h; ++y)
        for (std::size_t x = 0; x < g.w; ++x)
          for (std::size_t ci = 0; ci < g.c; ++ci) {
            double acc = 0;
            std::size_t oy = 0, ox = 0;
            for (std::size_t ky = g.kh; ky-- > 0;) {
              if (!reader(y, g.pt, ky, g.dh, g.sh, g.oh, oy)) continue;
              for (std::size_t kx = g.kw; kx-- > 0;) {
                if (!reader(x, g.pl, kx, g.dw, g.sw, g.ow, ox)) continue;
                for (std::size_t co = 0; co < g.o; ++co)
                  acc += double(dy.data[out_pixel(g, n, oy, ox) * g.o + co]) * double(f.data[(tap(g, ky, kx) * g.c + ci) * g.o + co]);
              }
            }
            out[pixel(g, n, y, x) * g.c + ci] = T(acc);
          }
  }
};

/// Conv2DBackpropFilter: df[ky, kx, ci, co] = sum over (n, oy, ox) of x[n, y, x, ci] dy[n, oy, ox, co].
template <class T, class SX, class SF, nn::detail::conv_options P> struct kernel<nn::detail::conv2d_backprop_filter_op<T, SX, SF, P>> : nn::detail::conv2d_backprop_filter_op<T, SX, SF, P> {
  using op = nn::detail::conv2d_backprop_filter_op<T, SX, SF, P>;
  using op::g, op::out_dims;
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& dy) const {
    using namespace conv_detail;
    std::vector<double> acc(product(out_dims));
    each_tap(g, [&](std::size_t n, std::size_t oy, std::size_t ox, std::size_t ky, std::size_t kx, std::size_t y, std::size_t xx) {
      for (std::size_t ci = 0; ci < g.c; ++ci)
        for (std::size_t co = 0; co < g.o; ++co)
          acc[(tap(g, ky, kx) * g.c + ci) * g.o + co] += double(x.data[pixel(g, n, y, xx) * g.c + ci]) * double(dy.data[out_pixel(g, n, oy, ox) * g.o + co]);
    });
    store(out, acc);
  }
};

/// Depthwise: y[n, oy, ox, k * m + j] = sum over taps of x[n, y, x, k] f[ky, kx, k, j], in the
/// order of (ky, kx), with no memory but the sum's.
template <class T, class SX, class SF, nn::detail::conv_options P> struct kernel<nn::detail::depthwise_op<T, SX, SF, P>> : nn::detail::depthwise_op<T, SX, SF, P> {
  using op = nn::detail::depthwise_op<T, SX, SF, P>;
  using op::g;
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& f) const {
    using namespace conv_detail;
    const std::size_t m = f.dims[3];
    each_output(g, [&](std::size_t n, std::size_t oy, std::size_t ox) {
      for (std::size_t k = 0; k < g.c; ++k)
        for (std::size_t j = 0; j < m; ++j) {
          double acc = 0;
          each_tap_of(g, oy, ox, [&](std::size_t ky, std::size_t kx, std::size_t y, std::size_t xx) {
            acc += double(x.data[pixel(g, n, y, xx) * g.c + k]) * double(f.data[(tap(g, ky, kx) * g.c + k) * m + j]);
          });
          out[out_pixel(g, n, oy, ox) * g.o + k * m + j] = T(acc);
        }
    });
  }
};

/// Depthwise input adjoint: dy[n, oy, ox, k * m + j] f[ky, kx, k, j] added into dx[n, y, x, k].
template <class T, class SX, class SF, nn::detail::conv_options P> struct kernel<nn::detail::depthwise_backprop_input_op<T, SX, SF, P>> : nn::detail::depthwise_backprop_input_op<T, SX, SF, P> {
  using op = nn::detail::depthwise_backprop_input_op<T, SX, SF, P>;
  using op::g, op::out_dims;
  void run(T* out, const expr::strided_view<T, 4>& dy, const expr::strided_view<T, 4>& f) const {
    using namespace conv_detail;
    const std::size_t m = f.dims[3];
    std::vector<double> acc(product(out_dims));
    each_tap(g, [&](std::size_t n, std::size_t oy, std::size_t ox, std::size_t ky, std::size_t kx, std::size_t y, std::size_t xx) {
      for (std::size_t k = 0; k < g.c; ++k)
        for (std::size_t j = 0; j < m; ++j)
          acc[pixel(g, n, y, xx) * g.c + k] += double(dy.data[out_pixel(g, n, oy, ox) * g.o + k * m + j]) * double(f.data[(tap(g, ky, kx) * g.c + k) * m + j]);
    });
    store(out, acc);
  }
};

/// Depthwise filter adjoint: df[ky, kx, k, j] = sum over (n, oy, ox) of x[n, y, x, k] dy[n, oy, ox, k * m + j].
template <class T, class SX, class SF, nn::detail::conv_options P> struct kernel<nn::detail::depthwise_backprop_filter_op<T, SX, SF, P>> : nn::detail::depthwise_backprop_filter_op<T, SX, SF, P> {
  using op = nn::detail::depthwise_backprop_filter_op<T, SX, SF, P>;
  using op::g, op::out_dims;
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& dy) const {
    using namespace conv_detail;
    const std::size_t m = out_dims[3];
    std::vector<double> acc(product(out_dims));
    each_tap(g, [&](std::size_t n, std::size_t oy, std::size_t ox, std::size_t ky, std::size_t kx, std::size_t y, std::size_t xx) {
      for (std::size_t k = 0; k < g.c; ++k)
        for (std::size_t j = 0; j < m; ++j)
          acc[(tap(g, ky, kx) * g.c + k) * m + j] += double(x.data[pixel(g, n, y, xx) * g.c + k]) * double(dy.data[out_pixel(g, n, oy, ox) * g.o + k * m + j]);
    });
    store(out, acc);
  }
};

}  // namespace ctflow::backend::reference
