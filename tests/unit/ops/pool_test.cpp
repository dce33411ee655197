// tf.nn's pooling (max and average, their gradients against TensorFlow's windows and the loop
// definitions) and bias_add with the layout conversions. A translation unit of nn_test of its own.
#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

#include "../autodiff/gradcheck.hpp"

using namespace ctflow;

TEST_CASE("max and average pooling: TensorFlow's windows, SAME averages over valid elements, gradients") {
  Tensor<double, Shape<1, 3, 4, 2>> x;
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = double((i * 7) % 11) - 5.0;
  const auto mp = eval(nn::max_pool2d<2, 2>(x));  // VALID: [1, 1, 2, 2]
  static_assert(std::is_same_v<shape_t<decltype(mp)>, Shape<1, 1, 2, 2>>);
  for (std::size_t ox = 0; ox < 2; ++ox)
    for (std::size_t c = 0; c < 2; ++c) {
      double m = -1e9;
      for (std::size_t y = 0; y < 2; ++y)
        for (std::size_t xx = 2 * ox; xx < 2 * ox + 2; ++xx) m = std::max(m, x(0, y, xx, c));
      CHECK(mp(0, 0, ox, c) == m);
    }
  // SAME, 2x2 stride 2 over 3 rows: the last window row is outside the image and not counted.
  const auto ap = eval(nn::avg_pool2d<2, 2, 2, 2, nn::SAME>(x));
  static_assert(std::is_same_v<shape_t<decltype(ap)>, Shape<1, 2, 2, 2>>);
  CHECK(ap(0, 1, 0, 1) == Approx((x(0, 2, 0, 1) + x(0, 2, 1, 1)) / 2));
  CHECK(ap(0, 0, 1, 0) == Approx((x(0, 0, 2, 0) + x(0, 0, 3, 0) + x(0, 1, 2, 0) + x(0, 1, 3, 0)) / 4));
  const auto ms = eval(nn::max_pool2d<3, 3, 1, 1, nn::SAME>(x));
  CHECK(ms(0, 0, 0, 0) == std::max({x(0, 0, 0, 0), x(0, 0, 1, 0), x(0, 1, 0, 0), x(0, 1, 1, 0)}));

  // Gradients: distinct values, so every window has one maximum.
  Tensor<double, Shape<2, 5, 4, 3>> z;
  for (std::size_t i = 0; i < z.size(); ++i) z.data()[i] = std::sin(double(i) * 1.7) * 3;
  gradcheck::check(reduce_sum(square(nn::max_pool2d<2, 2>(z))), z);
  gradcheck::check(reduce_sum(square(nn::max_pool2d<3, 2, 2, 1, nn::SAME>(z))), z);
  gradcheck::check(reduce_sum(square(nn::avg_pool2d<2, 2>(z))), z);
  gradcheck::check(reduce_sum(square(nn::avg_pool2d<3, 3, 2, 2, nn::SAME>(z))), z);
  gradcheck::check(reduce_sum(square(nn::global_avg_pool2d(z))) + reduce_sum(nn::global_max_pool2d(z)), z);
  // Ties route to the first maximum of the window.
  Tensor<double, Shape<1, 2, 2, 1>> tie;
  tie.data()[1] = tie.data()[2] = 1.0;
  auto [v, g] = value_and_grad(reduce_sum(nn::max_pool2d<2, 2>(tie)), tie);
  CHECK(v == 1.0);
  CHECK(g.data()[1] == 1.0);
  CHECK(g.data()[2] == 0.0);
}

