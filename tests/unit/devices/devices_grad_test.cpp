// Gradients on the reference device: value_and_grad and grad's expressions for every op family
// against finite differences (gradcheck, in double). devices_training_test.cpp, a translation
// unit of the same test, has the training step on both devices, jvp and gradients of gradients.
#include "../autodiff/gradcheck.hpp"
#include "devices.hpp"

using namespace ctflow;

namespace {
template <class S> Tensor<double, S, reference> uniform(std::uint64_t seed, double lo = -1, double hi = 1) {
  return to<reference>(random_uniform<double, S>(seed, lo, hi));
}
}  // namespace

TEST_CASE("reference: gradients of element-wise ops, reductions and scans") {
  auto x = uniform<Shape<3, 4, 5>>(1);
  const auto w2 = uniform<Shape<3, 5>>(2);
  const auto w1 = uniform<Shape<4>>(3);
  gradcheck::check(reduce_sum(tanh(x) * sigmoid(x) + exp(x * 0.5) - softplus(x) * elu(x)), x);
  gradcheck::check(reduce_sum(reduce_sum<1>(x) * w2), x);
  gradcheck::check(reduce_sum(reduce_mean<0, 2>(x) * w1), x);
  gradcheck::check(reduce_sum(reduce_max<1>(x) * w2), x);
  gradcheck::check(reduce_sum(reduce_min<-2>(x, keepdims) * expand_dims<1>(w2)), x);
  auto p = uniform<Shape<3, 4>>(4, 0.5, 1.5);
  gradcheck::check(reduce_sum(reduce_prod<1>(p) * uniform<Shape<3>>(5)), p);
  gradcheck::check(reduce_sum(cumsum<1>(p, true, true) * uniform<Shape<3, 4>>(6)), p);
  auto b = uniform<Shape<4>>(7);
  gradcheck::check(reduce_sum(where(p > 1.0, p * b, square(b))), p, b);  // b broadcast: its adjoint is summed back
}

TEST_CASE("reference: gradients of matmul, views and the ops that build tensors") {
  auto a = uniform<Shape<3, 4>>(8);
  auto b = uniform<Shape<4, 5>>(9);
  auto bt = uniform<Shape<5, 4>>(10);
  const auto w = uniform<Shape<3, 5>>(11);
  gradcheck::check(reduce_sum(matmul(a, b) * w), a, b);
  gradcheck::check(reduce_sum(matmul(a, bt, transpose_b) * w), a, bt);
  auto ba = uniform<Shape<2, 3, 4>>(12);
  gradcheck::check(reduce_sum(square(matmul(ba, b))), ba, b);
  const auto w43 = uniform<Shape<4, 3>>(13);
  gradcheck::check(reduce_sum(reshape<Shape<12>>(transpose(a)) * reshape<Shape<12>>(w43)), a);
  gradcheck::check(reduce_sum(square(strided_slice(a, {2, 0}, {-4, 4}, {-1, 2}))), a);
  gradcheck::check(reduce_sum(reverse<1>(a) * transpose(w43)), a);
  auto r = uniform<Shape<3, 1>>(14);
  gradcheck::check(reduce_sum(square(broadcast_to<Shape<2, 3, 4>>(r))), r);
  auto c = uniform<Shape<3, 2>>(15);
  gradcheck::check(reduce_sum(square(concat<1>(a, c * 2.0))), a, c);
  Tensor<std::int32_t, Shape<4>, reference> idx;
  idx(0) = 2; idx(1) = 0; idx(2) = 2; idx(3) = 3;
  gradcheck::check(reduce_sum(square(gather<1>(a, idx))), a);
  gradcheck::check(reduce_sum(square(pad(a, {{{1, 0}, {2, 1}}}) + 1.0)), a);
  gradcheck::check(reduce_sum(square(tile<2, 3>(a)) * 0.5), a);
}

TEST_CASE("reference: gradients of convolutions, pooling, normalization, losses and resizing") {
  auto x = uniform<Shape<2, 6, 7, 3>>(20);
  auto f = uniform<Shape<3, 3, 3, 4>>(21);
  auto dw = uniform<Shape<3, 2, 3, 2>>(22);
  gradcheck::check(reduce_sum(square(nn::conv2d<nn::SAME>(x, f))), x, f);
  gradcheck::check(reduce_sum(square(nn::conv2d<nn::VALID, 2, 1, 1, 2>(x, f))), x, f);
  gradcheck::check(reduce_sum(square(nn::depthwise_conv2d<nn::SAME, 2>(x, dw))), x, dw);
  gradcheck::check(reduce_sum(square(nn::max_pool2d<2, 2, 2, 2, nn::SAME>(x))), x);
  gradcheck::check(reduce_sum(square(nn::avg_pool2d<3, 3, 2, 2, nn::SAME>(x))), x);
  auto scale = uniform<Shape<3>>(23, 0.5, 1.5);
  auto offset = uniform<Shape<3>>(24);
  gradcheck::check(reduce_sum(square(std::get<0>(nn::fused_batch_norm(x, scale, offset))) * uniform<Shape<2, 6, 7, 3>>(25)), x, scale, offset);
  gradcheck::check(reduce_sum(square(nn::layer_normalization(x, scale, offset))), x, scale, offset);
  const auto img = random_uniform<float, Shape<2, 5, 6, 3>>(27, 0, 1);  // resize is differentiable in float32
  const auto rimg = to<reference>(img);
  const auto [cv, cg] = value_and_grad(reduce_sum(square(image::resize<4, 9>(img))), img);
  const auto [rv, rg] = value_and_grad(reduce_sum(square(image::resize<4, 9>(rimg))), rimg);
  REQUIRE(rv == Approx(cv).epsilon(1e-5));
  devices::require_close(rg, cg, 1e-4);
  auto logits = uniform<Shape<5, 7>>(26, -3, 3);
  Tensor<std::int32_t, Shape<5>, reference> labels;
  for (std::size_t i = 0; i < 5; ++i) labels(i) = std::int32_t((i * 3) % 7);
  gradcheck::check(reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(labels, logits)), logits);
}
