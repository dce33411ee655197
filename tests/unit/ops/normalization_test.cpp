// tf.nn's normalizations and dropout: the composed moments / batch_normalization /
// layer_normalization against their definitions, the fused batch-norm kernel against the composed
// form (values, statistics, gradients), dropout's mask; finite-difference gradients in double
// precision.
#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

#include "../autodiff/gradcheck.hpp"

using namespace ctflow;

TEST_CASE("moments, batch and layer normalization, dropout: values and gradients") {
  Tensor<double, Shape<4, 3, 2, 5>> x = random_normal<double, Shape<4, 3, 2, 5>>(51, 1.0, 2.0);
  Tensor<double, Shape<5>> gamma = random_uniform<double, Shape<5>>(52, 0.5, 1.5), beta = random_normal<double, Shape<5>>(53, 0.0, 1.0);

  // Batch normalization with the batch's moments: each channel ends with mean beta and
  // variance gamma^2 * var / (var + eps).
  auto [mean, variance] = nn::moments<0, 1, 2>(x);
  const auto y = eval(nn::batch_normalization(x, mean, variance, beta, gamma, 1e-3));
  const auto ym = eval(reduce_mean<0, 1, 2>(y));
  const auto v = eval(variance);
  for (std::size_t c = 0; c < 5; ++c) CHECK(ym(c) == Approx(beta(c)));
  const auto yv = eval(reduce_mean<0, 1, 2>(square(y - reduce_mean<0, 1, 2>(y, keepdims))));
  for (std::size_t c = 0; c < 5; ++c) CHECK(yv(c) == Approx(gamma(c) * gamma(c) * v(0, 0, 0, c) / (v(0, 0, 0, c) + 1e-3)));
  gradcheck::check(reduce_sum(sin(nn::batch_normalization(x, mean, variance, beta, gamma, 1e-3))), x, gamma, beta);

  // Layer normalization: each row of the last axis normalised on its own.
  const auto l = eval(nn::layer_normalization(x, gamma, beta));
  double row_mean = 0;
  for (std::size_t c = 0; c < 5; ++c) row_mean += (l(1, 2, 0, c) - beta(c)) / gamma(c);
  CHECK(row_mean / 5 == Approx(0.0).margin(1e-12));
  gradcheck::check(reduce_sum(sin(nn::layer_normalization(x, gamma, beta))), x, gamma, beta);

  // Dropout: the rate of zeros, the scaling of the kept, one mask per seed, gradients through
  // the kept elements only.
  Tensor<float, Shape<100000>> ones = fill<float, Shape<100000>>(1.0f);
  const auto d = eval(nn::dropout(ones, 0.3, 7));
  std::size_t zeros = 0;
  for (float e : d) {
    if (e == 0.0f) ++zeros;
    else CHECK(e == Approx(1.0f / 0.7f));
  }
  CHECK(double(zeros) / 100000 == Approx(0.3).margin(0.01));
  const auto again = eval(nn::dropout(ones, 0.3, 7));
  CHECK(std::equal(d.begin(), d.end(), again.begin()));
  const auto other = eval(nn::dropout(ones, 0.3, 8));
  CHECK_FALSE(std::equal(d.begin(), d.end(), other.begin()));
  CHECK_THROWS_AS(nn::dropout(ones, 1.0, 1), value_error);
  gradcheck::check(reduce_sum(square(nn::dropout(x, 0.4, 3))), x);
}

TEST_CASE("fused_batch_norm with moving averages: each evaluation moves them toward the batch's mean and biased variance") {
  Tensor<double, Shape<4, 3, 2, 5>> x = random_normal<double, Shape<4, 3, 2, 5>>(71, 2.0, 3.0);
  Tensor<double, Shape<5>> gamma = fill<double, Shape<5>>(1.0), beta = fill<double, Shape<5>>(0.0);
  Tensor<double, Shape<5>> moving_mean = fill<double, Shape<5>>(0.5), moving_variance = fill<double, Shape<5>>(2.0);
  auto y = std::get<0>(nn::fused_batch_norm(x, gamma, beta, 1e-3));
  y.k.moving = {moving_mean.data(), moving_variance.data(), 0.9};
  auto [mean, variance] = nn::moments<0, 1, 2>(x);
  const auto m = eval(mean), v = eval(variance);
  const auto plain = eval(std::get<0>(nn::fused_batch_norm(x, gamma, beta, 1e-3)));
  const auto once = eval(y);  // the same values as without the averages
  REQUIRE(std::equal(once.begin(), once.end(), plain.begin()));
  for (std::size_t c = 0; c < 5; ++c) {
    CHECK(moving_mean(c) == Approx(0.5 * 0.9 + m(0, 0, 0, c) * 0.1).epsilon(1e-12));
    CHECK(moving_variance(c) == Approx(2.0 * 0.9 + v(0, 0, 0, c) * 0.1).epsilon(1e-12));
  }
  // A second evaluation moves them again; an op without averages moves nothing.
  const double after_one = moving_mean(0);
  (void)eval(y);
  CHECK(moving_mean(0) == Approx(after_one * 0.9 + m(0, 0, 0, 0) * 0.1).epsilon(1e-12));
}

