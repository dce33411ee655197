// Every op family on the CPU against the reference device, over random shapes: broadcasting
// patterns, dyn extents, sizes that are not multiples of the SIMD width, strided views, float32
// and float64, one and two threads. Also the device seam itself: placement, copies, storage.
#include "devices.hpp"

using namespace ctflow;
using devices::same_on_both;
using devices::tolerance;
using devices::uniform;

using D3 = Shape<dyn, dyn, dyn>;
using D2 = Shape<dyn, dyn>;
using D1 = Shape<dyn>;

TEST_CASE("an expression's device follows its operands; to<Device> copies across") {
  Tensor<float, Shape<2, 3>, reference> r;
  for (std::size_t i = 0; i < r.size(); ++i) r.data()[i] = float(i) - 2.5f;
  auto e = relu(r) * 2.f + 1.f;
  static_assert(std::is_same_v<device_t<decltype(e)>, reference>);
  static_assert(std::is_same_v<device_t<decltype(matmul(r, transpose(r)))>, reference>);
  static_assert(std::is_same_v<device_t<decltype(expr::Scalar<float>{1.f})>, any_device>);
  const auto v = eval(e);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(v)>, Tensor<float, Shape<2, 3>, reference>>);
  const auto c = to<cpu>(v);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(c)>, Tensor<float, Shape<2, 3>, cpu>>);
  for (std::size_t i = 0; i < c.size(); ++i) REQUIRE(c.data()[i] == std::max(float(i) - 2.5f, 0.f) * 2.f + 1.f);
  const auto back = to<reference>(c * 0.5f);
  REQUIRE(back(1, 2) == c(1, 2) * 0.5f);
}

TEST_CASE("reference tensors take their memory from the system, not the CPU's block cache") {
  const auto before = detail::block_cache::instance().system_allocations();
  {
    Tensor<float, Shape<dyn, dyn>, reference> a({300, 70});
    Tensor<float, Shape<dyn, dyn>, reference> b = a + 1.f;
    REQUIRE(b(299, 69) == 1.f);
    // The values the forward pass keeps and the adjoints of the backward pass too.
    Variable<float, Shape<70, 50>, reference> w(fill<float, Shape<70, 50>, reference>(0.01f));
    auto [loss, gw] = value_and_grad(reduce_sum(square(tanh(matmul(b, w)))), w);
    REQUIRE(loss > 0.f);
    REQUIRE(gw(0, 0) != 0.f);
  }
  REQUIRE(detail::block_cache::instance().system_allocations() == before);
}

