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
