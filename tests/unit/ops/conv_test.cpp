// The convolution family: conv2d (SAME / VALID / explicit padding, strides, dilations, NCHW),
// conv1d, conv2d_transpose, depthwise and separable convolutions, and tf.image.resize's gradient: values
// against loop-by-loop definitions (or against the adjoint identity <conv(x), y> = <x, conv^T(y)>)
// and finite-difference gradients in double precision. (tests/parity compares them with
// TensorFlow.js.)
#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

#include "../autodiff/gradcheck.hpp"

using namespace ctflow;

namespace {

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

template <class A, class B> void require_equal(const A& a, const B& b, double tol) {
  REQUIRE(a.dims() == b.dims());
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(double(a.data()[i]) == Approx(double(b.data()[i])).epsilon(tol).margin(tol));
}

template <class A, class B> double dot(const A& a, const B& b) {
  REQUIRE(a.size() == b.size());
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a.data()[i]) * double(b.data()[i]);
  return s;
}

/// conv(xs, fs) (float32, strides s and sw, dilation d, leading padding pt and pl) and its
/// gradients dx and df of <conv(x, f), dy> against their definitions, within tol: every (pixel,
/// tap) pair of the forward loops adds its product to both.
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
  require_equal(y, want_y, tol);
  require_equal(dx, want_dx, tol);
  require_equal(df, want_df, tol);
  CHECK(value == Approx(dot(want_y, dy)).epsilon(1e-4));
}

}  // namespace

TEST_CASE("conv2d matches its definition: VALID, SAME with odd and even sizes, strides, dilations") {
  Tensor<double, Shape<2, 7, 6, 3>> x = random_normal<double, Shape<2, 7, 6, 3>>(21, 0.0, 1.0);
  Tensor<double, Shape<3, 3, 3, 4>> f = random_normal<double, Shape<3, 3, 3, 4>>(22, 0.0, 1.0);
  Tensor<double, Shape<2, 2, 3, 5>> f2 = random_normal<double, Shape<2, 2, 3, 5>>(23, 0.0, 1.0);
  const auto valid = eval(nn::conv2d<nn::VALID>(x, f));
  static_assert(std::is_same_v<shape_t<decltype(valid)>, Shape<2, 5, 4, 4>>);
  require_equal(valid, naive_conv(x, f, 1, 1, false), 1e-12);
  const auto same = eval(nn::conv2d<nn::SAME>(x, f));
  static_assert(std::is_same_v<shape_t<decltype(same)>, Shape<2, 7, 6, 4>>);
  require_equal(same, naive_conv(x, f, 1, 1, true), 1e-12);
  // Stride 2 over an even width with an even kernel: TensorFlow pads bottom/right more.
  const auto s2 = eval(nn::conv2d<nn::SAME, 2>(x, f2));
  static_assert(std::is_same_v<shape_t<decltype(s2)>, Shape<2, 4, 3, 5>>);
  require_equal(s2, naive_conv(x, f2, 2, 1, true), 1e-12);
  const auto dil = eval(nn::conv2d<nn::VALID, 1, 1, 2, 2>(x, f2));
  require_equal(dil, naive_conv(x, f2, 1, 2, false), 1e-12);
  const auto sd = eval(nn::conv2d<nn::SAME, 2, 2, 2, 2>(x, f));
  require_equal(sd, naive_conv(x, f, 2, 2, true), 1e-12);
  // float32 and dyn extents.
  Tensor<float, Shape<dyn, dyn, dyn, 3>> xf = cast<float>(x);
  Tensor<float, Shape<dyn, dyn, dyn, dyn>> yf = nn::conv2d<nn::SAME>(xf, cast<float>(f));
  require_equal(yf, same, 1e-5);
  // Run-time errors for dyn extents.
  Tensor<float, Shape<dyn, dyn, dyn, dyn>> wrong_c({1, 5, 5, 2});
  CHECK_THROWS_AS(nn::conv2d<nn::VALID>(wrong_c, cast<float>(f)), shape_error);
  Tensor<float, Shape<dyn, dyn, dyn, dyn>> tiny({1, 2, 2, 3});
  CHECK_THROWS_WITH(nn::conv2d<nn::VALID>(tiny, cast<float>(f)), Catch::Contains("the window is larger than the input with its padding"));
}