TEMPLATE_TEST_CASE("element-wise ops and broadcasting", "", float, double) {
  using T = TestType;
  devices::extents ext(11);
  for (int trial = 0; trial < 4; ++trial) {
    const std::size_t a = ext(1, 5), b = ext(1, 23), c = ext(1, 37);
    INFO("extents " << a << " x " << b << " x " << c);
    const auto x = uniform<T, D3>({a, b, c}, 1 + trial), y = uniform<T, D3>({a, b, c}, 2 + trial);
    const auto row = uniform<T, D1>({c}, 3 + trial);
    const auto column = uniform<T, D2>({b, 1}, 4 + trial);
    const auto positive = uniform<T, D3>({a, b, c}, 5 + trial, 0.1, 3);
    const double tol = tolerance<T>;
    same_on_both([](const auto& p, const auto& q) { return p * q + p - q / (abs(q) + T(1)); }, tol, x, y);
    same_on_both([](const auto& p, const auto& r) { return p + r; }, tol, x, row);
    same_on_both([](const auto& p, const auto& k) { return (p - k) * k; }, tol, x, column);
    same_on_both([](const auto& r, const auto& k) { return r * k; }, tol, row, column);  // [b, c] from [c] and [b, 1]
    same_on_both([](const auto& p) { return exp(p) + log1p(abs(p)) + expm1(p * T(0.5)) + sin(p) * cos(p); }, 4 * tol, x);
    same_on_both([](const auto& p) { return tanh(p) + sigmoid(p) + softplus(p) + softsign(p) + swish(p); }, 4 * tol, x);
    same_on_both([](const auto& p) { return elu(p) + selu(p) + gelu(p) + erf(p) + leaky_relu(p, 0.3); }, 4 * tol, x);
    same_on_both([](const auto& p) { return relu(p) + relu6(p * T(4)) + sign(p) + square(p) + negative(p); }, tol, x);
    same_on_both([](const auto& p) { return floor(p * T(3)) + ceil(p * T(3)) + round(p * T(3)); }, tol, x);
    same_on_both([](const auto& p) { return sqrt(p) + rsqrt(p) + log(p) + pow(p, p); }, 4 * tol, positive);
    same_on_both([](const auto& p, const auto& q) { return maximum(p, q) - minimum(p, q * T(2)); }, tol, x, y);
    same_on_both([](const auto& p, const auto& q) { return where(p > q, p, q * T(3)) + where(p <= T(0), T(1), p); }, tol, x, y);
    same_on_both([](const auto& p, const auto& q) { return cast<T>(logical_and(p > T(0), q < T(0))) + cast<T>(equal(p, p)); }, tol, x, y);
    same_on_both([](const auto& p) { return cast<std::int32_t>(p * T(10)); }, 0, x);
    same_on_both([](const auto& p) { return cast<T>(cast<bfloat16>(p)); }, 0, x);
    same_on_both([](const auto& p) { return clip_by_value(p, T(-1), T(0.5)) + stop_gradient(p); }, tol, x);
  }
}

TEST_CASE("integer and 16-bit element-wise ops") {
  devices::extents ext(12);
  const std::size_t a = ext(2, 40), b = ext(2, 40);
  const auto i = cast<std::int32_t>(uniform<float, D2>({a, b}, 21, -50, 50)), j = cast<std::int32_t>(uniform<float, D2>({a, b}, 22, 1, 9));
  same_on_both([](const auto& p, const auto& q) { return p * q - p / q + maximum(p, q) + abs(p); }, 0, eval(i), eval(j));
  const auto h = cast<bfloat16>(uniform<float, D2>({a, b}, 23));
  const auto k = cast<float16>(uniform<float, D2>({a, b}, 24));
  same_on_both([](const auto& p) { return exp(p) * p + p; }, 1e-2, eval(h));
  same_on_both([](const auto& p) { return tanh(p) - p * p; }, 1e-2, eval(k));
}

TEMPLATE_TEST_CASE("reductions and scans", "", float, double) {
  using T = TestType;
  devices::extents ext(13);
  for (int trial = 0; trial < 3; ++trial) {
    const std::size_t a = ext(1, 6), b = ext(1, 41), c = ext(1, 67);
    INFO("extents " << a << " x " << b << " x " << c);
    const auto x = uniform<T, D3>({a, b, c}, 31 + trial);
    const double tol = 10 * tolerance<T>;
    same_on_both([](const auto& p) { return reduce_sum<1>(p); }, tol, x);
    same_on_both([](const auto& p) { return reduce_mean<0, 2>(p, keepdims); }, tol, x);
    same_on_both([](const auto& p) { return reduce_max<-1>(p) - reduce_min<-1>(p) + reduce_sum<-1>(reduce_min<0>(p, keepdims) * p); }, tol, x);
    same_on_both([](const auto& p) { return reduce_sum(p) + reduce_mean(p); }, tol, x);
    same_on_both([](const auto& p) { return reduce_prod<2>(p * T(0.3) + T(1)); }, 100 * tol, x);
    same_on_both([](const auto& p) { return cast<T>(reduce_any<1>(p > T(1.5))) + cast<T>(reduce_all<1>(p > T(-1.9))); }, 0, x);
    same_on_both([](const auto& p) { return argmax<1>(p) * std::int64_t(3) + argmin<1>(p); }, 0, x);
    same_on_both([](const auto& p) { return argmax<2>(p) - argmin<2>(reverse<2>(p)); }, 0, x);
    same_on_both([](const auto& p) { return cumsum<1>(p) + cumsum<2>(p, true, true); }, tol, x);
    same_on_both([](const auto& p) { return exp(p - reduce_max<-1>(p, keepdims)) / reduce_sum<-1>(exp(p), keepdims); }, tol, x);
  }
}

