// The same training step's loss and gradients on both devices, and jvp and gradients of
// gradients on the reference device. A translation unit of devices_grad_test.
#include "../autodiff/gradcheck.hpp"
#include "devices.hpp"

using namespace ctflow;

namespace {
template <class S> Tensor<double, S, reference> uniform(std::uint64_t seed, double lo = -1, double hi = 1) {
  return to<reference>(random_uniform<double, S>(seed, lo, hi));
}
}  // namespace

TEST_CASE("one training step gives the same loss and gradients on both devices") {
  const auto x = random_uniform<float, Shape<4, 9, 9, 2>>(30, 0, 1);
  Tensor<std::int32_t, Shape<4>> labels;
  for (std::size_t i = 0; i < 4; ++i) labels(i) = std::int32_t(i % 3);
  Variable<float, Shape<3, 3, 2, 8>> f(random_uniform<float, Shape<3, 3, 2, 8>>(31, -0.3, 0.3), "f");
  Variable<float, Shape<8>> fb(random_uniform<float, Shape<8>>(32, -0.1, 0.1), "fb");
  Variable<float, Shape<128, 3>> w(random_uniform<float, Shape<128, 3>>(33, -0.1, 0.1), "w");
  Variable<float, Shape<3, 3, 2, 8>, reference> rf(to<reference>(f), "f");
  Variable<float, Shape<8>, reference> rfb(to<reference>(fb), "fb");
  Variable<float, Shape<128, 3>, reference> rw(to<reference>(w), "w");
  const auto rx = to<reference>(x);
  const auto rlabels = to<reference>(labels);
  auto step = [](const auto& in, const auto& y, const auto& k, const auto& kb, const auto& dense) {
    auto h = nn::max_pool2d<2, 2>(relu(nn::conv2d<nn::SAME>(in, k) + kb));
    return reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(y, matmul(reshape<Shape<4, 128>>(h), dense)));
  };
  const auto on_cpu = value_and_grad(step(x, labels, f, fb, w), f, fb, w);
  const auto on_ref = value_and_grad(step(rx, rlabels, rf, rfb, rw), rf, rfb, rw);
  REQUIRE(std::get<0>(on_ref) == Approx(std::get<0>(on_cpu)).epsilon(1e-5));
  devices::require_close(std::get<1>(on_ref), std::get<1>(on_cpu), 1e-4);
  devices::require_close(std::get<2>(on_ref), std::get<2>(on_cpu), 1e-4);
  devices::require_close(std::get<3>(on_ref), std::get<3>(on_cpu), 1e-4);
  // grad's lazy expressions, evaluated on the reference device.
  auto [gf, gfb, gw] = grad(step(rx, rlabels, rf, rfb, rw), rf, rfb, rw);
  devices::require_close(eval(gf), std::get<1>(on_cpu), 1e-4);
  devices::require_close(eval(gw), std::get<3>(on_cpu), 1e-4);
  (void)gfb;
}

TEST_CASE("reference: jvp and gradients of gradients") {
  auto x = uniform<Shape<3, 4>>(40);
  const auto t = uniform<Shape<3, 4>>(41);
  const auto w = uniform<Shape<4, 2>>(42);
  // d/de tanh(x w) along t, against the CPU's.
  const auto on_ref = jvp(tanh(matmul(x, w)), dual(x, t));
  const auto cx = to<cpu>(x);
  const auto cw = to<cpu>(w);
  const auto ct = to<cpu>(t);
  const auto on_cpu = jvp(tanh(matmul(cx, cw)), dual(cx, ct));
  static_assert(std::is_same_v<device_t<decltype(on_ref)>, reference>);
  devices::require_close(on_ref, on_cpu, 1e-12);
  // The gradient of a gradient's norm, against finite differences.
  auto [g] = grad(reduce_sum(sin(x) * exp(x * 0.3)), x);
  gradcheck::check(reduce_sum(square(g)), x);
}
