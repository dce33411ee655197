// The losses against Keras 3: values, weighted, reduced, per sample, and gradients
// (tests/keras/generate_losses.py wrote data/losses.safetensors).
#include "keras_check.hpp"

#include <ctflow/keras/losses.hpp>

using namespace ctflow;
using keras_check::data_file;

namespace {

namespace losses = keras::losses;

const io::safetensors::File& loss_reference() {
  static const io::safetensors::File f(data_file("losses.safetensors"));
  return f;
}

template <class S, class T = float> Tensor<T, S> loss_tensor(const std::string& key, const dims_t<std::size_t(S::rank)>& d) {
  Tensor<T, S> t(d);
  loss_reference().read_into(key, t.data());
  return t;
}

/// The largest difference from Keras's values at key, relative to their magnitude (at least 1).
template <class T> double loss_difference(const T* got, std::size_t n, const std::string& key) {
  std::vector<float> expected(n);
  loss_reference().read_into(key, expected.data());
  double diff = 0, scale = 1;
  for (std::size_t k = 0; k < n; ++k) {
    diff = std::max(diff, std::abs(double(got[k]) - double(expected[k])));
    scale = std::max(scale, std::abs(double(expected[k])));
  }
  return diff / scale;
}

/// Loss class L (its reduction a template argument) made by make<R>() on (y_true, y_pred): its
/// value and gradient are Keras's; with Full, also every reduction and the weighted value and
/// gradient (the reductions and the weights are the same code for every loss: a few losses check
/// them, which keeps this file's build short).
template <bool Full, template <losses::Reduction> class L, class Make, class Y, class P>
void check_loss(const std::string& name, Make make, const Y& y_true, const P& y_pred) {
  INFO(name);
  const auto loss = make.template operator()<losses::Reduction::sum_over_batch_size>();
  const float value = loss(y_true, y_pred);
  CHECK(loss_difference(&value, 1, name + "/value") < 1e-6);
  const auto [v, g] = loss.value_and_gradient(y_true, y_pred);
  CHECK(v == Approx(value).epsilon(1e-6));
  CHECK(loss_difference(g.data(), g.size(), name + "/gradient") < 1e-6);
  if constexpr (Full) {
    const auto w = loss_tensor<Shape<dyn>>("sample_weight", {6});
    const float weighted = loss(y_true, y_pred, w);
    CHECK(loss_difference(&weighted, 1, name + "/weighted") < 1e-6);
    const float sum = make.template operator()<losses::Reduction::sum>()(y_true, y_pred);
    CHECK(loss_difference(&sum, 1, name + "/sum") < 1e-6);
    const auto none = make.template operator()<losses::Reduction::none>()(y_true, y_pred);
    CHECK(none.dims() == dims_t<1>{6});
    CHECK(loss_difference(none.data(), none.size(), name + "/none") < 1e-6);
    const auto [vw, gw] = loss.value_and_gradient(y_true, y_pred, w);
    CHECK(vw == Approx(weighted).epsilon(1e-6));
    CHECK(loss_difference(gw.data(), gw.size(), name + "/weighted_gradient") < 1e-6);
  }
}

}  // namespace

#define CTFLOW_MAKE(CLASS, ...) [&]<losses::Reduction R>() { return losses::CLASS<R>{__VA_ARGS__}; }