TEMPLATE_TEST_CASE("matmul, batched and transposed, and tensordot", "", float, double) {
  using T = TestType;
  devices::extents ext(14);
  for (int trial = 0; trial < 3; ++trial) {
    const std::size_t m = ext(1, 37), k = ext(1, 70), n = ext(1, 45), batch = ext(1, 3);
    INFO("m " << m << " k " << k << " n " << n << " batch " << batch);
    const auto a = uniform<T, D2>({m, k}, 41 + trial), b = uniform<T, D2>({k, n}, 42 + trial), bt = uniform<T, D2>({n, k}, 43 + trial);
    const auto a3 = uniform<T, D3>({batch, m, k}, 44 + trial);
    const double tol = 10 * tolerance<T>;
    same_on_both([](const auto& p, const auto& q) { return matmul(p, q); }, tol, a, b);
    same_on_both([](const auto& p, const auto& q) { return matmul(p, q, transpose_b); }, tol, a, bt);
    same_on_both([](const auto& p, const auto& q) { return matmul(transpose(p), transpose(q), transpose_a, transpose_b); }, tol, a, b);
    same_on_both([](const auto& p, const auto& q) { return matmul(p, q) * T(2) + T(1); }, tol, a3, b);
  }
  const Tensor<T, Shape<3, 16>> s = uniform<T, Shape<3, 16>>({3, 16}, 48);
  const Tensor<T, Shape<16, 8>> w = uniform<T, Shape<16, 8>>({16, 8}, 49);
  same_on_both([](const auto& p, const auto& q) { return matmul(p, q); }, 10 * tolerance<T>, s, w);  // the CPU's small static tiles
  const Tensor<T, Shape<2, 3, 4, 5>> u = uniform<T, Shape<2, 3, 4, 5>>({2, 3, 4, 5}, 52);
  const Tensor<T, Shape<4, 5, 6>> v = uniform<T, Shape<4, 5, 6>>({4, 5, 6}, 53);
  same_on_both([](const auto& p, const auto& q) { return tensordot<2>(p, q); }, 10 * tolerance<T>, u, v);
  const auto i = cast<std::int32_t>(uniform<float, D2>({5, 7}, 50, -9, 9)), j = cast<std::int32_t>(uniform<float, D2>({7, 3}, 51, -9, 9));
  same_on_both([](const auto& p, const auto& q) { return matmul(p, q); }, 0, eval(i), eval(j));
}

