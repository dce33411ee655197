// tf.nn's softmax family and losses: values against their definitions, finite-difference
// gradients in double precision, the vectorised rows of the fused cross-entropy against the
// composed form, and the errors. (tests/parity compares them with PyTorch.)
#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

#include "../autodiff/gradcheck.hpp"

using namespace ctflow;

TEST_CASE("softmax and log_softmax are stable and sum to one along their axis") {
  Tensor<double, Shape<2, 3>> z;
  const double v[] = {1000, 1001, 1002, -1000, 0, 1000};  // exp would overflow without the shift
  std::copy(v, v + 6, z.begin());
  const auto p = eval(nn::softmax(z));
  const auto lp = eval(nn::log_softmax(z));
  CHECK(p(0, 2) == Approx(std::exp(0.0) / (std::exp(-2.0) + std::exp(-1.0) + 1)));
  CHECK(lp(1, 0) == Approx(-2000.0));
  CHECK(lp(1, 2) == Approx(0.0).margin(1e-12));
  const auto sums = eval(reduce_sum<1>(nn::softmax(z)));
  CHECK(sums(0) == Approx(1.0));
  CHECK(sums(1) == Approx(1.0));
  const auto p0 = eval(nn::softmax<0>(z));  // along the first axis
  CHECK(p0(0, 0) + p0(1, 0) == Approx(1.0));
}

