// Convolutions, pooling, resizing and Keras's cross-entropies against TensorFlow.js (and PyTorch for
// resize's gradients).
#include "parity.hpp"

using namespace ctflow;
using namespace parity;

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
