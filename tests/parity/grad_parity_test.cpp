// Gradients of the element-wise functions and of a small MLP against PyTorch autograd.
#include "parity.hpp"

using namespace ctflow;
using namespace parity;

TEST_CASE("gradients match PyTorch autograd") {
  auto check = [](const std::string& name, auto f) {
    INFO(name);
    const auto& r = get("grad_" + name);
    auto x = vec(r.x);
    auto [l, g] = value_and_grad(reduce_sum(f(x)), x);
    (void)l;
    compare(g, r.y, 1e-12);
    Tensor<float, Shape<dyn>> xf = cast<float>(x);
    auto [lf, gf] = value_and_grad(reduce_sum(f(xf)), xf);
    (void)lf;
    compare(gf, r.y, 2e-5);
  };
  check("exp", [](auto& v) { return exp(v); });
  check("expm1", [](auto& v) { return expm1(v); });
  check("sin", [](auto& v) { return sin(v); });
  check("cos", [](auto& v) { return cos(v); });
  check("tanh", [](auto& v) { return tanh(v); });
  check("sigmoid", [](auto& v) { return sigmoid(v); });
  check("relu", [](auto& v) { return relu(v); });
  check("leaky_relu", [](auto& v) { return leaky_relu(v); });
  check("elu", [](auto& v) { return elu(v); });
  check("selu", [](auto& v) { return selu(v); });
  check("gelu", [](auto& v) { return gelu(v); });
  check("softplus", [](auto& v) { return softplus(v); });
  check("softsign", [](auto& v) { return softsign(v); });
  check("swish", [](auto& v) { return swish(v); });
  check("abs", [](auto& v) { return abs(v); });
  check("square", [](auto& v) { return square(v); });
  check("erf", [](auto& v) { return erf(v); });
  check("log", [](auto& v) { return log(v); });
  check("log1p", [](auto& v) { return log1p(v); });
  check("sqrt", [](auto& v) { return sqrt(v); });
  check("rsqrt", [](auto& v) { return rsqrt(v); });

  const auto& r = get("grad_mlp");
  Tensor<double, Shape<8, 6>> x;
  Tensor<double, Shape<6, 5>> w1;
  Tensor<double, Shape<5>> b1;
  Tensor<double, Shape<5, 4>> w2;
  Tensor<double, Shape<4>> b2;
  Tensor<std::int32_t, Shape<8>> y;
  auto at = r.x.begin();
  std::copy_n(at, 48, x.begin()); at += 48;
  std::copy_n(at, 30, w1.begin()); at += 30;
  std::copy_n(at, 5, b1.begin()); at += 5;
  std::copy_n(at, 20, w2.begin()); at += 20;
  std::copy_n(at, 4, b2.begin()); at += 4;
  for (std::size_t i = 0; i < 8; ++i) y(i) = std::int32_t(at[std::ptrdiff_t(i)]);
  auto logits = matmul(relu(matmul(x, w1) + b1), w2) + b2;
  auto shifted = logits - stop_gradient(reduce_max<1>(logits, keepdims));
  auto loss = reduce_mean(log(reduce_sum<1>(exp(shifted))) - reduce_sum<1>(shifted * one_hot<4, double>(y)));
  auto [l, g1, gb1, g2, gb2] = value_and_grad(loss, w1, b1, w2, b2);
  (void)l;
  std::vector<double> got;
  got.insert(got.end(), g1.begin(), g1.end());
  got.insert(got.end(), gb1.begin(), gb1.end());
  got.insert(got.end(), g2.begin(), g2.end());
  got.insert(got.end(), gb2.begin(), gb2.end());
  compare(got, r.y, 1e-12);
}