TEST_CASE("sparse softmax cross-entropy: values, any leading rank, the vectorised rows, errors") {
  // Leading extents [2, 3], 37 classes: full packets and a tail on every row.
  Tensor<double, Shape<2, 3, 37>> z = random_normal<double, Shape<2, 3, 37>>(7, 0.0, 4.0);
  Tensor<std::int64_t, Shape<2, 3>> k;
  for (int i = 0; i < 6; ++i) k.data()[i] = (i * 11) % 37;
  const auto fused = eval(nn::sparse_softmax_cross_entropy_with_logits(k, z));
  const auto composed = eval(nn::softmax_cross_entropy_with_logits(cast<double>(one_hot<37>(k)), z));
  for (int i = 0; i < 6; ++i) CHECK(fused.data()[i] == Approx(composed.data()[i]).epsilon(1e-13));
  // float32 over wide rows (1000 classes), against the double result.
  Tensor<float, Shape<4, 1000>> zf = random_normal<float, Shape<4, 1000>>(3, 0.0, 3.0);
  Tensor<std::int32_t, Shape<4>> kf;
  for (int i = 0; i < 4; ++i) kf(i) = 250 * i + 17;
  const auto lf = eval(nn::sparse_softmax_cross_entropy_with_logits(kf, zf));
  const auto ld = eval(nn::sparse_softmax_cross_entropy_with_logits(kf, cast<double>(zf)));
  for (int i = 0; i < 4; ++i) CHECK(lf(i) == Approx(ld(i)).epsilon(1e-6));
  // Logits far above the label's (exp of their difference overflows float): the row is shifted
  // by its maximum instead; confident right answers keep their tiny losses; the gradient, from
  // the losses, still sums to zero and is -1 + softmax at the label.
  Tensor<float, Shape<4, 1000>> far = zf;
  far(0, 600) = far(0, 17) + 200.0f;  // wrong by far: loss about 200
  far(1, 267) = 120.0f;                // right by far: loss about exp(-110)
  far(2, 517) = -std::numeric_limits<float>::infinity();  // the label itself impossible: loss +inf
  const auto lfar = eval(nn::sparse_softmax_cross_entropy_with_logits(kf, far));
  const auto dfar = eval(nn::sparse_softmax_cross_entropy_with_logits(kf, cast<double>(far)));
  CHECK(lfar(0) == Approx(dfar(0)).epsilon(1e-6));
  CHECK(lfar(0) > 190.0f);
  CHECK(lfar(1) >= 0.0f);
  CHECK(lfar(1) < 1e-30f);
  CHECK(std::isinf(lfar(2)));
  CHECK(lfar(3) == Approx(dfar(3)).epsilon(1e-6));
  const auto [value, g] = value_and_grad(reduce_sum(nn::sparse_softmax_cross_entropy_with_logits(kf, far)), far);
  CHECK(std::isinf(value));
  for (int r : {0, 1, 3}) {
    double sum = 0;
    for (int j = 0; j < 1000; ++j) sum += g(r, j);
    CHECK(sum == Approx(0.0).margin(1e-5));
  }
  CHECK(g(0, 600) == Approx(1.0).margin(1e-6));
  CHECK(g(0, 17) == Approx(-1.0).margin(1e-6));
  CHECK(g(1, 267) == Approx(0.0).margin(1e-6));
  // value_and_grad scales the rows its forward pass saved; grad's expression computes them from
  // the losses. Both agree, and the saved rows also hold where the loss is infinite (TensorFlow's
  // backprop output is softmax - one_hot whatever the loss).
  const auto gs = eval(std::get<0>(grad(reduce_sum(nn::sparse_softmax_cross_entropy_with_logits(kf, far)), far)));
  std::size_t differ = 0;
  for (int r : {0, 1, 3})
    for (int j = 0; j < 1000; ++j) differ += g(r, j) != Approx(gs(r, j)).epsilon(1e-5).margin(1e-9);
  CHECK(differ == 0);
  double sum2 = 0;
  for (int j = 0; j < 1000; ++j) sum2 += g(2, j);
  CHECK(sum2 == Approx(0.0).margin(1e-5));
  CHECK(g(2, 517) == -1.0f);
  CHECK(g(2, 3) == Approx(std::exp(double(far(2, 3))) / [&] {
          double z = 0;
          for (int j = 0; j < 1000; ++j) z += std::exp(double(far(2, j)));
          return z;
        }()).epsilon(1e-5));
  // bfloat16 logits: computed in float, rounded once.
  const Tensor<bfloat16, Shape<4, 1000>> zb = cast<bfloat16>(zf);
  const auto gb = std::get<1>(value_and_grad(reduce_sum(nn::sparse_softmax_cross_entropy_with_logits(kf, zb)), zb));
  const auto gbf = std::get<1>(value_and_grad(reduce_sum(nn::sparse_softmax_cross_entropy_with_logits(kf, cast<float>(zb))), zb));
  differ = 0;
  for (std::size_t i = 0; i < gb.size(); ++i) differ += float(gb.data()[i]) != Approx(float(gbf.data()[i])).epsilon(1e-2).margin(1e-6);
  CHECK(differ == 0);

  Tensor<std::int32_t, Shape<4>> bad = kf;
  bad(2) = 1000;
  CHECK_THROWS_WITH(eval(nn::sparse_softmax_cross_entropy_with_logits(bad, zf)),
                    "ctflow::nn::sparse_softmax_cross_entropy_with_logits: Received a label value of 1000 which is outside the valid range "
                    "of [0, 1000).");
  bad(2) = -1;
  CHECK_THROWS_AS(eval(nn::sparse_softmax_cross_entropy_with_logits(bad, zf)), value_error);
  // An empty batch: a zero loss and an empty gradient (the forward pass saves nothing).
  Tensor<float, Shape<dyn, 10>> z0({0, 10});
  Tensor<std::int32_t, Shape<dyn>> k0({0});
  const auto [v0, g0] = value_and_grad(reduce_sum(nn::sparse_softmax_cross_entropy_with_logits(k0, z0)), z0);
  CHECK(v0 == 0.0f);
  CHECK(g0.dims() == dims_t<2>{0, 10});
  Tensor<float, Shape<dyn, 1000>> zd({3, 1000});
  CHECK_THROWS_AS(nn::sparse_softmax_cross_entropy_with_logits(kf, zd), shape_error);
}