TEST_CASE("fused_batch_norm: one kernel equal to the composed form, TensorFlow's statistics, FusedBatchNormGrad") {
  Tensor<double, Shape<4, 3, 2, 5>> x = random_normal<double, Shape<4, 3, 2, 5>>(61, 100.0, 2.0);  // a large mean
  Tensor<double, Shape<5>> gamma = random_uniform<double, Shape<5>>(62, 0.5, 1.5), beta = random_normal<double, Shape<5>>(63, 0.0, 1.0);
  auto [y, batch_mean, batch_var] = nn::fused_batch_norm(x, gamma, beta, 1e-3);
  static_assert(std::is_same_v<shape_t<decltype(batch_mean)>, Shape<5>>);
  auto [mean, variance] = nn::moments<0, 1, 2>(x);
  const auto composed = eval(nn::batch_normalization(x, mean, variance, beta, gamma, 1e-3));
  const auto fused = eval(y);
  for (std::size_t i = 0; i < fused.size(); ++i) REQUIRE(fused.data()[i] == Approx(composed.data()[i]).epsilon(1e-10).margin(1e-10));
  const auto m = eval(batch_mean), v = eval(batch_var);
  const auto vb = eval(variance);
  for (std::size_t c = 0; c < 5; ++c) {
    CHECK(m(c) == Approx(eval(mean)(0, 0, 0, c)));
    CHECK(v(c) == Approx(vb(0, 0, 0, c) * 24.0 / 23.0));  // Bessel's correction over 24 values
  }
  // Gradients: finite differences, and the composed form's gradients.
  Tensor<double, Shape<4, 3, 2, 5>> w = random_normal<double, Shape<4, 3, 2, 5>>(64, 0.0, 1.0);
  gradcheck::check(reduce_sum(sin(std::get<0>(nn::fused_batch_norm(x, gamma, beta)) * w)), x, gamma, beta);
  const auto [fv, fx, fg, fb] = value_and_grad(reduce_sum(square(std::get<0>(nn::fused_batch_norm(x, gamma, beta))) * w), x, gamma, beta);
  auto [m2, v2] = nn::moments<0, 1, 2>(x);
  const auto [cv, cx, cg, cb] = value_and_grad(reduce_sum(square(nn::batch_normalization(x, m2, v2, beta, gamma, 1e-3)) * w), x, gamma, beta);
  CHECK(fv == Approx(cv));
  for (std::size_t i = 0; i < fx.size(); ++i) REQUIRE(fx.data()[i] == Approx(cx.data()[i]).epsilon(1e-8).margin(1e-9));
  for (std::size_t c = 0; c < 5; ++c) CHECK((fg(c) == Approx(cg(c)) && fb(c) == Approx(cb(c))));
  // NCHW, float32, many rows (several fixed chunks), dense [batch, features].
  Tensor<float, Shape<64, 8, 8, 16>> big = random_normal<float, Shape<64, 8, 8, 16>>(65, 3.0, 1.0);
  Tensor<float, Shape<16>> g16 = fill<float, Shape<16>>(1.f), b16 = fill<float, Shape<16>>(0.f);
  const auto yb = eval(std::get<0>(nn::fused_batch_norm(big, g16, b16)));
  const auto ym = eval(reduce_mean<0, 1, 2>(cast<double>(yb))), yv = eval(reduce_mean<0, 1, 2>(square(cast<double>(yb))));
  for (std::size_t c = 0; c < 16; ++c) CHECK((std::abs(ym(c)) < 1e-5 && yv(c) == Approx(1.0).epsilon(2e-3)));
  Tensor<float, Shape<64, 16, 8, 8>> bigc = nn::nhwc_to_nchw(big);
  const auto yc = eval(std::get<0>(nn::fused_batch_norm(bigc, g16, b16, 1e-3, nn::NCHW)));
  const auto yt = eval(nn::nhwc_to_nchw(yb));
  REQUIRE(std::equal(yc.begin(), yc.end(), yt.begin()));
  Tensor<double, Shape<6, 3>> dense = random_normal<double, Shape<6, 3>>(66, 0.0, 1.0);
  Tensor<double, Shape<3>> g3 = random_uniform<double, Shape<3>>(67, 0.5, 1.5), b3 = random_normal<double, Shape<3>>(68, 0.0, 1.0);
  gradcheck::check(reduce_sum(sin(std::get<0>(nn::fused_batch_norm(dense, g3, b3)))), dense, g3, b3);
  Tensor<double, Shape<dyn>> wrong({4});
  CHECK_THROWS_AS(nn::fused_batch_norm(dense, wrong, b3), shape_error);
}