TEST_CASE("conv2d with many channels (several GEMM panels) matches its definition and finite differences") {
  Tensor<double, Shape<2, 5, 4, 16>> x = random_normal<double, Shape<2, 5, 4, 16>>(41, 0.0, 1.0);
  Tensor<double, Shape<3, 3, 16, 8>> f = random_normal<double, Shape<3, 3, 16, 8>>(42, 0.0, 1.0);
  require_equal(eval(nn::conv2d<nn::SAME, 2>(x, f)), naive_conv(x, f, 2, 1, true), 1e-12);
  gradcheck::check(reduce_sum(sin(nn::conv2d<nn::SAME>(x, f))), x, f);
}

TEST_CASE("float32 conv2d and both gradients match their definitions across the direct kernels' tiles") {
  // Shapes that cut the direct kernels' tiles (12 pixels x 32 outputs forward, 6 taps x 64 or 12
  // taps x 32 outputs for the filter) unevenly: 40 and 20 outputs (a masked panel), 20, 3 and 1
  // channels (for the input gradient: a vector of them or more, fewer, and the dot products of
  // a single one), widths that leave a partial last tile, a width stride of 2 and dilations; pads
  // larger than the window take the patch-matrix path, which must agree too. (3x3 filters with
  // unit strides over 20 channels in and 40 out take the Winograd kernels.)
  Tensor<float, Shape<3, 9, 13, 20>> x = random_normal<float, Shape<3, 9, 13, 20>>(51, 0.0, 1.0);
  Tensor<float, Shape<3, 3, 20, 40>> f = random_normal<float, Shape<3, 3, 20, 40>>(52, 0.0, 1.0);
  Tensor<float, Shape<3, 9, 13, 3>> x3 = random_normal<float, Shape<3, 9, 13, 3>>(53, 0.0, 1.0);
  Tensor<float, Shape<2, 3, 3, 20>> f3 = random_normal<float, Shape<2, 3, 3, 20>>(54, 0.0, 1.0);
  Tensor<float, Shape<3, 9, 13, 1>> x1 = random_normal<float, Shape<3, 9, 13, 1>>(56, 0.0, 1.0);
  Tensor<float, Shape<3, 3, 1, 40>> f1 = random_normal<float, Shape<3, 3, 1, 40>>(57, 0.0, 1.0);
  Tensor<float, Shape<2, 3, 20, 40>> f23 = random_normal<float, Shape<2, 3, 20, 40>>(58, 0.0, 1.0);
  check_conv(x, f23, [](const auto& a, const auto& b) { return nn::conv2d<nn::SAME>(a, b); }, 1, 1, 1, 0, 1);  // all three direct
  check_conv(x, f, [](const auto& a, const auto& b) { return nn::conv2d<nn::SAME>(a, b); }, 1, 1, 1, 1, 1);
  check_conv(x, f, [](const auto& a, const auto& b) { return nn::conv2d<nn::VALID, 1, 2, 2>(a, b); }, 1, 2, 2, 0, 0);
  check_conv(x, f, [](const auto& a, const auto& b) { return nn::conv2d<nn::explicit_padding(4, 1, 3, 0)>(a, b); }, 1, 1, 1, 4, 3);
  check_conv(x3, f3, [](const auto& a, const auto& b) { return nn::conv2d<nn::SAME>(a, b); }, 1, 1, 1, 0, 1);
  check_conv(x1, f1, [](const auto& a, const auto& b) { return nn::conv2d<nn::SAME>(a, b); }, 1, 1, 1, 1, 1);  // one input channel
  check_conv(x, f, [](const auto& a, const auto& b) { return nn::conv2d<nn::SAME, 2>(a, b); }, 2, 2, 1, 1, 1);
}

