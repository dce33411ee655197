// The convolution family: conv2d (SAME / VALID / explicit padding, strides, dilations, NCHW),
// conv1d, conv2d_transpose, depthwise and separable convolutions, and tf.image.resize's gradient: values
// against loop-by-loop definitions (or against the adjoint identity <conv(x), y> = <x, conv^T(y)>)
// and finite-difference gradients in double precision. (tests/parity compares them with
// TensorFlow.js.)
#include "conv_reference.hpp"

using namespace ctflow;
using namespace conv_reference;

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

TEST_CASE("Winograd F(2x2, 3x3) and F(4x4, 3x3): conv2d and both gradients match their definitions, on any thread count") {
  // Channels that leave part of a vector (17 in, 33 out), odd output sizes (a tile partly
  // outside), SAME and VALID and explicit padding, and (64 x 34 over 2 images) several chunks of
  // tiles per thread and two groups of the filter gradient. The input gradient is Winograd's
  // forward over dy where dx's tiles take no more products than dy's (SAME), its adjoint where
  // fewer (VALID, the explicit padding). Each shape takes the scheme of fewer products: F(4x4,
  // 3x3) for the 11 x 9 images, F(2x2, 3x3) for outputs 2 pixels high.
  namespace winograd = backend::cpu::winograd;
  const auto scheme_of = [](const dims_t<4>& x, nn::padding p) { return winograd::scheme_for(nn::detail::make_geometry(x, {3, 3, 17, 33}, 1, 1, 1, 1, p)); };
  Tensor<float, Shape<2, 11, 9, 17>> x = random_normal<float, Shape<2, 11, 9, 17>>(61, 0.0, 1.0);
  Tensor<float, Shape<3, 3, 17, 33>> f = random_normal<float, Shape<3, 3, 17, 33>>(62, 0.0, 1.0);
  REQUIRE(scheme_of(x.dims(), nn::SAME) == winograd::scheme::f4x4);
  REQUIRE(scheme_of(x.dims(), nn::VALID) == winograd::scheme::f4x4);
  check_conv(x, f, [](const auto& a, const auto& b) { return nn::conv2d<nn::SAME>(a, b); }, 1, 1, 1, 1, 1);
  check_conv(x, f, [](const auto& a, const auto& b) { return nn::conv2d<nn::VALID>(a, b); }, 1, 1, 1, 0, 0);
  check_conv(x, f, [](const auto& a, const auto& b) { return nn::conv2d<nn::explicit_padding(2, 0, 0, 1)>(a, b); }, 1, 1, 1, 2, 0);
  Tensor<float, Shape<3, 2, 6, 17>> xs = random_normal<float, Shape<3, 2, 6, 17>>(68, 0.0, 1.0);
  Tensor<float, Shape<3, 4, 8, 17>> xv = random_normal<float, Shape<3, 4, 8, 17>>(69, 0.0, 1.0);
  REQUIRE(scheme_of(xs.dims(), nn::SAME) == winograd::scheme::f2x2);
  REQUIRE(scheme_of(xv.dims(), nn::VALID) == winograd::scheme::f2x2);
  check_conv(xs, f, [](const auto& a, const auto& b) { return nn::conv2d<nn::SAME>(a, b); }, 1, 1, 1, 1, 1);
  check_conv(xv, f, [](const auto& a, const auto& b) { return nn::conv2d<nn::VALID>(a, b); }, 1, 1, 1, 0, 0);
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
  REQUIRE(std::equal(y1.data(), y1.data() + y1.size(), y3.data()));
  REQUIRE(std::equal(dx1.data(), dx1.data() + dx1.size(), dx3.data()));
  REQUIRE(std::equal(df1.data(), df1.data() + df1.size(), df3.data()));
  // One image of 9 tiles (the Fashion-MNIST CNN's second convolution at batch 1): one task of
  // tiles, whose products the threads share by position; the same bits.
  Tensor<float, Shape<1, 13, 13, 32>> x1 = random_normal<float, Shape<1, 13, 13, 32>>(74, 0.0, 1.0);
  Tensor<float, Shape<3, 3, 32, 64>> f1 = random_normal<float, Shape<3, 3, 32, 64>>(75, 0.0, 1.0);
  REQUIRE(winograd::scheme_for(nn::detail::make_geometry(x1.dims(), f1.dims(), 1, 1, 1, 1, nn::VALID)) == winograd::scheme::f4x4);
  config::set_num_threads(1);
  const auto one = eval(nn::conv2d<nn::VALID>(x1, f1));
  config::set_num_threads(3);
  const auto three = eval(nn::conv2d<nn::VALID>(x1, f1));
  config::set_num_threads(threads);
  REQUIRE(std::equal(one.data(), one.data() + one.size(), three.data()));
  const auto want = naive_conv(x1, f1, 1, 1, false);
  require_equal(one, want, 1e-4, scale_of(want));
}

TEST_CASE("Winograd's kept filter transforms follow every write to the filters") {
  // One 6 x 7 image is 42 output pixels: few enough that forward keeps the filters' transform
  // between calls, and serves it only while the filters are byte for byte those it was made from.
  using kept = backend::cpu::winograd::kept_filters<float>;
  Tensor<float, Shape<1, 6, 7, 16>> x = random_normal<float, Shape<1, 6, 7, 16>>(71, 0.0, 1.0);
  Tensor<float, Shape<3, 3, 16, 32>> f = random_normal<float, Shape<3, 3, 16, 32>>(72, 0.0, 1.0);
  Tensor<float, Shape<3, 3, 16, 32>> g = random_normal<float, Shape<3, 3, 16, 32>>(73, 0.0, 1.0);
  const auto conv = [&](const auto& w) { return eval(nn::conv2d<nn::SAME>(x, w)); };
  const auto check = [&](const auto& w) { require_equal(conv(w), naive_conv(x, w, 1, 1, true), 1e-4); };
  const std::size_t held = kept::local().held_bytes();
  check(f);
  REQUIRE(kept::local().held_bytes() > held);  // the transform is kept
  check(f);
  const auto before = conv(f);
  f.data()[5] += 1.0f;  // a write through the tensor's memory
  check(f);
  const auto after = conv(f);
  REQUIRE_FALSE(std::equal(after.data(), after.data() + after.size(), before.data()));
  const std::span<float> taken = f.flat();  // a view taken before the calls, written after one
  check(f);
  taken[f.size() - 1] = -3.0f;
  check(f);
  check(g);  // other filters, then the first again
  check(f);
  f = g * 2.0f;  // a whole new value in the same memory
  check(f);
  Tensor<float, Shape<3, 3, 16, 32>> copy = f;  // equal filters elsewhere
  check(copy);
}

TEST_CASE("conv2d's gradients (input and filter) match finite differences") {
  Tensor<double, Shape<2, 5, 6, 2>> x = random_normal<double, Shape<2, 5, 6, 2>>(31, 0.0, 1.0);
  Tensor<double, Shape<3, 2, 2, 3>> f = random_normal<double, Shape<3, 2, 2, 3>>(32, 0.0, 1.0);
  gradcheck::check(reduce_sum(square(nn::conv2d<nn::VALID>(x, f))), x, f);
  gradcheck::check(reduce_sum(sin(nn::conv2d<nn::SAME, 2>(x, f))), x, f);
  gradcheck::check(reduce_sum(sin(nn::conv2d<nn::SAME, 1, 2, 2, 1>(x, f))), x, f);
}
