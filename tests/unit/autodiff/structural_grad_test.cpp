// Gradients of boundaries and shape ops: reductions, cumsum, matmul (every transpose, batched,
// broadcast batch), views, concat/stack/split, gather, pad, tile; a softmax cross-entropy MLP;
// and a warm value_and_grad that allocates nothing.
#include "gradcheck.hpp"

#include "../counting_new.hpp"  // every operator new in the process is counted

using namespace ctflow;

namespace {
template <class S> Tensor<double, S> uniform(std::uint64_t seed, double lo = -1, double hi = 1) { return random_uniform<double, S>(seed, lo, hi); }
}  // namespace

TEST_CASE("reductions: sum, mean, max, min, prod over axes, with keepdims, and full") {
  auto x = uniform<Shape<3, 4, 5>>(1);
  const auto w2 = uniform<Shape<3, 5>>(2);
  const auto w1 = uniform<Shape<4>>(3);
  gradcheck::check(reduce_sum(reduce_sum<1>(x) * w2), x);
  gradcheck::check(reduce_sum(reduce_mean<0, 2>(x) * w1), x);
  gradcheck::check(reduce_sum(reduce_max<1>(x) * w2), x);
  gradcheck::check(reduce_sum(reduce_min<-2>(x, keepdims) * expand_dims<1>(w2)), x);
  gradcheck::check(reduce_mean(x) + reduce_max(x) * 2.0, x);
  auto p = uniform<Shape<3, 4>>(4, 0.5, 1.5);
  gradcheck::check(reduce_sum(reduce_prod<1>(p) * uniform<Shape<3>>(5)), p);
}

TEST_CASE("reduce_max splits the adjoint among ties; reduce_prod is exact with zeros") {
  Tensor<double, Shape<4>> x;
  x(0) = 1; x(1) = 3; x(2) = 3; x(3) = 2;
  auto [l, g] = value_and_grad(reduce_max(x), x);
  REQUIRE(l == 3.0);
  REQUIRE((g(0) == 0.0 && g(1) == 0.5 && g(2) == 0.5 && g(3) == 0.0));
  x(1) = 0;
  auto [l2, g2] = value_and_grad(reduce_prod(x), x);
  REQUIRE(l2 == 0.0);
  REQUIRE((g2(0) == 0.0 && g2(1) == 6.0 && g2(2) == 0.0 && g2(3) == 0.0));
  x(2) = 0;
  auto [l3, g3] = value_and_grad(reduce_prod(x), x);
  (void)l3;
  for (double v : g3) REQUIRE(v == 0.0);
}

TEST_CASE("cumsum in every direction") {
  auto x = uniform<Shape<3, 5>>(6);
  const auto w = uniform<Shape<3, 5>>(7);
  gradcheck::check(reduce_sum(cumsum<1>(x) * w), x);
  gradcheck::check(reduce_sum(cumsum<0>(x, true, false) * w), x);
  gradcheck::check(reduce_sum(cumsum<1>(x, true, true) * w), x);
}

TEST_CASE("matmul: both operands, every transpose, batched and broadcast batches") {
  auto a = uniform<Shape<3, 4>>(8);
  auto b = uniform<Shape<4, 5>>(9);
  auto at = uniform<Shape<4, 3>>(10);
  auto bt = uniform<Shape<5, 4>>(11);
  const auto w = uniform<Shape<3, 5>>(12);
  gradcheck::check(reduce_sum(matmul(a, b) * w), a, b);
  gradcheck::check(reduce_sum(matmul(at, b, transpose_a) * w), at, b);
  gradcheck::check(reduce_sum(matmul(a, bt, transpose_b) * w), a, bt);
  gradcheck::check(reduce_sum(matmul(at, bt, transpose_a, transpose_b) * w), at, bt);
  auto ba = uniform<Shape<2, 3, 4>>(13);
  auto bb = uniform<Shape<2, 4, 5>>(14);
  gradcheck::check(reduce_sum(square(matmul(ba, bb))), ba, bb);
  gradcheck::check(reduce_sum(square(matmul(ba, b))), ba, b);  // b broadcast over the batch
  Tensor<double, Shape<dyn, 4>> x(uniform<Shape<6, 4>>(15));
  gradcheck::check(reduce_mean(tanh(matmul(x, b))), x, b);
}

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
