// Parity with PyTorch and TensorFlow.js on committed reference data (tests/parity/generate.py
// and generate_tfjs.js write it).
#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ctflow;

namespace {

struct reference {
  std::vector<double> x, y;
};

const std::map<std::string, reference>& data() {
  static const std::map<std::string, reference> cases = [] {
    std::map<std::string, reference> m;
    std::ifstream torch(std::string(CTFLOW_PARITY_DIR) + "/reference.txt"), tfjs(std::string(CTFLOW_PARITY_DIR) + "/tfjs_reference.txt");
    std::string line;
    for (auto* in : {&torch, &tfjs}) {
      while (std::getline(*in, line)) {
        std::istringstream ls(line);
        std::string name, tok;
        ls >> name >> tok;
        reference r;
        std::vector<double>* into = &r.x;
        while (ls >> tok) {
          if (tok == "y") { into = &r.y; continue; }
          into->push_back(std::stod(tok));
        }
        m[name] = r;
      }
    }
    return m;
  }();
  return cases;
}

const reference& get(const std::string& name) {
  const auto it = data().find(name);
  REQUIRE(it != data().end());
  return it->second;
}

Tensor<double, Shape<dyn>> vec(const std::vector<double>& v) {
  Tensor<double, Shape<dyn>> t({v.size()});
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

template <class T> void compare(const T& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) REQUIRE(double(got.data()[i]) == Approx(want[i]).epsilon(tol).margin(tol));
}

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
  REQUIRE(data().size() >= 30);
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

namespace {

/// The inputs of generate_tfjs.js: x[i] = sin(0.37 i + 0.1), f[i] = cos(0.23 i) / 2, in float32.
template <class S> Tensor<float, S> tfjs_input() {
  Tensor<float, S> t;
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = float(std::sin(0.37 * double(i) + 0.1));
  return t;
}
template <class S> Tensor<float, S> tfjs_filter() {
  Tensor<float, S> t;
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = float(std::cos(0.23 * double(i)) / 2);
  return t;
}
/// The weights w[i] = (i % 7 - 3) / 4 of the gradients' sum(y * w).
template <class S> Tensor<float, S> tfjs_weights() {
  Tensor<float, S> t;
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = float(int(i % 7) - 3) / 4.0f;
  return t;
}

template <nn::padding P, std::size_t S, std::size_t D, class SX, class SF> void tfjs_conv(const std::string& name, bool grads) {
  INFO(name);
  auto x = tfjs_input<SX>();
  auto f = tfjs_filter<SF>();
  const auto y = eval(nn::conv2d<P, S, S, D, D>(x, f));
  compare(y, get("tfjs_" + name).y, 1e-5);
  if (!grads) return;
  const auto w = tfjs_weights<shape_t<decltype(y)>>();
  auto [v, gx, gf] = value_and_grad(reduce_sum(nn::conv2d<P, S, S, D, D>(x, f) * w), x, f);
  (void)v;
  compare(gx, get("tfjs_" + name + "_dx").y, 1e-5);
  compare(gf, get("tfjs_" + name + "_df").y, 1e-5);
}

template <bool Max, nn::padding P> void tfjs_pool(const std::string& name, bool grads = true) {
  INFO(name);
  auto x = tfjs_input<Shape<2, 6, 6, 2>>();
  auto op = [&](const auto& a) {
    if constexpr (Max) return nn::max_pool2d<3, 3, 2, 2, P>(a);
    else return nn::avg_pool2d<3, 3, 2, 2, P>(a);
  };
  const auto y = eval(op(x));
  compare(y, get("tfjs_" + name).y, 1e-6);
  if (!grads) return;
  const auto w = tfjs_weights<shape_t<decltype(y)>>();
  auto [v, gx] = value_and_grad(reduce_sum(op(x) * w), x);
  (void)v;
  compare(gx, get("tfjs_" + name + "_dx").y, 1e-6);
}

}  // namespace

TEST_CASE("conv2d and pooling match TensorFlow.js: SAME with stride 2 on even sizes, dilations, gradients") {
  tfjs_conv<nn::SAME, 2, 1, Shape<2, 6, 6, 2>, Shape<3, 3, 2, 3>>("conv_same_s2", true);
  tfjs_conv<nn::SAME, 2, 1, Shape<1, 7, 7, 2>, Shape<2, 2, 2, 3>>("conv_same_s2_k2", true);
  tfjs_conv<nn::VALID, 1, 2, Shape<1, 7, 6, 2>, Shape<2, 3, 2, 2>>("conv_valid_d2", false);
  tfjs_conv<nn::SAME, 1, 1, Shape<1, 5, 4, 3>, Shape<3, 3, 3, 2>>("conv_same_s1", true);
  tfjs_pool<true, nn::SAME>("max_same");
  // The forward pass only: tfjs's avgPool gradient divides by the whole window where its forward
  // divided by the valid elements (TensorFlow's AvgPoolGrad does not; nn_test checks ctflow's
  // gradient against finite differences).
  tfjs_pool<false, nn::SAME>("avg_same", false);
  tfjs_pool<true, nn::VALID>("max_valid");
  tfjs_pool<false, nn::VALID>("avg_valid");
}

namespace {

/// Compares op(inputs...) with tfjs_<name>, then (when grads) the gradients of sum(op * w) with
/// tfjs_<name>_d0, _d1, ... (one per input, in order).
template <class Op, class... In> void tfjs_check(const std::string& name, double tol, bool grads, Op op, In&... in) {
  INFO(name);
  const auto y = eval(op(in...));
  compare(y, get("tfjs_" + name).y, tol);
  if (!grads) return;
  const auto w = tfjs_weights<shape_t<decltype(y)>>();
  const auto r = value_and_grad(reduce_sum(op(in...) * w), in...);
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    (compare(std::get<K + 1>(r), get("tfjs_" + name + "_d" + std::to_string(K)).y, tol), ...);
  }(std::index_sequence_for<In...>{});
}

}  // namespace