namespace pool_reference {

// max_pool2d / avg_pool2d and their gradients by their definitions (TensorFlow's SAME windows;
// the gradient of a max goes to the window's first maximum in row-major order).
struct window {
  std::size_t y0, y1, x0, x1;
};
inline window at(std::size_t h, std::size_t w, std::size_t k, std::size_t s, std::size_t oy, std::size_t ox, std::size_t pad_top,
                 std::size_t pad_left) {
  const auto clip = [](std::ptrdiff_t v, std::size_t n) { return std::size_t(std::clamp<std::ptrdiff_t>(v, 0, std::ptrdiff_t(n))); };
  const std::ptrdiff_t ys = std::ptrdiff_t(oy * s) - std::ptrdiff_t(pad_top), xs = std::ptrdiff_t(ox * s) - std::ptrdiff_t(pad_left);
  return {clip(ys, h), clip(ys + std::ptrdiff_t(k), h), clip(xs, w), clip(xs + std::ptrdiff_t(k), w)};
}

/// Checks ctflow's max and average pooling of x ([n, h, w, c], k x k windows, stride s, SAME or
/// VALID) and both gradients against the loops above (the averages summed in the kernel's order:
/// each column of the window, then across the columns).
template <std::size_t K, std::size_t S, nn::padding P = nn::SAME, class T, class SX> void check(const Tensor<T, SX>& x) {
  const auto d = x.dims();
  const std::size_t n = d[0], h = d[1], w = d[2], c = d[3];
  constexpr bool same = P == nn::SAME;
  const std::size_t oh = same ? (h + S - 1) / S : (h - K) / S + 1, ow = same ? (w + S - 1) / S : (w - K) / S + 1;
  const std::size_t pad_h = same ? std::max<std::ptrdiff_t>(std::ptrdiff_t((oh - 1) * S + K) - std::ptrdiff_t(h), 0) : 0;
  const std::size_t pad_w = same ? std::max<std::ptrdiff_t>(std::ptrdiff_t((ow - 1) * S + K) - std::ptrdiff_t(w), 0) : 0;
  const auto mp = eval(nn::max_pool2d<K, K, S, S, P>(x));
  const auto ap = eval(nn::avg_pool2d<K, K, S, S, P>(x));
  // Weights 1/8, 2/8, ... 32 on the outputs, so that neighbouring windows' adjoints differ.
  Tensor<T, shape_t<decltype(mp)>> weights;
  for (std::size_t i = 0; i < weights.size(); ++i) weights.data()[i] = T(float(i % 256 + 1) / 8);
  // value_and_grad's from the positions its forward pass saved, grad's from x and y.
  const auto mg = std::get<1>(value_and_grad(reduce_sum(nn::max_pool2d<K, K, S, S, P>(x) * weights), x));
  const auto mgs = eval(std::get<0>(grad(reduce_sum(nn::max_pool2d<K, K, S, S, P>(x) * weights), x)));
  const auto ag = std::get<1>(value_and_grad(reduce_sum(nn::avg_pool2d<K, K, S, S, P>(x) * weights), x));
  // value_and_grad's forward pass, which also saves each window's position of its maximum (and
  // reads each window straight from x for it).
  auto node = nn::max_pool2d<K, K, S, S, P>(x);
  Tensor<T, shape_t<decltype(mp)>> saving;
  Tensor<typename decltype(node)::op_type::saved_type, shape_t<decltype(mp)>> positions;
  { backend::cpu::evaluator<decltype(node)> forward(node, saving.data(), positions.data()); }
  std::vector<float> dmax(x.size(), 0.0f), davg(x.size(), 0.0f);
  std::size_t bad = 0;
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t oy = 0; oy < oh; ++oy)
      for (std::size_t ox = 0; ox < ow; ++ox) {
        const window win = at(h, w, K, S, oy, ox, pad_h / 2, pad_w / 2);
        const float count = float((win.y1 - win.y0) * (win.x1 - win.x0));
        for (std::size_t ch = 0; ch < c; ++ch) {
          const std::size_t o = ((b * oh + oy) * ow + ox) * c + ch;
          float m = -std::numeric_limits<float>::infinity(), sum = 0;
          std::size_t first = 0, position = 0;
          for (std::size_t y = win.y0; y < win.y1; ++y)
            for (std::size_t xx = win.x0; xx < win.x1; ++xx) {
              const std::size_t i = ((b * h + y) * w + xx) * c + ch;
              if (float(x.data()[i]) > m) { m = float(x.data()[i]); first = i; position = (y - win.y0) * K + (xx - win.x0); }
            }
          for (std::size_t xx = win.x0; xx < win.x1; ++xx) {  // each column's sum, then across them
            float column = 0;
            for (std::size_t y = win.y0; y < win.y1; ++y) column += float(x.data()[((b * h + y) * w + xx) * c + ch]);
            sum = xx == win.x0 ? column : sum + column;
          }
          const float g = float(weights.data()[o]);
          bad += float(mp.data()[o]) != m;
          bad += float(saving.data()[o]) != m;
          bad += std::size_t(positions.data()[o]) != position;
          bad += float(ap.data()[o]) != Approx(sum / count).epsilon(1e-2);
          dmax[first] += g;
          for (std::size_t y = win.y0; y < win.y1; ++y)
            for (std::size_t xx = win.x0; xx < win.x1; ++xx) davg[((b * h + y) * w + xx) * c + ch] += g / count;
        }
      }
  for (std::size_t i = 0; i < x.size(); ++i) {
    bad += float(mg.data()[i]) != Approx(dmax[i]).epsilon(1e-2);
    bad += float(mgs.data()[i]) != Approx(dmax[i]).epsilon(1e-2);
    bad += float(ag.data()[i]) != Approx(davg[i]).epsilon(1e-2).margin(1e-6);
  }
  INFO("window " << K << ", stride " << S << (same ? ", SAME" : ", VALID") << ", input " << format_dims(d) << ", " << sizeof(T) << "-byte elements");
  CHECK(bad == 0);
}

}  // namespace pool_reference