TEST_CASE("losses: values, sample weights, reductions and gradients are Keras 3's") {
  using M = Shape<dyn, 4>;
  const auto yr = loss_tensor<M>("regression/y_true", {6, 4}), pr = loss_tensor<M>("regression/y_pred", {6, 4});
  const auto ypos = loss_tensor<M>("positive/y_true", {6, 4}), ppos = loss_tensor<M>("positive/y_pred", {6, 4});
  const auto yb = loss_tensor<M>("binary/y_true", {6, 4}), logits_b = loss_tensor<M>("binary/logits", {6, 4});
  const auto probs_b = loss_tensor<M>("binary/probs", {6, 4});
  const auto yc = loss_tensor<M>("categorical/y_true", {6, 4}), logits_c = loss_tensor<M>("categorical/logits", {6, 4});
  const auto probs_c = loss_tensor<M>("categorical/probs", {6, 4}), ydist = loss_tensor<M>("distribution/y_true", {6, 4});
  const auto labels = loss_tensor<Shape<dyn>, std::int32_t>("sparse/labels", {6});
  check_loss<true, losses::MeanSquaredError>("mse", CTFLOW_MAKE(MeanSquaredError), yr, pr);
  check_loss<false, losses::MeanAbsoluteError>("mae", CTFLOW_MAKE(MeanAbsoluteError), yr, pr);
  check_loss<false, losses::MeanAbsolutePercentageError>("mape", CTFLOW_MAKE(MeanAbsolutePercentageError), yr, pr);
  check_loss<false, losses::MeanSquaredLogarithmicError>("msle", CTFLOW_MAKE(MeanSquaredLogarithmicError), ypos, ppos);
  check_loss<true, losses::Huber>("huber", CTFLOW_MAKE(Huber, .delta = 0.7), yr, pr);
  check_loss<false, losses::LogCosh>("log_cosh", CTFLOW_MAKE(LogCosh), yr, pr);
  check_loss<false, losses::KLDivergence>("kld", CTFLOW_MAKE(KLDivergence), ydist, probs_c);
  check_loss<false, losses::Poisson>("poisson", CTFLOW_MAKE(Poisson), ypos, ppos);
  check_loss<false, losses::Hinge>("hinge", CTFLOW_MAKE(Hinge), yb, logits_b);
  check_loss<false, losses::SquaredHinge>("squared_hinge", CTFLOW_MAKE(SquaredHinge), yb, logits_b);
  check_loss<false, losses::CategoricalHinge>("categorical_hinge", CTFLOW_MAKE(CategoricalHinge), yc, logits_c);
  check_loss<true, losses::CosineSimilarity>("cosine_similarity", CTFLOW_MAKE(CosineSimilarity), yr, pr);
  check_loss<false, losses::BinaryCrossentropy>("bce", CTFLOW_MAKE(BinaryCrossentropy), yb, probs_b);
  check_loss<true, losses::BinaryCrossentropy>("bce_logits_smoothing", CTFLOW_MAKE(BinaryCrossentropy, .from_logits = true, .label_smoothing = 0.2), yb, logits_b);
  check_loss<false, losses::CategoricalCrossentropy>("cce", CTFLOW_MAKE(CategoricalCrossentropy), yc, probs_c);
  check_loss<true, losses::CategoricalCrossentropy>("cce_logits_smoothing", CTFLOW_MAKE(CategoricalCrossentropy, .from_logits = true, .label_smoothing = 0.1), yc,
                                              logits_c);
  check_loss<false, losses::BinaryFocalCrossentropy>("bfce", CTFLOW_MAKE(BinaryFocalCrossentropy), yb, probs_b);
  check_loss<false, losses::BinaryFocalCrossentropy>(
      "bfce_logits_balanced",
      CTFLOW_MAKE(BinaryFocalCrossentropy, .apply_class_balancing = true, .alpha = 0.3, .gamma = 1.5, .from_logits = true, .label_smoothing = 0.1), yb,
      logits_b);
  check_loss<false, losses::CategoricalFocalCrossentropy>("cfce", CTFLOW_MAKE(CategoricalFocalCrossentropy), yc, probs_c);
  check_loss<false, losses::CategoricalFocalCrossentropy>(
      "cfce_logits_smoothing", CTFLOW_MAKE(CategoricalFocalCrossentropy, .alpha = 0.5, .gamma = 3.0, .from_logits = true, .label_smoothing = 0.1), yc,
      logits_c);
  check_loss<false, losses::SparseCategoricalCrossentropy>("scce", CTFLOW_MAKE(SparseCategoricalCrossentropy), labels, probs_c);
  check_loss<false, losses::SparseCategoricalCrossentropy>("scce_logits", CTFLOW_MAKE(SparseCategoricalCrossentropy, .from_logits = true), labels, logits_c);
  // Probabilities (their log evaluated, the adjoint carried back through it) with ignored labels
  // (a mask folded into the weights).
  check_loss<true, losses::SparseCategoricalCrossentropy>("scce_ignore", CTFLOW_MAKE(SparseCategoricalCrossentropy, .ignore_class = 3), labels, probs_c);
  check_loss<true, losses::SparseCategoricalCrossentropy>("scce_logits_ignore", CTFLOW_MAKE(SparseCategoricalCrossentropy, .from_logits = true, .ignore_class = 3),
                                                    labels, logits_c);
}

TEST_CASE("losses: the reduction deduced, an expression of predictions evaluated first, labels out of range named") {
  const Tensor<float, Shape<2, 3>> logits = random_uniform<float, Shape<2, 3>>(3, -1, 1);
  Tensor<std::int32_t, Shape<2>> labels;
  labels(0) = 2;
  const losses::SparseCategoricalCrossentropy loss{.from_logits = true};  // sum_over_batch_size, deduced
  static_assert(decltype(loss)::reduction == losses::Reduction::sum_over_batch_size);
  const float a = loss(labels, logits);
  const float b = loss(labels, logits * 1.f);  // an expression: evaluated, then the same loss
  CHECK(a == b);
  const float by_hand = float(item(nn::compute_average_loss(nn::sparse_softmax_cross_entropy_with_logits(labels, logits))));
  CHECK(a == Approx(by_hand).epsilon(1e-6));
  // Probabilities at and past the clip's bounds (0, 1e-7, 1 - 1e-7, 1): the adjoint carried back
  // through the evaluated log(clip(y_pred)) is the compiler's derivation of Keras's expression.
  Tensor<float, Shape<2, 3>> probs;
  const float at[6] = {0.f, 0.3f, 1e-7f, 1.f, 0.f, 1.f - 1e-7f};
  std::copy_n(at, 6, probs.data());
  for (const std::int32_t second : {0, 1, 2}) {
    labels(1) = second;
    const auto [v, g] = losses::SparseCategoricalCrossentropy{}.value_and_gradient(labels, probs);
    const auto [expected, eg] = value_and_grad(nn::compute_average_loss(nn::sparse_categorical_crossentropy(labels, probs)), probs);
    CHECK(v == Approx(expected).epsilon(1e-6));
    for (std::size_t k = 0; k < 6; ++k) CHECK(g.data()[k] == Approx(eg.data()[k]).epsilon(1e-6).margin(1e-6));
  }
  Tensor<std::int32_t, Shape<2>> bad;
  bad(0) = 2;
  bad(1) = 3;
  CHECK_THROWS_WITH(loss(bad, logits), Catch::Contains("label value of 3 which is outside the valid range of [0, 3)"));
  CHECK_THROWS_AS(loss(labels, logits, Tensor<float, Shape<dyn>>({3})), shape_error);
}