TEMPLATE_TEST_CASE("views and the ops that build new tensors", "", float, double) {
  using T = TestType;
  devices::extents ext(15);
  for (int trial = 0; trial < 3; ++trial) {
    const std::size_t a = ext(2, 5), b = ext(2, 19), c = ext(2, 33);
    INFO("extents " << a << " x " << b << " x " << c);
    const auto x = uniform<T, D3>({a, b, c}, 61 + trial), y = uniform<T, D3>({a, b, c}, 62 + trial);
    const double tol = tolerance<T>;
    same_on_both([](const auto& p) { return transpose<2, 0, 1>(p) * T(2); }, tol, x);
    same_on_both([](const auto& p) { return reshape<Shape<dyn>>(transpose<1, 0, 2>(p)); }, tol, x);
    same_on_both([](const auto& p) { return slice<Shape<1, dyn, 2>>(p, {1, 1, 0}) + T(1); }, tol, x);
    same_on_both([](const auto& p) { return strided_slice(p, {0, -1, 1}, {2, 0, 9}, {1, -2, 3}); }, tol, x);
    same_on_both([](const auto& p) { return reverse<0, 2>(p) - p; }, tol, x);
    same_on_both([a, b, c](const auto& p) { return broadcast_to<Shape<dyn, dyn, dyn, dyn>>(reduce_sum<1>(p, keepdims), {2, a, b, c}); }, tol, x);
    same_on_both([](const auto& p) { return squeeze<0>(expand_dims<0>(p)) + expand_dims<-1>(reduce_max<-1>(p)); }, tol, x);
    same_on_both([](const auto& p, const auto& q) { return concat<1>(p, q * T(2), p); }, tol, x, y);
    same_on_both([](const auto& p, const auto& q) { return stack<2>(p, q); }, tol, x, y);
    same_on_both([](const auto& p) { return pad(p, {{{1, 0}, {0, 2}, {3, 1}}}, T(-1)); }, tol, x);
    same_on_both([](const auto& p) { return tile<2, 1, 3>(p); }, tol, x);
    const auto idx = cast<std::int32_t>(uniform<float, D1>({7}, 63 + trial, 0, double(b) - 0.01));
    same_on_both([](const auto& p, const auto& i) { return gather<1>(p, i); }, tol, x, eval(idx));
    same_on_both([](const auto& i) { return one_hot<7, T>(i - 2, T(3), T(-1)); }, tol, eval(idx));
  }
}

TEST_CASE("split and unstack of static shapes") {
  const Tensor<float, Shape<4, 6, 5>> x = uniform<float, Shape<4, 6, 5>>({4, 6, 5}, 69);
  same_on_both([](const auto& p) { auto parts = split<3, 1>(p); return parts[2] * 2.f - parts[0] + parts[1]; }, 1e-6, x);
  same_on_both([](const auto& p) { auto rows = unstack<0>(p); return rows[3] - rows[1]; }, 1e-6, x);
}

TEMPLATE_TEST_CASE("convolutions", "", float, double) {
  using T = TestType;
  using D4 = Shape<dyn, dyn, dyn, dyn>;
  devices::extents ext(16);
  const double tol = 20 * tolerance<T>;
  for (int trial = 0; trial < 2; ++trial) {
    const std::size_t n = ext(1, 2), h = ext(5, 13), w = ext(5, 14), c = ext(1, 19), o = ext(1, 21);
    INFO("n " << n << " h " << h << " w " << w << " c " << c << " o " << o);
    const auto x = uniform<T, D4>({n, h, w, c}, 71 + trial), f3 = uniform<T, D4>({3, 3, c, o}, 72 + trial);
    const auto f2 = uniform<T, D4>({2, 3, c, o}, 73 + trial), dw = uniform<T, D4>({3, 3, c, 2}, 74 + trial);
    const auto pw = uniform<T, D4>({1, 1, 2 * c, o}, 75 + trial);
    same_on_both([](const auto& p, const auto& q) { return nn::conv2d<nn::SAME>(p, q); }, tol, x, f3);
    same_on_both([](const auto& p, const auto& q) { return nn::conv2d<nn::VALID, 2>(p, q); }, tol, x, f3);
    same_on_both([](const auto& p, const auto& q) { return nn::conv2d<nn::SAME, 1, 2, 2>(p, q); }, tol, x, f2);
    same_on_both([](const auto& p, const auto& q) { return nn::conv2d<nn::explicit_padding(1, 0, 2, 1), 2, 1>(p, q); }, tol, x, f2);
    same_on_both([](const auto& p, const auto& q) { return nn::depthwise_conv2d<nn::SAME, 2>(p, q); }, tol, x, dw);
    same_on_both([](const auto& p, const auto& q, const auto& r) { return nn::separable_conv2d<nn::VALID>(p, q, r); }, tol, x, dw, pw);
    const auto z = eval(nn::conv2d<nn::SAME, 2>(x, f3));
    same_on_both([](const auto& p, const auto& q) { return nn::conv2d_transpose<nn::SAME, 2>(p, q); }, tol, z, f3);
    const auto s = uniform<T, D3>({n, h * 3, c}, 76 + trial), k = uniform<T, D3>({4, c, o}, 77 + trial);
    same_on_both([](const auto& p, const auto& q) { return nn::conv1d<nn::SAME, 2>(p, q); }, tol, s, k);
  }
}