TEST_CASE("pooling and its gradients equal their loop definitions: channel tails, clipped windows, ties, bfloat16, streamed adjoints") {
  // 20 channels: a full vector and a partial one; 9 x 11 pixels: SAME windows clipped on two sides;
  // values on a coarse grid: windows with several maxima.
  Tensor<float, Shape<2, 9, 11, 20>> x;
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = float(int((i * 37) % 13) - 6);
  pool_reference::check<3, 2>(x);
  pool_reference::check<2, 2>(x);
  pool_reference::check<3, 1>(x);
  // VALID windows as wide as their strides tile the image but for its last row and column (the
  // gradient's kernel for tiling windows writes each pixel once).
  pool_reference::check<2, 2, nn::VALID>(x);
  pool_reference::check<3, 3, nn::VALID>(x);
  pool_reference::check<3, 2, nn::VALID>(x);
  Tensor<bfloat16, Shape<2, 9, 11, 3>> xb;
  for (std::size_t i = 0; i < xb.size(); ++i) xb.data()[i] = bfloat16(float(int((i * 29) % 11) - 5));
  pool_reference::check<3, 2>(xb);
  pool_reference::check<2, 2, nn::VALID>(xb);
  // Windows of 255 elements or more keep their maxima's positions in the compute type, not bytes.
  const auto wide = random_normal<float, Shape<2, 20, 18, 5>>(78, 0.0, 1.0);
  pool_reference::check<16, 16>(wide);
  // NaN never wins; the gradient goes to the first element equal to the maximum: a -inf one
  // where every element is -inf or NaN, none where every one is NaN. Both gradient kernels agree.
  Tensor<float, Shape<1, 4, 6, 17>> sp;
  for (std::size_t i = 0; i < sp.size(); ++i) sp.data()[i] = float(int((i * 37) % 13) - 6);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (std::size_t y : {0, 1})
    for (std::size_t xx : {0, 1}) sp(0, y, xx, 0) = nan;
  sp(0, 0, 2, 1) = nan, sp(0, 0, 3, 1) = -inf, sp(0, 1, 2, 1) = nan, sp(0, 1, 3, 1) = -inf;
  for (std::size_t y : {2, 3})
    for (std::size_t xx : {4, 5}) sp(0, y, xx, 16) = -inf;
  const auto spy = eval(nn::max_pool2d<2>(sp));
  CHECK(spy(0, 0, 0, 0) == -inf);
  CHECK(spy(0, 0, 1, 1) == -inf);
  Tensor<float, Shape<1, 2, 3, 17>> spw;
  for (std::size_t i = 0; i < spw.size(); ++i) spw.data()[i] = float(i % 7 + 1);
  const auto spg = std::get<1>(value_and_grad(reduce_sum(nn::max_pool2d<2>(sp) * spw), sp));
  const auto sps = eval(std::get<0>(grad(reduce_sum(nn::max_pool2d<2>(sp) * spw), sp)));
  std::size_t differ = 0;
  for (std::size_t i = 0; i < sp.size(); ++i) differ += spg.data()[i] != sps.data()[i];
  CHECK(differ == 0);
  CHECK(spg(0, 0, 0, 0) + spg(0, 0, 1, 0) + spg(0, 1, 0, 0) + spg(0, 1, 1, 0) == 0.0f);
  CHECK(spg(0, 0, 3, 1) == spw(0, 0, 1, 1));
  CHECK(spg(0, 1, 3, 1) == 0.0f);
  CHECK(spg(0, 2, 4, 16) == spw(0, 1, 2, 16));
  CHECK(spg(0, 2, 5, 16) + spg(0, 3, 4, 16) + spg(0, 3, 5, 16) == 0.0f);
  // An empty batch saves no positions and gets an empty gradient.
  Tensor<float, Shape<dyn, 4, 4, 3>> none({0, 4, 4, 3});
  const auto [nv, ng] = value_and_grad(reduce_sum(nn::max_pool2d<2>(none)), none);
  CHECK(nv == 0.0f);
  CHECK(ng.dims() == dims_t<4>{0, 4, 4, 3});
  // An adjoint larger than backend::cpu::cache_bytes goes past the cache in non-temporal stores.
  using SL = Shape<11, 112, 112, 64>;
  static_assert(SL::static_size * sizeof(float) >= backend::cpu::cache_bytes);
  const auto large = random_normal<float, SL>(77, 0.0, 1.0);
  pool_reference::check<3, 2>(large);
}