TEST_CASE("Winograd F(2x2, 3x3): conv2d and both gradients match their definitions, on any thread count") {
  // Channels that leave part of a vector (17 in, 33 out), odd output sizes (a tile half outside),
  // SAME and VALID and explicit padding, and (64 x 34 over 2 images: 1088 tiles) several chunks
  // of tiles per thread and two groups of the filter gradient. The input gradient is Winograd's
  // forward over dy for SAME, its adjoint for VALID and the explicit padding (fewer tiles of dy).
  Tensor<float, Shape<2, 11, 9, 17>> x = random_normal<float, Shape<2, 11, 9, 17>>(61, 0.0, 1.0);
  Tensor<float, Shape<3, 3, 17, 33>> f = random_normal<float, Shape<3, 3, 17, 33>>(62, 0.0, 1.0);
  check_conv(x, f, [](const auto& a, const auto& b) { return nn::conv2d<nn::SAME>(a, b); }, 1, 1, 1, 1, 1);
  check_conv(x, f, [](const auto& a, const auto& b) { return nn::conv2d<nn::VALID>(a, b); }, 1, 1, 1, 0, 0);
  check_conv(x, f, [](const auto& a, const auto& b) { return nn::conv2d<nn::explicit_padding(2, 0, 0, 1)>(a, b); }, 1, 1, 1, 2, 0);
  Tensor<float, Shape<2, 64, 34, 16>> xl = random_normal<float, Shape<2, 64, 34, 16>>(63, 0.0, 1.0);
  Tensor<float, Shape<3, 3, 16, 16>> fl = random_normal<float, Shape<3, 3, 16, 16>>(64, 0.0, 1.0);
  const auto conv = [](const auto& a, const auto& b) { return nn::conv2d<nn::SAME>(a, b); };
  check_conv(xl, fl, conv, 1, 1, 1, 1, 1);
  // Float64 (8 lanes): against the definition and finite differences.
  Tensor<double, Shape<1, 6, 5, 8>> xd = random_normal<double, Shape<1, 6, 5, 8>>(65, 0.0, 1.0);
  Tensor<double, Shape<3, 3, 8, 9>> fd = random_normal<double, Shape<3, 3, 8, 9>>(66, 0.0, 1.0);
  require_equal(eval(nn::conv2d<nn::SAME>(xd, fd)), naive_conv(xd, fd, 1, 1, true), 1e-12);
  gradcheck::check(reduce_sum(sin(nn::conv2d<nn::VALID>(xd, fd))), xd, fd);
  // Every output sums in an order fixed by the shape: the same bits on 1 and 3 threads.
  const auto dyl = random_normal<float, shape_t<decltype(conv(xl, fl))>>(67, 0.0, 1.0);
  const auto run = [&](int threads) {
    config::set_num_threads(threads);
    auto [value, dx, df] = value_and_grad(reduce_sum(conv(xl, fl) * dyl), xl, fl);
    return std::tuple{eval(conv(xl, fl)), dx, df};
  };
  const int threads = int(backend::cpu::pool().size());
  const auto [y1, dx1, df1] = run(1);
  const auto [y3, dx3, df3] = run(3);
  config::set_num_threads(threads);
  REQUIRE(std::equal(y1.data(), y1.data() + y1.size(), y3.data()));
  REQUIRE(std::equal(dx1.data(), dx1.data() + dx1.size(), dx3.data()));
  REQUIRE(std::equal(df1.data(), df1.data() + df1.size(), df3.data()));
}

TEST_CASE("conv2d's gradients (input and filter) match finite differences") {
  Tensor<double, Shape<2, 5, 6, 2>> x = random_normal<double, Shape<2, 5, 6, 2>>(31, 0.0, 1.0);
  Tensor<double, Shape<3, 2, 2, 3>> f = random_normal<double, Shape<3, 2, 2, 3>>(32, 0.0, 1.0);
  gradcheck::check(reduce_sum(square(nn::conv2d<nn::VALID>(x, f))), x, f);
  gradcheck::check(reduce_sum(sin(nn::conv2d<nn::SAME, 2>(x, f))), x, f);
  gradcheck::check(reduce_sum(sin(nn::conv2d<nn::SAME, 1, 2, 2, 1>(x, f))), x, f);
}