TEST_CASE("the losses' gradients match finite differences") {
  Tensor<double, Shape<4, 6>> z = random_normal<double, Shape<4, 6>>(11, 0.0, 2.0);
  Tensor<double, Shape<4, 6>> t = eval(nn::softmax(random_normal<double, Shape<4, 6>>(12, 0.0, 1.0)));
  Tensor<double, Shape<4, 6>> zb = cast<double>(random_uniform<double, Shape<4, 6>>(13, 0.0, 1.0) > 0.5);
  Tensor<double, Shape<4>> w = random_uniform<double, Shape<4>>(14, 0.5, 1.5);
  Tensor<double, Shape<4, 6>> ww = random_normal<double, Shape<4, 6>>(15, 0.0, 1.0);
  Tensor<std::int32_t, Shape<4>> k;
  for (int i = 0; i < 4; ++i) k(i) = (5 * i + 2) % 6;

  gradcheck::check(reduce_sum(w * nn::sparse_softmax_cross_entropy_with_logits(k, z)), z);
  gradcheck::check(nn::compute_average_loss(nn::sparse_softmax_cross_entropy_with_logits(k, z)), z);
  gradcheck::check(reduce_sum(w * nn::softmax_cross_entropy_with_logits(t, z)), z, t);
  gradcheck::check(reduce_sum(ww * nn::sigmoid_cross_entropy_with_logits(zb, z)), z);
  gradcheck::check(reduce_sum(ww * nn::log_softmax(z)), z);
  gradcheck::check(reduce_sum(ww * nn::softmax<0>(z)), z);
  gradcheck::check(nn::l2_loss(z), z);
}

TEST_CASE("l2_loss and compute_average_loss follow TensorFlow") {
  Tensor<float, Shape<3>> v;
  v(0) = 1; v(1) = -2; v(2) = 3;
  CHECK(eval(nn::l2_loss(v))() == 7.0f);
  CHECK(eval(nn::compute_average_loss(v))() == Approx(2.0f / 3));
  CHECK(eval(nn::compute_average_loss(v, 4))() == 0.5f);  // the global batch of several replicas
  CHECK_THROWS_AS(nn::compute_average_loss(v, 0), value_error);
  // sigmoid cross-entropy stays finite for large logits.
  Tensor<float, Shape<2>> big, lab;
  big(0) = 1000; big(1) = -1000; lab(0) = 0; lab(1) = 1;
  const auto l = eval(nn::sigmoid_cross_entropy_with_logits(lab, big));
  CHECK(l(0) == 1000.0f);
  CHECK(l(1) == 1000.0f);
}

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