TEST_CASE("bias_add in both data formats, and layout conversions that let PyTorch weights run as TensorFlow's") {
  Tensor<double, Shape<2, 3, 4, 5>> x = random_normal<double, Shape<2, 3, 4, 5>>(41, 0.0, 1.0);
  Tensor<double, Shape<5>> b5 = random_normal<double, Shape<5>>(42, 0.0, 1.0);
  Tensor<double, Shape<3>> b3 = random_normal<double, Shape<3>>(43, 0.0, 1.0);
  const auto last = eval(nn::bias_add(x, b5));
  const auto first = eval(nn::bias_add(x, b3, nn::NCHW));
  CHECK(last(1, 2, 3, 4) == x(1, 2, 3, 4) + b5(4));
  CHECK(first(1, 2, 3, 4) == x(1, 2, 3, 4) + b3(2));
  gradcheck::check(reduce_sum(square(nn::bias_add(x, b3, nn::NCHW))), x, b3);

  // A convolution with OIHW weights on NCHW data, run through TensorFlow's layouts, equals the
  // NHWC/HWIO convolution it came from.
  Tensor<double, Shape<2, 6, 5, 3>> nhwc = random_normal<double, Shape<2, 6, 5, 3>>(44, 0.0, 1.0);
  Tensor<double, Shape<3, 3, 3, 4>> hwio = random_normal<double, Shape<3, 3, 3, 4>>(45, 0.0, 1.0);
  const Tensor<double, Shape<2, 3, 6, 5>> nchw = nn::nhwc_to_nchw(nhwc);
  const Tensor<double, Shape<4, 3, 3, 3>> oihw = nn::hwio_to_oihw(hwio);
  CHECK(nchw(1, 2, 4, 3) == nhwc(1, 4, 3, 2));
  CHECK(oihw(3, 1, 2, 0) == hwio(2, 0, 1, 3));
  const auto direct = eval(nn::conv2d<nn::SAME>(nhwc, hwio));
  const auto converted = eval(nn::nhwc_to_nchw(nn::conv2d<nn::SAME>(nn::nchw_to_nhwc(nchw), nn::oihw_to_hwio(oihw))));
  CHECK(converted(1, 3, 5, 4) == Approx(direct(1, 5, 4, 3)));
  CHECK(converted(0, 0, 0, 0) == Approx(direct(0, 0, 0, 0)));
}