TEST_CASE("conv2d with explicit padding, NCHW data format and conv1d match their definitions") {
  Tensor<double, Shape<2, 5, 6, 3>> x = random_normal<double, Shape<2, 5, 6, 3>>(1, 0.0, 1.0);
  Tensor<double, Shape<3, 2, 3, 4>> f = random_normal<double, Shape<3, 2, 3, 4>>(2, 0.0, 1.0);
  constexpr auto pads = nn::explicit_padding(2, 0, 1, 3);
  const auto e = eval(nn::conv2d<pads, 2>(x, f));
  static_assert(std::is_same_v<shape_t<decltype(e)>, Shape<2, 3, 5, 4>>);  // (5 + 2 - 3) / 2 + 1, (6 + 4 - 2) / 2 + 1
  require_equal(e, naive(x, f, 2, 1, 2, 0, 1, 3, false), 1e-12);
  gradcheck::check(reduce_sum(sin(nn::conv2d<pads, 2>(x, f))), x, f);
  // Explicit zeros equal VALID, and SAME's own pads as explicit ones give SAME.
  require_equal(eval(nn::conv2d<nn::explicit_padding(0, 0, 0, 0)>(x, f)), eval(nn::conv2d<nn::VALID>(x, f)), 1e-12);
  require_equal(eval(nn::conv2d<nn::explicit_padding(1, 1, 0, 1)>(x, f)), eval(nn::conv2d<nn::SAME>(x, f)), 1e-12);

  // NCHW: the same numbers, laid out channels first; filters stay HWIO.
  Tensor<double, Shape<2, 3, 5, 6>> xc = nn::nhwc_to_nchw(x);
  const auto c = eval(nn::conv2d<nn::SAME, 2>(xc, f, nn::NCHW));
  static_assert(std::is_same_v<shape_t<decltype(c)>, Shape<2, 4, 3, 3>>);
  require_equal(c, eval(nn::nhwc_to_nchw(nn::conv2d<nn::SAME, 2>(x, f))), 1e-12);
  require_equal(eval(nn::conv2d<nn::SAME>(x, f, nn::NHWC)), eval(nn::conv2d<nn::SAME>(x, f)), 0);
  gradcheck::check(reduce_sum(sin(nn::conv2d<nn::SAME, 2>(xc, f, nn::NCHW))), xc, f);

  // conv1d: [n, w, c] * [kw, c, o], as conv2d over a height of one.
  Tensor<double, Shape<2, 9, 3>> s = random_normal<double, Shape<2, 9, 3>>(3, 0.0, 1.0);
  Tensor<double, Shape<3, 3, 2>> k = random_normal<double, Shape<3, 3, 2>>(4, 0.0, 1.0);
  const auto one = eval(nn::conv1d<nn::SAME, 2>(s, k));
  static_assert(std::is_same_v<shape_t<decltype(one)>, Shape<2, 5, 2>>);
  Tensor<double, Shape<2, 1, 9, 3>> s4 = reshape<Shape<2, 1, 9, 3>>(s);
  Tensor<double, Shape<1, 3, 3, 2>> k4 = reshape<Shape<1, 3, 3, 2>>(k);
  const auto ref = naive(s4, k4, 2, 1, 0, 0, 1, 1, false);  // SAME, width 9, stride 2: 1 before, 1 after
  for (std::size_t i = 0; i < one.size(); ++i) REQUIRE(one.data()[i] == Approx(ref.data()[i]).epsilon(1e-12));
  const auto dil = eval(nn::conv1d<nn::VALID, 1, 2>(s, k));
  static_assert(std::is_same_v<shape_t<decltype(dil)>, Shape<2, 5, 2>>);
  Tensor<double, Shape<2, 3, 9>> sc = transpose<0, 2, 1>(s);
  require_equal(eval(nn::conv1d<nn::SAME, 2>(sc, k, nn::NCW)), eval(transpose<0, 2, 1>(nn::conv1d<nn::SAME, 2>(s, k))), 1e-12);
  gradcheck::check(reduce_sum(sin(nn::conv1d<nn::explicit_padding(0, 0, 2, 1), 2>(s, k))), s, k);
}

