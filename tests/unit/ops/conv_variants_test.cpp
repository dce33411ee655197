// The convolution family's variants: explicit padding, NCHW and conv1d, conv2d_transpose,
// depthwise and separable convolutions, and tf.image.resize's gradient, against loop-by-loop
// definitions (conv_reference.hpp) and finite differences. A translation unit of conv_test.
#include "conv_reference.hpp"

using namespace ctflow;
using namespace conv_reference;

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