TEST_CASE("explicit padding, NCHW, conv1d, conv2d_transpose, depthwise and separable convolutions match TensorFlow.js") {
  auto x1 = tfjs_input<Shape<1, 5, 5, 2>>();
  auto f1 = tfjs_filter<Shape<3, 3, 2, 3>>();
  tfjs_check("conv_explicit", 1e-5, true, [](const auto& a, const auto& b) { return nn::conv2d<nn::explicit_padding(1, 2, 0, 1)>(a, b); }, x1, f1);
  auto xc = tfjs_input<Shape<2, 2, 6, 6>>();
  tfjs_check("conv_nchw", 1e-5, false, [](const auto& a, const auto& b) { return nn::conv2d<nn::SAME, 2>(a, b, nn::NCHW); }, xc, f1);
  auto s = tfjs_input<Shape<2, 9, 2>>();
  auto k = tfjs_filter<Shape<3, 2, 4>>();
  tfjs_check("conv1d", 1e-5, true, [](const auto& a, const auto& b) { return nn::conv1d<nn::SAME, 2>(a, b); }, s, k);
  auto xt = tfjs_input<Shape<2, 3, 3, 4>>();
  auto ft = tfjs_filter<Shape<3, 3, 2, 4>>();
  tfjs_check("conv_transpose", 1e-5, true, [](const auto& a, const auto& b) { return nn::conv2d_transpose<nn::SAME, 2>(a, b); }, xt, ft);
  auto xv = tfjs_input<Shape<1, 3, 3, 3>>();
  auto fv = tfjs_filter<Shape<3, 3, 2, 3>>();
  tfjs_check("conv_transpose_valid", 1e-5, true, [](const auto& a, const auto& b) { return nn::conv2d_transpose<nn::VALID, 2>(a, b); }, xv, fv);
  auto xd = tfjs_input<Shape<2, 6, 6, 2>>();
  auto fd = tfjs_filter<Shape<3, 3, 2, 2>>();
  tfjs_check("depthwise", 1e-5, true, [](const auto& a, const auto& b) { return nn::depthwise_conv2d<nn::SAME, 2>(a, b); }, xd, fd);
  auto xd2 = tfjs_input<Shape<1, 5, 6, 3>>();
  auto fd2 = tfjs_filter<Shape<2, 3, 3, 1>>();
  tfjs_check("depthwise_valid", 1e-5, true, [](const auto& a, const auto& b) { return nn::depthwise_conv2d<nn::VALID>(a, b); }, xd2, fd2);
  auto xs = tfjs_input<Shape<1, 6, 5, 2>>();
  auto pw = tfjs_filter<Shape<1, 1, 4, 3>>();
  tfjs_check("separable", 1e-5, true, [](const auto& a, const auto& b, const auto& c) { return nn::separable_conv2d<nn::SAME>(a, b, c); }, xs, fd, pw);
}

TEST_CASE("image::resize (half-pixel centers) and its gradients, and Keras's cross-entropies, match TensorFlow.js") {
  auto x = tfjs_input<Shape<2, 3, 4, 2>>();
  tfjs_check("resize_bilinear", 1e-5, false, [](const auto& a) { return image::resize<5, 7>(a); }, x);
  auto big = tfjs_input<Shape<1, 5, 7, 2>>();
  tfjs_check("resize_bilinear_down", 1e-5, false, [](const auto& a) { return image::resize<2, 3>(a); }, big);
  tfjs_check("resize_nearest", 1e-6, false, [](const auto& a) { return image::resize<5, 7>(a, image::ResizeMethod::NEAREST_NEIGHBOR); }, x);
  // The gradients against PyTorch (bilinear with align_corners=False, nearest-exact).
  for (auto [name, method] : {std::pair{"grad_resize_bilinear", image::ResizeMethod::BILINEAR}, std::pair{"grad_resize_nearest", image::ResizeMethod::NEAREST_NEIGHBOR}}) {
    INFO(name);
    const auto [v, g] = value_and_grad(reduce_sum(image::resize<5, 7>(x, method) * tfjs_weights<Shape<2, 5, 7, 2>>()), x);
    (void)v;
    compare(g, get(name).y, 1e-5);
  }
  // p = 0.5 + 0.4 x, t = f + 0.5, as the generator makes them.
  Tensor<float, Shape<4, 5>> p = 0.5f + 0.4f * tfjs_input<Shape<4, 5>>();
  const Tensor<float, Shape<4, 5>> t = 0.5f + tfjs_filter<Shape<4, 5>>();
  tfjs_check("categorical_crossentropy", 1e-5, true, [&](const auto& a) { return nn::categorical_crossentropy(t, a); }, p);
  tfjs_check("binary_crossentropy", 1e-5, true, [&](const auto& a) { return nn::binary_crossentropy(t, a); }, p);
}