TEST_CASE("conv2d_transpose is conv2d's adjoint, with Keras's output sizes, and has gradients") {
  Tensor<double, Shape<2, 4, 3, 5>> x = random_normal<double, Shape<2, 4, 3, 5>>(5, 0.0, 1.0);
  Tensor<double, Shape<3, 3, 2, 5>> f = random_normal<double, Shape<3, 3, 2, 5>>(6, 0.0, 1.0);  // [kh, kw, out 2, in 5]
  const auto same = eval(nn::conv2d_transpose<nn::SAME, 2>(x, f));
  static_assert(std::is_same_v<shape_t<decltype(same)>, Shape<2, 8, 6, 2>>);  // in * stride
  const auto valid = eval(nn::conv2d_transpose<nn::VALID, 2>(x, f));
  static_assert(std::is_same_v<shape_t<decltype(valid)>, Shape<2, 9, 7, 2>>);  // in * stride + (3 - 2)
  const auto sized = eval(nn::conv2d_transpose<nn::SAME, 2>(x, f, nn::output_size<7, 5>));
  static_assert(std::is_same_v<shape_t<decltype(sized)>, Shape<2, 7, 5, 2>>);
  // <conv2d(z, f), x> = <z, conv2d_transpose(x, f)> for every z of the output's shape.
  const auto check_adjoint = [&](const auto& t, auto conv) {
    Tensor<double, shape_t<std::remove_cvref_t<decltype(t)>>> z = random_normal<double, shape_t<std::remove_cvref_t<decltype(t)>>>(7, 0.0, 1.0);
    const auto cz = eval(conv(z));
    REQUIRE(dot(cz, x) == Approx(dot(z, t)).epsilon(1e-12));
  };
  check_adjoint(same, [&](const auto& z) { return nn::conv2d<nn::SAME, 2>(z, f); });
  check_adjoint(valid, [&](const auto& z) { return nn::conv2d<nn::VALID, 2>(z, f); });
  check_adjoint(sized, [&](const auto& z) { return nn::conv2d<nn::SAME, 2>(z, f); });
  gradcheck::check(reduce_sum(sin(nn::conv2d_transpose<nn::SAME, 2>(x, f))), x, f);
  gradcheck::check(reduce_sum(sin(nn::conv2d_transpose<nn::VALID, 1, 2>(x, f))), x, f);
  // A size conv2d would not map back to the input's is refused.
  Tensor<double, Shape<dyn, dyn, dyn, 5>> xd({2, 4, 3, 5});
  CHECK_THROWS_WITH((nn::conv2d_transpose<nn::SAME, 2>(xd, f, nn::output_size<9, 6>)),
                    Catch::Contains("ctflow::nn::conv2d_transpose: conv2d of the output size would not give the input's"));
}