/// Checks ctflow's max and average pooling of x ([n, h, w, c], k x k windows, stride s, SAME)
/// and both gradients against the loops above (the averages summed in the kernel's order: each
/// column of the window, then across the columns).
template <std::size_t K, std::size_t S, class T, class SX> void check(const Tensor<T, SX>& x) {
  const auto d = x.dims();
  const std::size_t n = d[0], h = d[1], w = d[2], c = d[3];
  const std::size_t oh = (h + S - 1) / S, ow = (w + S - 1) / S;
  const std::size_t pad_h = std::max<std::ptrdiff_t>(std::ptrdiff_t((oh - 1) * S + K) - std::ptrdiff_t(h), 0);
  const std::size_t pad_w = std::max<std::ptrdiff_t>(std::ptrdiff_t((ow - 1) * S + K) - std::ptrdiff_t(w), 0);
  const auto mp = eval(nn::max_pool2d<K, K, S, S, nn::SAME>(x));
  const auto ap = eval(nn::avg_pool2d<K, K, S, S, nn::SAME>(x));
  // Weights 1/8, 2/8, ... 32 on the outputs, so that neighbouring windows' adjoints differ.
  Tensor<T, shape_t<decltype(mp)>> weights;
  for (std::size_t i = 0; i < weights.size(); ++i) weights.data()[i] = T(float(i % 256 + 1) / 8);
  // value_and_grad's from the positions its forward pass saved, grad's from x and y.
  const auto mg = std::get<1>(value_and_grad(reduce_sum(nn::max_pool2d<K, K, S, S, nn::SAME>(x) * weights), x));
  const auto mgs = eval(std::get<0>(grad(reduce_sum(nn::max_pool2d<K, K, S, S, nn::SAME>(x) * weights), x)));
  const auto ag = std::get<1>(value_and_grad(reduce_sum(nn::avg_pool2d<K, K, S, S, nn::SAME>(x) * weights), x));
  // value_and_grad's forward pass, which also saves each window's position of its maximum (and
  // reads each window straight from x for it).
  auto node = nn::max_pool2d<K, K, S, S, nn::SAME>(x);
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
  INFO("window " << K << ", stride " << S << ", input " << format_dims(d) << ", " << sizeof(T) << "-byte elements");
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
  Tensor<bfloat16, Shape<2, 9, 11, 3>> xb;
  for (std::size_t i = 0; i < xb.size(); ++i) xb.data()[i] = bfloat16(float(int((i * 29) % 11) - 5));
  pool_reference::check<3, 2>(xb);
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

namespace {
template <class T, class S> Tensor<T, S> values(std::initializer_list<T> v) {
  Tensor<T, S> t;
  REQUIRE(v.size() == t.size());
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}
}  // namespace

TEST_CASE("Keras's cross-entropies on probabilities: clipping, normalisation, gradients") {
  const auto p = values<float, Shape<2, 3>>({0.2f, 0.3f, 0.5f, 0.0f, 1.0f, 0.0f});
  const auto onehot = values<float, Shape<2, 3>>({0.f, 0.f, 1.f, 1.f, 0.f, 0.f});
  const auto cce = eval(nn::categorical_crossentropy(onehot, p));
  CHECK(cce(0) == Approx(-std::log(0.5f)));
  CHECK(cce(1) == Approx(-std::log(1e-7f)).epsilon(1e-5));  // clipped, not infinite
  // Unnormalised predictions are scaled to sum to one first.
  const auto scaled = values<float, Shape<1, 3>>({0.4f, 0.6f, 1.0f}), oh1 = values<float, Shape<1, 3>>({0.f, 0.f, 1.f});
  CHECK(eval(nn::categorical_crossentropy(oh1, scaled))(0) == Approx(-std::log(0.5f)));
  const auto labels = values<std::int32_t, Shape<2>>({2, 0});
  const auto scce = eval(nn::sparse_categorical_crossentropy(labels, p));
  CHECK(scce(0) == Approx(cce(0)));
  // Keras: log of the clipped probabilities, renormalised by the softmax: -log(1e-7) + log(sum).
  CHECK(scce(1) == Approx(-std::log(1e-7f) + std::log(1.0f - 1e-7f + 2e-7f)).epsilon(1e-5));
  const auto bp = values<float, Shape<2, 2>>({0.9f, 0.2f, 0.0f, 1.0f}), bt = values<float, Shape<2, 2>>({1.f, 0.f, 1.f, 0.f});
  const auto bce = eval(nn::binary_crossentropy(bt, bp));
  CHECK(bce(0) == Approx(-(std::log(0.9f + 1e-7f) + std::log(0.8f + 1e-7f)) / 2));
  // Certain and wrong: both probabilities clipped, a large finite loss.
  CHECK(bce(1) == Approx(-(std::log(1e-7f + 1e-7f) + std::log(1.0f - (1.0f - 1e-7f) + 1e-7f)) / 2).epsilon(1e-4));
  Tensor<double, Shape<3, 4>> q = random_uniform<double, Shape<3, 4>>(71, 0.1, 0.9), t = random_uniform<double, Shape<3, 4>>(72, 0.0, 1.0);
  const auto l = values<std::int64_t, Shape<3>>({3, 0, 1});
  gradcheck::check(reduce_sum(nn::categorical_crossentropy(t, q)), q, t);
  gradcheck::check(reduce_sum(nn::sparse_categorical_crossentropy(l, q)), q);
  gradcheck::check(reduce_sum(nn::binary_crossentropy(t, q)), q, t);
}
