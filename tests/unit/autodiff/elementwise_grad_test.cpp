// Gradients of element-wise ops: arithmetic with broadcasting (static and dyn extents), where,
// cast; leaf identity, accumulation, unconnected variables, stop_gradient. The math functions'
// are in math_grad_test.cpp.
#include "gradcheck.hpp"

using namespace ctflow;

using gradcheck::uniform;

TEST_CASE("binary ops broadcast their adjoints back to each operand's shape") {
  auto a = uniform<Shape<3, 4>>(5, 0.5, 2);
  auto row = uniform<Shape<4>>(6, 0.5, 2);
  auto col = uniform<Shape<3, 1>>(7, 0.5, 2);
  auto s = uniform<Shape<>>(8, 0.5, 2);
  const auto w = uniform<Shape<3, 4>>(9, -1, 1);
  gradcheck::check(reduce_sum((a + row) * w), a, row);
  gradcheck::check(reduce_sum((a - col) * w), a, col);
  gradcheck::check(reduce_sum(a * row * w), a, row);
  gradcheck::check(reduce_sum(col / a * w), a, col);
  gradcheck::check(reduce_sum(pow(a, col) * w), a, col);
  gradcheck::check(reduce_sum(pow(row, s) * w), row, s);
  gradcheck::check(reduce_sum(maximum(a, row) * w), a, row);
  gradcheck::check(reduce_sum(minimum(col, row) * w), col, row);
  gradcheck::check(reduce_sum((col * 2.0 + a / 3.0 - 1.0) * w), a, col);
}

TEST_CASE("dyn extents, including a run-time broadcast of an extent of 1") {
  Tensor<double, Shape<dyn, 4>> a(uniform<Shape<5, 4>>(10, -1, 1));
  Tensor<double, Shape<dyn, 4>> b(uniform<Shape<1, 4>>(11, -1, 1));
  Tensor<double, Shape<dyn, 4>> c(uniform<Shape<5, 4>>(12, -1, 1));
  gradcheck::check(reduce_sum(tanh(a * b + c)), a, b, c);
}

TEST_CASE("where sends the adjoint to the chosen branch; cast carries it across dtypes") {
  auto a = uniform<Shape<3, 4>>(13, -1, 1);
  auto b = uniform<Shape<4>>(14, -1, 1);
  gradcheck::check(reduce_sum(where(a > 0, a * 3, b) * a), a, b);
  Tensor<double, Shape<3, 4>> x = uniform<Shape<3, 4>>(15, -1, 1);
  // Through float32 the derivative is exact for this loss: sum(cast<double>(cast<float>(x)) * 2).
  auto [l, g] = value_and_grad(reduce_sum(cast<double>(cast<float>(x)) * 2.0), x);
  (void)l;
  for (double v : g) REQUIRE(v == 2.0);
}

TEST_CASE("a variable used several times accumulates; variables of one type stay distinct") {
  auto x = uniform<Shape<3>>(16, -1, 1);
  auto y = uniform<Shape<3>>(17, -1, 1);
  gradcheck::check(reduce_sum(x * x * y + sin(x) * y + y), x, y);
  gradcheck::check(reduce_sum(x * y), y);  // asking for y alone: x's occurrence contributes nothing
  auto [gx] = grad(reduce_sum(square(x) + 3.0 * y), x);
  const Tensor<double, Shape<3>> gxt = gx;
  for (std::size_t i = 0; i < 3; ++i) REQUIRE(gxt(i) == Approx(2 * x(i)));
}

TEST_CASE("variables that do not reach the loss: an error by default, zeros on request") {
  Variable<double, Shape<3>> x(uniform<Shape<3>>(18, -1, 1), "x");
  Variable<double, Shape<3>> other(uniform<Shape<3>>(19, -1, 1), "other");
  auto loss = reduce_sum(square(x));
  REQUIRE_THROWS_WITH(value_and_grad(loss, other), Catch::Contains("variable 'other' is not connected"));
  REQUIRE_THROWS_WITH(grad(loss, other), Catch::Contains("variable 'other' is not connected"));
  auto [l, g] = value_and_grad(loss, unconnected_gradients::zero, other);
  (void)l;
  for (double v : g) REQUIRE(v == 0.0);
  // Through an integer cast or a comparison nothing flows either.
  auto [l2, g2] = value_and_grad(reduce_sum(cast<double>(cast<int>(x)) + cast<double>(x > 0.0)), unconnected_gradients::zero, x);
  (void)l2;
  for (double v : g2) REQUIRE(v == 0.0);
}

TEST_CASE("stop_gradient stops the adjoint") {
  auto x = uniform<Shape<4>>(20, -1, 1);
  auto [l, g] = value_and_grad(reduce_sum(x * stop_gradient(x)), x);
  (void)l;
  for (std::size_t i = 0; i < 4; ++i) REQUIRE(g(i) == Approx(x(i)));
}

TEST_CASE("float32 gradients agree with double ones") {
  auto xd = uniform<Shape<8, 5>>(21, -1, 1);
  Tensor<float, Shape<8, 5>> xf = cast<float>(xd);
  auto [ld, gd] = value_and_grad(reduce_mean(softplus(xd) * tanh(xd)), xd);
  auto [lf, gf] = value_and_grad(reduce_mean(softplus(xf) * tanh(xf)), xf);
  REQUIRE(double(lf) == Approx(ld).epsilon(1e-5));
  for (std::size_t i = 0; i < gd.size(); ++i) REQUIRE(double(gf.data()[i]) == Approx(gd.data()[i]).margin(1e-6).epsilon(1e-4));
}

TEST_CASE("custom_gradient replaces the derived gradient") {
  auto x = uniform<Shape<6>>(22, -3, 3);
  // A numerically stable log(1 + e^x) with its own derivative: the same values as the rules'.
  auto stable = custom_gradient(x, [](auto& v) { return log1p(exp(v)); }, [](const auto& v, const auto& g) { return g * sigmoid(v); });
  gradcheck::check(reduce_sum(stable * 2.0), x);
  // A straight-through estimator: round() forward, the identity backward.
  auto ste = custom_gradient(x, [](auto& v) { return round(v); }, [](const auto&, const auto& g) { return g; });
  auto [l, g] = value_and_grad(reduce_sum(ste * 3.0), x);
  (void)l;
  for (double v : g) REQUIRE(v == 3.0);
  auto [gs] = grad(reduce_sum(ste * 3.0), x);
  const Tensor<double, Shape<6>> gst = gs;
  for (double v : gst) REQUIRE(v == 3.0);
  // The two-argument form keeps the value and rewrites the adjoint that reaches it: clipping.
  auto clipped = custom_gradient(x * 100.0, [](const auto&, const auto& up) { return clip_by_value(up, -1.0, 1.0); });
  auto [l2, g2] = value_and_grad(reduce_sum(clipped * 5.0), x);
  REQUIRE(l2 == Approx(eval(reduce_sum(x * 500.0))()));
  for (double v : g2) REQUIRE(v == 100.0);
}