TEST_CASE("depthwise and separable convolutions match their definitions; gradients") {
  Tensor<double, Shape<2, 6, 5, 3>> x = random_normal<double, Shape<2, 6, 5, 3>>(8, 0.0, 1.0);
  Tensor<double, Shape<3, 3, 3, 2>> f = random_normal<double, Shape<3, 3, 3, 2>>(9, 0.0, 1.0);  // multiplier 2
  Tensor<double, Shape<2, 2, 3, 1>> f1 = random_normal<double, Shape<2, 2, 3, 1>>(10, 0.0, 1.0);
  const auto valid = eval(nn::depthwise_conv2d<nn::VALID>(x, f));
  static_assert(std::is_same_v<shape_t<decltype(valid)>, Shape<2, 4, 3, 6>>);
  require_equal(valid, naive(x, f, 1, 1, 0, 0, 0, 0, true), 1e-12);
  const auto same = eval(nn::depthwise_conv2d<nn::SAME, 2>(x, f1));  // even kernel, stride 2: pads (0, 1) and (0, 1)
  static_assert(std::is_same_v<shape_t<decltype(same)>, Shape<2, 3, 3, 3>>);
  require_equal(same, naive(x, f1, 2, 1, 0, 0, 0, 1, true), 1e-12);
  const auto ex = eval(nn::depthwise_conv2d<nn::explicit_padding(1, 2, 0, 1), 2>(x, f));
  require_equal(ex, naive(x, f, 2, 1, 1, 2, 0, 1, true), 1e-12);
  gradcheck::check(reduce_sum(sin(nn::depthwise_conv2d<nn::SAME, 2>(x, f))), x, f);
  gradcheck::check(reduce_sum(sin(nn::depthwise_conv2d<nn::VALID, 1, 1, 2, 1>(x, f1))), x, f1);
  Tensor<double, Shape<2, 3, 6, 5>> xc = nn::nhwc_to_nchw(x);
  require_equal(eval(nn::depthwise_conv2d<nn::SAME>(xc, f, nn::NCHW)), eval(nn::nhwc_to_nchw(nn::depthwise_conv2d<nn::SAME>(x, f))), 1e-12);
  // Separable: depthwise, then a 1x1 conv2d.
  Tensor<double, Shape<1, 1, 6, 4>> p = random_normal<double, Shape<1, 1, 6, 4>>(11, 0.0, 1.0);
  const auto sep = eval(nn::separable_conv2d<nn::SAME, 2>(x, f, p));
  static_assert(std::is_same_v<shape_t<decltype(sep)>, Shape<2, 3, 3, 4>>);
  require_equal(sep, naive(eval(nn::depthwise_conv2d<nn::SAME, 2>(x, f)), p, 1, 1, 0, 0, 0, 0, false), 1e-12);
  gradcheck::check(reduce_sum(sin(nn::separable_conv2d<nn::SAME, 2>(x, f, p))), x, f, p);
  require_equal(eval(nn::separable_conv2d<nn::SAME, 2>(xc, f, p, nn::NCHW)), eval(nn::nhwc_to_nchw(sep)), 1e-12);
  // float32 with many channels (the contiguous channel runs) against float64.
  Tensor<float, Shape<4, 9, 9, 40>> xf = random_normal<float, Shape<4, 9, 9, 40>>(12, 0.0, 1.0);
  Tensor<float, Shape<3, 3, 40, 1>> ff = random_normal<float, Shape<3, 3, 40, 1>>(13, 0.0, 1.0);
  require_equal(eval(nn::depthwise_conv2d<nn::SAME>(xf, ff)), naive(eval(cast<double>(xf)), eval(cast<double>(ff)), 1, 1, 1, 1, 1, 1, true), 1e-4);
  Tensor<float, Shape<dyn, dyn, dyn, dyn>> wrong({1, 5, 5, 2});
  CHECK_THROWS_WITH(nn::depthwise_conv2d<nn::VALID>(wrong, ff), Catch::Contains("input channels differ from the filter channels"));
}

TEST_CASE("image::resize is lazy and differentiable: bilinear and nearest adjoints") {
  Tensor<double, Shape<2, 3, 4, 2>> x = random_normal<double, Shape<2, 3, 4, 2>>(14, 0.0, 1.0);
  Tensor<float, Shape<2, 3, 4, 2>> xf = cast<float>(x);
  for (auto method : {image::ResizeMethod::BILINEAR, image::ResizeMethod::NEAREST_NEIGHBOR}) {
    // The adjoint identity <resize(x), z> = <x, resize^T(z)>, resize^T being the gradient.
    Tensor<float, Shape<2, 5, 7, 2>> z = random_normal<float, Shape<2, 5, 7, 2>>(15, 0.0, 1.0);
    const auto [value, dx] = value_and_grad(reduce_sum(image::resize<5, 7>(xf, method) * z), xf);
    REQUIRE(double(value) == Approx(dot(eval(image::resize<5, 7>(xf, method)), z)).epsilon(1e-5));
    REQUIRE(dot(dx, xf) == Approx(double(value)).epsilon(1e-5));  // linear: <x, grad> = value
    // Against finite differences (float32 result of double input is not differentiable, so the
    // check runs on float32 with a wide step).
    const auto [v2, d2] = value_and_grad(reduce_sum(square(image::resize<2, 3>(xf, method))), xf);
    Tensor<float, Shape<2, 3, 4, 2>> bumped = xf;
    for (std::size_t i : {0u, 5u, 13u, 30u}) {
      bumped.data()[i] += 1e-2f;
      const double up = double(eval(reduce_sum(square(image::resize<2, 3>(bumped, method))))());
      bumped.data()[i] -= 2e-2f;
      const double down = double(eval(reduce_sum(square(image::resize<2, 3>(bumped, method))))());
      bumped.data()[i] += 1e-2f;
      REQUIRE(double(d2.data()[i]) == Approx((up - down) / 2e-2).margin(2e-3).epsilon(2e-3));
    }
  }
}
