// Gradients of shape ops (views, concat/stack/split, gather, pad, tile); a softmax cross-entropy
// MLP; and a warm value_and_grad that allocates nothing.
#include "gradcheck.hpp"

#include "../counting_new.hpp"  // every operator new in the process is counted

using namespace ctflow;

using gradcheck::uniform;

TEST_CASE("views: reshape, transpose, slice, strided_slice, reverse, broadcast_to, expand_dims, squeeze") {
  auto x = uniform<Shape<3, 4>>(16);
  const auto w = uniform<Shape<4, 3>>(17);
  gradcheck::check(reduce_sum(reshape<Shape<4, 3>>(x) * w), x);
  gradcheck::check(reduce_sum(transpose(x) * w), x);
  gradcheck::check(reduce_sum(square(slice<Shape<2, 2>>(x, {1, 1}))), x);
  gradcheck::check(reduce_sum(square(strided_slice(x, {2, 0}, {-4, 4}, {-1, 2}))), x);
  gradcheck::check(reduce_sum(reverse<1>(x) * transpose(w)), x);
  auto r = uniform<Shape<3, 1>>(18);
  gradcheck::check(reduce_sum(square(broadcast_to<Shape<2, 3, 4>>(r))), r);
  gradcheck::check(reduce_sum(squeeze<1>(r) * expand_dims<0>(squeeze<1>(r))), r);
  // A reshape of a transposed operand (which needs a copy) and a view of an expression.
  gradcheck::check(reduce_sum(reshape<Shape<12>>(transpose(x)) * reshape<Shape<12>>(w)), x);
  gradcheck::check(reduce_sum(transpose(sin(x)) * w), x);
}

TEST_CASE("concat, stack, split, gather, pad and tile") {
  auto a = uniform<Shape<2, 3>>(19);
  auto b = uniform<Shape<2, 2>>(20);
  const auto w = uniform<Shape<2, 5>>(21);
  gradcheck::check(reduce_sum(concat<1>(a, b) * w), a, b);
  gradcheck::check(reduce_sum(square(stack<0>(a, a * 2.0))), a);
  auto parts = split<2, 0>(a);
  gradcheck::check(reduce_sum(parts[0] * 3.0 + square(parts[1])), a);
  Tensor<std::int32_t, Shape<4>> idx;
  idx(0) = 2; idx(1) = 0; idx(2) = 2; idx(3) = 1;
  gradcheck::check(reduce_sum(square(gather<1>(a, idx))), a);
  // The adjoint checks the indices too (a gradient expression may be evaluated without the
  // forward gather running).
  idx(3) = 3;
  auto [bad] = grad(reduce_sum(gather<1>(a, idx)), a);
  REQUIRE_THROWS_WITH(eval(bad), Catch::Contains("ctflow::gather: index 3 out of range [0, 3)"));
  gradcheck::check(reduce_sum(square(pad(a, {{{1, 0}, {2, 1}}}) + 1.0)), a);
  gradcheck::check(reduce_sum(square(tile<2, 3>(a)) * 0.5), a);
}

TEST_CASE("a two-layer perceptron with softmax cross-entropy written with ctflow ops") {
  auto x = uniform<Shape<8, 6>>(22);
  auto w1 = uniform<Shape<6, 5>>(23);
  auto b1 = uniform<Shape<5>>(24);
  auto w2 = uniform<Shape<5, 4>>(25);
  auto b2 = uniform<Shape<4>>(26);
  Tensor<std::int32_t, Shape<8>> y;
  for (std::size_t i = 0; i < 8; ++i) y(i) = std::int32_t(i % 4);
  auto logits = matmul(relu(matmul(x, w1) + b1), w2) + b2;
  auto shifted = logits - stop_gradient(reduce_max<1>(logits, keepdims));
  auto loss = reduce_mean(log(reduce_sum<1>(exp(shifted))) - reduce_sum<1>(shifted * one_hot<4, double>(y)));
  gradcheck::check(loss, w1, b1, w2, b2);
}

TEST_CASE("a warm value_and_grad makes no allocation") {
  auto x = random_uniform<float, Shape<32, 20>>(32, -1, 1);
  auto w1 = random_uniform<float, Shape<20, 16>>(33, -1, 1);
  auto b1 = random_uniform<float, Shape<16>>(34, -1, 1);
  auto w2 = random_uniform<float, Shape<16, 10>>(35, -1, 1);
  Tensor<std::int32_t, Shape<32>> y;
  for (std::size_t i = 0; i < 32; ++i) y(i) = std::int32_t(i % 10);
  auto logits = matmul(relu(matmul(x, w1) + b1), w2);
  auto shifted = logits - stop_gradient(reduce_max<1>(logits, keepdims));
  auto loss = reduce_mean(log(reduce_sum<1>(exp(shifted))) - reduce_sum<1>(shifted * one_hot<10>(y)));
  auto step = [&] {
    auto [l, g1, gb, g2] = value_and_grad(loss, w1, b1, w2);
    w1 -= 0.1f * g1;
    b1 -= 0.1f * gb;
    w2 -= 0.1f * g2;
    return l;
  };
  const float first = step();
  step();
  const std::size_t blocks = detail::block_cache::instance().system_allocations();
  const std::size_t before = counting_new::calls.load();
  float last = 0;
  for (int i = 0; i < 5; ++i) last = step();
  REQUIRE(counting_new::calls.load() == before);
  REQUIRE(detail::block_cache::instance().system_allocations() == blocks);
  REQUIRE(last < first);  // and it trains
}