TEMPLATE_TEST_CASE("pooling, normalization, losses and resizing", "", float, double) {
  using T = TestType;
  using D4 = Shape<dyn, dyn, dyn, dyn>;
  devices::extents ext(17);
  const double tol = 20 * tolerance<T>;
  for (int trial = 0; trial < 2; ++trial) {
    const std::size_t n = ext(1, 3), h = ext(4, 15), w = ext(4, 17), c = ext(1, 35);
    INFO("n " << n << " h " << h << " w " << w << " c " << c);
    const auto x = uniform<T, D4>({n, h, w, c}, 81 + trial);
    same_on_both([](const auto& p) { return nn::max_pool2d<3, 3, 2, 2, nn::SAME>(p); }, tol, x);
    same_on_both([](const auto& p) { return nn::max_pool2d<2, 2>(p) + nn::avg_pool2d<2, 2>(p); }, tol, x);
    same_on_both([](const auto& p) { return nn::avg_pool2d<3, 2, 1, 2, nn::SAME>(p); }, tol, x);
    same_on_both([](const auto& p) { return nn::global_avg_pool2d(p) + nn::global_max_pool2d(p); }, tol, x);
    const auto scale = uniform<T, D1>({c}, 83 + trial), offset = uniform<T, D1>({c}, 84 + trial);
    same_on_both([](const auto& p, const auto& s, const auto& b) { return std::get<0>(nn::fused_batch_norm(p, s, b)); }, tol, x, scale, offset);
    same_on_both([](const auto& p, const auto& s, const auto& b) { return nn::layer_normalization(p, s, b); }, tol, x, scale, offset);
    same_on_both([](const auto& p) { return image::resize<7, 5>(p) + image::resize<7, 5>(p, image::ResizeMethod::NEAREST_NEIGHBOR); }, 20 * tolerance<float>, x);
    const std::size_t rows = ext(1, 30), classes = ext(2, 40);
    const auto logits = uniform<T, D2>({rows, classes}, 85 + trial, -20, 20);
    const auto labels = eval(cast<std::int32_t>(uniform<float, D1>({rows}, 86 + trial, 0, double(classes) - 0.01)));
    same_on_both([](const auto& y, const auto& p) { return nn::sparse_softmax_cross_entropy_with_logits(y, p); }, tol, labels, logits);
    same_on_both([](const auto& p) { return nn::softmax(p) + nn::log_softmax(p); }, tol, logits);
  }
}

TEST_CASE("edge cases agree: integer means past the dtype's range, empty channels and batches") {
  // The mean of 256 uint8 values divides by a count that uint8 cannot hold; int8 means truncate.
  const auto u = eval(cast<std::uint8_t>(uniform<float, D2>({3, 256}, 91, 0, 255)));
  same_on_both([](const auto& p) { return reduce_mean<1>(p); }, 0, u);
  const auto i = eval(cast<std::int8_t>(uniform<float, D1>({200}, 92, -100, 100)));
  same_on_both([](const auto& p) { return reduce_mean(p); }, 0, i);
  using D4 = Shape<dyn, dyn, dyn, dyn>;
  const auto x = uniform<float, D4>({2, 5, 5, 0}, 93);
  const auto f = uniform<float, D4>({3, 3, 0, 2}, 94);
  same_on_both([](const auto& p, const auto& q) { return nn::depthwise_conv2d<nn::SAME>(p, q); }, 0, x, f);
  const auto empty = uniform<float, D2>({0, 4}, 95);
  const auto scale = uniform<float, D1>({4}, 96), offset = uniform<float, D1>({4}, 97);
  same_on_both([](const auto& p, const auto& s, const auto& b) { return std::get<0>(nn::fused_batch_norm(p, s, b)); }, 0, empty, scale, offset);
}
