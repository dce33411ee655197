// Gradients of boundaries: reductions, cumsum, matmul (every transpose, batched, broadcast batch).
// structural_views_grad_test.cpp, a translation unit of the same test, has the shape ops.
#include "gradcheck.hpp"

using namespace ctflow;

using gradcheck::uniform;

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
