// The loop-by-loop definitions and helpers the convolution tests (conv_test.cpp,
// conv_variants_test.cpp) compare ctflow's kernels with.
#pragma once

#include <algorithm>
#include <cmath>

#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

#include "../autodiff/gradcheck.hpp"

namespace conv_reference {

using namespace ctflow;

using Dyn4 = Tensor<double, Shape<dyn, dyn, dyn, dyn>>;

/// TensorFlow's depthwise_conv2d (and conv2d when `depthwise` is false), loop by loop, with
/// stride s, dilation d, and the padding before and after given explicitly.
template <class X, class F>
Dyn4 naive(const X& x, const F& f, std::size_t s, std::size_t d, std::size_t pt, std::size_t pb, std::size_t pl, std::size_t pr, bool depthwise) {
  const auto xd = x.dims();
  const auto fd = f.dims();
  const std::size_t oh = (xd[1] + pt + pb - (fd[0] - 1) * d - 1) / s + 1, ow = (xd[2] + pl + pr - (fd[1] - 1) * d - 1) / s + 1;
  const std::size_t oc = depthwise ? fd[2] * fd[3] : fd[3];
  Dyn4 y({xd[0], oh, ow, oc});
  for (std::size_t n = 0; n < xd[0]; ++n)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j)
        for (std::size_t o = 0; o < oc; ++o) {
          double acc = 0;
          for (std::size_t a = 0; a < fd[0]; ++a)
            for (std::size_t b = 0; b < fd[1]; ++b) {
              const std::ptrdiff_t yy = std::ptrdiff_t(i * s + a * d) - std::ptrdiff_t(pt), xx = std::ptrdiff_t(j * s + b * d) - std::ptrdiff_t(pl);
              if (yy < 0 || xx < 0 || yy >= std::ptrdiff_t(xd[1]) || xx >= std::ptrdiff_t(xd[2])) continue;
              if (depthwise) acc += x(n, std::size_t(yy), std::size_t(xx), o / fd[3]) * f(a, b, o / fd[3], o % fd[3]);
              else
                for (std::size_t c = 0; c < xd[3]; ++c) acc += x(n, std::size_t(yy), std::size_t(xx), c) * f(a, b, c, o);
            }
          y(n, i, j, o) = acc;
        }
  return y;
}

/// conv2d with TensorFlow's padding: SAME pads (out - 1) * s + window - in in all, the smaller
/// half before; VALID pads nothing.
template <class X, class F> Dyn4 naive_conv(const X& x, const F& f, std::size_t s, std::size_t d, bool same) {
  const auto xd = x.dims();
  const auto fd = f.dims();
  const auto pads = [&](std::size_t in, std::size_t k) {
    const std::size_t out = (in + s - 1) / s, need = (out - 1) * s + (k - 1) * d + 1, total = same && need > in ? need - in : 0;
    return std::pair{total / 2, total - total / 2};
  };
  const auto [pt, pb] = pads(xd[1], fd[0]);
  const auto [pl, pr] = pads(xd[2], fd[1]);
  return naive(x, f, s, d, pt, pb, pl, pr, false);
}

/// a == b elementwise within tol relative, or within tol times `scale` (1 unless given).
template <class A, class B> void require_equal(const A& a, const B& b, double tol, double scale = 1) {
  REQUIRE(a.dims() == b.dims());
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(double(a.data()[i]) == Approx(double(b.data()[i])).epsilon(tol).margin(tol * scale));
}
/// The root mean square of b's elements, at least 1: the scale of a float32 sum's rounding where
/// its terms cancel (an output of 4352 products, about 66 in size, may come to 1.4 and still
/// carry the rounding of 66).
template <class B> double scale_of(const B& b) {
  double s = 0;
  for (std::size_t i = 0; i < b.size(); ++i) s += double(b.data()[i]) * double(b.data()[i]);
  return std::max(1.0, std::sqrt(s / double(std::max<std::size_t>(b.size(), 1))));
}

template <class A, class B> double dot(const A& a, const B& b) {
  REQUIRE(a.size() == b.size());
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a.data()[i]) * double(b.data()[i]);
  return s;
}

/// conv(xs, fs) (float32, strides s and sw, dilation d, leading padding pt and pl) and its
/// gradients dx and df of <conv(x, f), dy> against their definitions, within tol of each result
/// or of its tensor's scale (scale_of): every (pixel, tap) pair of the forward loops adds its
/// product to both.
template <class X, class F, class Conv>
void check_conv(const X& xs, const F& fs, Conv conv, std::size_t s, std::size_t sw, std::size_t d, std::size_t pt, std::size_t pl, double tol = 2e-4) {
  const auto y = eval(conv(xs, fs));
  Dyn4 xd = cast<double>(xs), fd = cast<double>(fs);
  const auto yd = y.dims();
  auto dy = random_normal<double, Shape<dyn, dyn, dyn, dyn>>(55, 0.0, 1.0, {yd[0], yd[1], yd[2], yd[3]});
  Tensor<float, shape_t<decltype(y)>> dyf = cast<float>(dy);
  const auto [value, dx, df] = value_and_grad(reduce_sum(conv(xs, fs) * dyf), xs, fs);
  const auto xdims = xs.dims();
  const auto fdims = fs.dims();
  Dyn4 want_y({yd[0], yd[1], yd[2], yd[3]}), want_dx({xdims[0], xdims[1], xdims[2], xdims[3]}), want_df({fdims[0], fdims[1], fdims[2], fdims[3]});
  for (std::size_t n = 0; n < yd[0]; ++n)
    for (std::size_t i = 0; i < yd[1]; ++i)
      for (std::size_t j = 0; j < yd[2]; ++j)
        for (std::size_t a = 0; a < fdims[0]; ++a)
          for (std::size_t b = 0; b < fdims[1]; ++b) {
            const std::ptrdiff_t yy = std::ptrdiff_t(i * s + a * d) - std::ptrdiff_t(pt), xx = std::ptrdiff_t(j * sw + b * d) - std::ptrdiff_t(pl);
            if (yy < 0 || xx < 0 || yy >= std::ptrdiff_t(xdims[1]) || xx >= std::ptrdiff_t(xdims[2])) continue;
            for (std::size_t c = 0; c < xdims[3]; ++c)
              for (std::size_t o = 0; o < yd[3]; ++o) {
                const double xv = xd(n, std::size_t(yy), std::size_t(xx), c), g = dy(n, i, j, o);
                want_y(n, i, j, o) += xv * fd(a, b, c, o);
                want_dx(n, std::size_t(yy), std::size_t(xx), c) += g * fd(a, b, c, o);
                want_df(a, b, c, o) += xv * g;
              }
          }
  require_equal(y, want_y, tol, scale_of(want_y));
  require_equal(dx, want_dx, tol, scale_of(want_dx));
  require_equal(df, want_df, tol, scale_of(want_df));
  CHECK(value == Approx(dot(want_y, dy)).epsilon(1e-4));
}

}  // namespace conv_reference
