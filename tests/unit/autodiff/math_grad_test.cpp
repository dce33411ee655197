// Gradients of the element-wise math functions against finite differences, and of those that
// have none (sign, floor, ceil, round). The rest of the element-wise ops are in
// elementwise_grad_test.cpp: one unit for both is at the suite's compile budget.
#include "gradcheck.hpp"

using namespace ctflow;

using gradcheck::uniform;

TEST_CASE("every unary math function matches finite differences") {
  auto x = uniform<Shape<3, 4>>(1, -2, 2);
  auto pos = uniform<Shape<3, 4>>(2, 0.2, 3);
  const auto w = uniform<Shape<3, 4>>(3, -1, 1);  // weights keep the loss from being symmetric
  // Values near the kinks of relu-like functions are moved away from them.
  for (auto& v : x) if (std::abs(v) < 0.05) v += 0.2;
  for (auto& v : x) if (std::abs(v - 6) < 0.05) v += 0.2;
  gradcheck::check(reduce_sum(negative(x) * w), x);
  gradcheck::check(reduce_sum(abs(x) * w), x);
  gradcheck::check(reduce_sum(square(x) * w), x);
  gradcheck::check(reduce_sum(relu(x) * w), x);
  gradcheck::check(reduce_sum(relu6(x * 4) * w), x);
  gradcheck::check(reduce_sum(exp(x) * w), x);
  gradcheck::check(reduce_sum(log(pos) * w), pos);
  gradcheck::check(reduce_sum(log1p(pos) * w), pos);
  gradcheck::check(reduce_sum(expm1(x) * w), x);
  gradcheck::check(reduce_sum(sqrt(pos) * w), pos);
  gradcheck::check(reduce_sum(rsqrt(pos) * w), pos);
  gradcheck::check(reduce_sum(sin(x) * w), x);
  gradcheck::check(reduce_sum(cos(x) * w), x);
  gradcheck::check(reduce_sum(tanh(x) * w), x);
  gradcheck::check(reduce_sum(sigmoid(x) * w), x);
  gradcheck::check(reduce_sum(softsign(x) * w), x);
  gradcheck::check(reduce_sum(swish(x) * w), x);
  gradcheck::check(reduce_sum(softplus(x) * w), x);
  gradcheck::check(reduce_sum(elu(x) * w), x);
  gradcheck::check(reduce_sum(selu(x) * w), x);
  gradcheck::check(reduce_sum(gelu(x) * w), x);
  gradcheck::check(reduce_sum(erf(x) * w), x);
  gradcheck::check(reduce_sum(leaky_relu(x, 0.3) * w), x);
}

TEST_CASE("sign has a zero gradient; floor, ceil and round pass none") {
  auto x = uniform<Shape<4>>(4, -2, 2);
  auto [l, g] = value_and_grad(reduce_sum(sign(x) + x), x);
  for (double v : g) REQUIRE(v == 1.0);
  (void)l;
  auto [l2, g2] = value_and_grad(reduce_sum(floor(x) + ceil(x) + round(x) + x * 2), x);
  for (double v : g2) REQUIRE(v == 2.0);
  (void)l2;
}
