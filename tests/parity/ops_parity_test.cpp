// Element-wise functions, matmul, reductions and tf.nn's softmax family and losses against PyTorch.
#include "parity.hpp"

using namespace ctflow;
using namespace parity;

namespace {

template <class F> void unary(const std::string& name, F f) {
  INFO(name);
  const auto& r = get(name);
  auto x = vec(r.x);
  Tensor<double, Shape<dyn>> y = f(x);
  compare(y, r.y, 1e-12);
  Tensor<float, Shape<dyn>> xf = cast<float>(x);
  Tensor<float, Shape<dyn>> yf = f(xf);
  compare(yf, r.y, 3e-6);
}

}  // namespace

TEST_CASE("element-wise functions match PyTorch in float64 and float32") {
  REQUIRE(cases().size() >= 30);
  unary("exp", [](auto& v) { return exp(v); });
  unary("log", [](auto& v) { return log(v); });
  unary("log1p", [](auto& v) { return log1p(v); });
  unary("expm1", [](auto& v) { return expm1(v); });
  unary("sqrt", [](auto& v) { return sqrt(v); });
  unary("rsqrt", [](auto& v) { return rsqrt(v); });
  unary("sin", [](auto& v) { return sin(v); });
  unary("cos", [](auto& v) { return cos(v); });
  unary("tanh", [](auto& v) { return tanh(v); });
  unary("sigmoid", [](auto& v) { return sigmoid(v); });
  unary("relu", [](auto& v) { return relu(v); });
  unary("relu6", [](auto& v) { return relu6(v); });
  unary("leaky_relu", [](auto& v) { return leaky_relu(v); });
  unary("elu", [](auto& v) { return elu(v); });
  unary("selu", [](auto& v) { return selu(v); });
  unary("gelu", [](auto& v) { return gelu(v); });
  unary("softplus", [](auto& v) { return softplus(v); });
  unary("softsign", [](auto& v) { return softsign(v); });
  unary("swish", [](auto& v) { return swish(v); });
  unary("abs", [](auto& v) { return abs(v); });
  unary("sign", [](auto& v) { return sign(v); });
  unary("square", [](auto& v) { return square(v); });
  unary("floor", [](auto& v) { return floor(v); });
  unary("ceil", [](auto& v) { return ceil(v); });
  unary("round", [](auto& v) { return round(v); });
}

TEST_CASE("matmul, reductions, cumsum, argmax and a softmax written with ops match PyTorch") {
  const auto& mm = get("matmul");
  Tensor<double, Shape<6, 5>> a;
  Tensor<double, Shape<5, 7>> b;
  std::copy(mm.x.begin(), mm.x.begin() + 30, a.begin());
  std::copy(mm.x.begin() + 30, mm.x.end(), b.begin());
  compare(eval(matmul(a, b)), mm.y, 1e-12);
  Tensor<float, Shape<6, 7>> cf = matmul(cast<float>(a), cast<float>(b));
  compare(cf, mm.y, 2e-5);

  Tensor<double, Shape<4, 6>> m;
  const auto& rs = get("reduce_sum_1");
  std::copy(rs.x.begin(), rs.x.end(), m.begin());
  compare(eval(reduce_sum<1>(m)), rs.y, 1e-12);
  compare(eval(reduce_mean<0>(m)), get("reduce_mean_0").y, 1e-12);
  compare(eval(reduce_max<1>(m)), get("reduce_max_1").y, 1e-12);
  compare(eval(reduce_prod<0>(m)), get("reduce_prod_0").y, 1e-12);
  compare(eval(cumsum<1>(m)), get("cumsum_1").y, 1e-12);
  compare(eval(cast<double>(argmax<1>(m))), get("argmax_1").y, 0);
  auto shifted = m - reduce_max<1>(m, keepdims);
  Tensor<double, Shape<4, 6>> e = exp(shifted);
  compare(eval(e / reduce_sum<1>(e, keepdims)), get("softmax_1").y, 1e-12);
}

TEST_CASE("tf.nn's softmax family and losses match PyTorch, values and gradients") {
  // The inputs: z[5,7], labels k[5], dense targets t[5,7], binary targets zb[5,7], weights w[5], ww[5,7].
  const auto& in = get("nn_inputs").x;
  Tensor<double, Shape<5, 7>> z, t, zb, ww;
  Tensor<std::int32_t, Shape<5>> k;
  Tensor<double, Shape<5>> w;
  auto at = in.begin();
  std::copy(at, at + 35, z.begin());
  at += 35;
  for (int i = 0; i < 5; ++i) k(i) = std::int32_t(*at++);
  std::copy(at, at + 35, t.begin());
  at += 35;
  std::copy(at, at + 35, zb.begin());
  at += 35;
  std::copy(at, at + 5, w.begin());
  at += 5;
  std::copy(at, at + 35, ww.begin());

  compare(eval(nn::log_softmax(z)), get("log_softmax").y, 1e-12);
  compare(eval(nn::softmax(z)), get("softmax").y, 1e-12);
  compare(eval(nn::sparse_softmax_cross_entropy_with_logits(k, z)), get("sparse_xent").y, 1e-12);
  compare(eval(nn::softmax_cross_entropy_with_logits(t, z)), get("dense_xent").y, 1e-12);
  compare(eval(nn::sigmoid_cross_entropy_with_logits(zb, z)), get("sigmoid_xent").y, 1e-12);
  compare(eval(reshape<Shape<1>>(nn::l2_loss(z))), get("l2_loss").y, 1e-12);
  Tensor<float, Shape<5, 7>> zf = cast<float>(z);
  compare(eval(nn::sparse_softmax_cross_entropy_with_logits(k, zf)), get("sparse_xent").y, 2e-6);

  auto [l1, g1] = value_and_grad(reduce_sum(w * nn::sparse_softmax_cross_entropy_with_logits(k, z)), z);
  compare(g1, get("grad_sparse_xent").y, 1e-12);
  auto [l1f, g1f] = value_and_grad(reduce_sum(cast<float>(w) * nn::sparse_softmax_cross_entropy_with_logits(k, zf)), zf);
  compare(g1f, get("grad_sparse_xent").y, 2e-6);
  auto [l2, g2z, g2t] = value_and_grad(reduce_sum(w * nn::softmax_cross_entropy_with_logits(t, z)), z, t);
  Tensor<double, Shape<70>> g2 = concat<0>(reshape<Shape<35>>(g2z), reshape<Shape<35>>(g2t));
  compare(g2, get("grad_dense_xent").y, 1e-12);
  auto [l3, g3] = value_and_grad(reduce_sum(ww * nn::sigmoid_cross_entropy_with_logits(zb, z)), z);
  compare(g3, get("grad_sigmoid_xent").y, 1e-12);  // includes z[0,0] = 0, where TF's form is exact
  auto [l4, g4] = value_and_grad(reduce_sum(ww * nn::log_softmax(z)), z);
  compare(g4, get("grad_log_softmax").y, 1e-12);
  auto [l5, g5] = value_and_grad(reduce_sum(ww * nn::softmax(z)), z);
  compare(g5, get("grad_softmax").y, 1e-12);
  (void)l1, (void)l1f, (void)l2, (void)l3, (void)l4, (void)l5;
}
