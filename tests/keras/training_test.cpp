// What trains a Keras model, against Keras 3: the optimizers and learning-rate schedules (the
// same ten gradients applied to the same two variables give the variables Keras gave after each
// step; tests/keras/generate_optimizers.py wrote data/optimizers.safetensors) and the losses
// (values, weighted, reduced, per sample, and gradients; tests/keras/generate_losses.py wrote
// data/losses.safetensors) and the metrics (three batches each; generate_metrics.py).
#include "keras_check.hpp"

#include <ctflow/keras/losses.hpp>
#include <ctflow/keras/metrics.hpp>
#include <ctflow/keras/optimizers.hpp>

using namespace ctflow;
using keras_check::data;
namespace optimizers = keras::optimizers;
namespace schedules = keras::optimizers::schedules;

namespace {

const io::safetensors::File& keras_reference() {
  static const io::safetensors::File f(data("optimizers.safetensors"));
  return f;
}

/// A "kernel" [3, 4] and a "bias" [5] with Keras's initial values, as a model lists variables.
struct two_variables {
  Tensor<float, Shape<3, 4>> kernel;
  Tensor<float, Shape<5>> bias;
  std::vector<keras::variable_ref<float>> vars;
  two_variables() {
    keras_reference().read_into("init/kernel", kernel.data());
    keras_reference().read_into("init/bias", bias.data());
    vars.push_back({.path = "dense/kernel", .shape = {3, 4}, .values = {kernel.data(), kernel.size()}});
    vars.push_back({.path = "dense/bias", .shape = {5}, .values = {bias.data(), bias.size()}});
  }
};

/// The largest difference from Keras's values relative to their magnitude (at least 1).
template <class T> double difference(const T& t, const std::string& key) {
  std::vector<float> expected(t.size());
  keras_reference().read_into(key, expected.data());
  double diff = 0, scale = 1;
  for (std::size_t k = 0; k < expected.size(); ++k) {
    diff = std::max(diff, std::abs(double(t.data()[k]) - double(expected[k])));
    scale = std::max(scale, std::abs(double(expected[k])));
  }
  return diff / scale;
}

/// Applies Keras's ten gradients with opt; after each step the variables are Keras's.
template <class O> void check_case(O opt, const std::string& name) {
  INFO(name);
  two_variables v;
  Tensor<float, Shape<3, 4>> gk;
  Tensor<float, Shape<5>> gb;
  const std::vector<TensorView<const float, Shape<dyn>>> grads{{gk.data(), {12}}, {gb.data(), {5}}};
  for (int step = 0; step < 10; ++step) {
    INFO("step " << step);
    keras_reference().read_into("grad/" + std::to_string(step) + "/kernel", gk.data());
    keras_reference().read_into("grad/" + std::to_string(step) + "/bias", gb.data());
    opt.apply_gradients(grads, v.vars);
    CHECK(difference(v.kernel, name + "/" + std::to_string(step) + "/kernel") < 2e-6);
    CHECK(difference(v.bias, name + "/" + std::to_string(step) + "/bias") < 2e-6);
  }
}

}  // namespace

TEST_CASE("optimizers: each rule's ten updates are Keras 3's") {
  check_case(optimizers::SGD{}, "sgd");
  check_case(optimizers::SGD{.learning_rate = 0.05, .momentum = 0.9}, "sgd_momentum");
  check_case(optimizers::SGD{.learning_rate = 0.05, .momentum = 0.9, .nesterov = true}, "sgd_nesterov");
  check_case(optimizers::Adam{}, "adam");
  check_case(optimizers::Adam{.learning_rate = 0.01, .amsgrad = true}, "adam_amsgrad");
  check_case(optimizers::RMSprop{}, "rmsprop");
  check_case(optimizers::RMSprop{.learning_rate = 0.01, .momentum = 0.9, .centered = true}, "rmsprop_centered_momentum");
  check_case(optimizers::Adagrad{.learning_rate = 0.1}, "adagrad");
  check_case(optimizers::Adadelta{.learning_rate = 1.0}, "adadelta");
  check_case(optimizers::Adamax{.learning_rate = 0.01}, "adamax");
  check_case(optimizers::Nadam{.learning_rate = 0.01}, "nadam");
  check_case(optimizers::Lion{.learning_rate = 0.01}, "lion");
  check_case(optimizers::Ftrl{.learning_rate = 0.1,
                              .l1_regularization_strength = 0.01,
                              .l2_regularization_strength = 0.01,
                              .l2_shrinkage_regularization_strength = 0.01,
                              .beta = 0.1},
             "ftrl");
}

TEST_CASE("optimizers: weight decay, clipping, EMA, accumulation and schedules are Keras 3's") {
  check_case(optimizers::SGD{.learning_rate = 0.1, .weight_decay = 0.1}, "sgd_weight_decay");
  optimizers::AdamW adamw{.learning_rate = 0.01, .weight_decay = 0.1};
  adamw.exclude_from_weight_decay({"bias"});
  check_case(adamw, "adamw");
  check_case(optimizers::Adam{.learning_rate = 0.01, .clipnorm = 0.5}, "adam_clipnorm");
  check_case(optimizers::SGD{.learning_rate = 0.1, .clipvalue = 0.3}, "sgd_clipvalue");
  check_case(optimizers::Adam{.learning_rate = 0.01, .global_clipnorm = 0.5}, "adam_global_clipnorm");
  check_case(optimizers::Adam{.learning_rate = 0.01, .use_ema = true, .ema_momentum = 0.9, .ema_overwrite_frequency = 3}, "adam_ema");
  check_case(optimizers::Adam{.learning_rate = 0.01, .gradient_accumulation_steps = 3}, "adam_accumulation");
  check_case(optimizers::SGD{.learning_rate = 0.05, .momentum = 0.9, .gradient_accumulation_steps = 2}, "sgd_momentum_accumulation");
  check_case(optimizers::SGD{.learning_rate = schedules::ExponentialDecay{.initial_learning_rate = 0.1, .decay_steps = 3, .decay_rate = 0.5, .staircase = true}},
             "sgd_exponential_decay");
  check_case(optimizers::AdamW{.learning_rate =
                                   schedules::CosineDecay{.initial_learning_rate = 1e-2, .decay_steps = 8, .alpha = 0.1, .warmup_target = 2e-2, .warmup_steps = 2}},
             "adamw_cosine_warmup");
}

TEST_CASE("schedules: each learning rate over steps 0..20 is Keras 3's") {
  const auto check = [](const auto& schedule, const std::string& name) {
    INFO(name);
    std::vector<float> expected(21);
    keras_reference().read_into("schedule/" + name, expected.data());
    for (std::int64_t step = 0; step <= 20; ++step) CHECK(schedule(step) == Approx(expected[std::size_t(step)]).epsilon(1e-5));
  };
  check(schedules::ExponentialDecay{.initial_learning_rate = 0.1, .decay_steps = 3, .decay_rate = 0.5}, "exponential");
  check(schedules::ExponentialDecay{.initial_learning_rate = 0.1, .decay_steps = 3, .decay_rate = 0.5, .staircase = true}, "exponential_staircase");
  check(schedules::PiecewiseConstantDecay{.boundaries = {3, 6}, .values = {0.1, 0.05, 0.01}}, "piecewise");
  check(schedules::PolynomialDecay{.initial_learning_rate = 0.1, .decay_steps = 5, .end_learning_rate = 0.01, .power = 2}, "polynomial");
  check(schedules::PolynomialDecay{.initial_learning_rate = 0.1, .decay_steps = 5, .end_learning_rate = 0.01, .power = 2, .cycle = true}, "polynomial_cycle");
  check(schedules::InverseTimeDecay{.initial_learning_rate = 0.1, .decay_steps = 2, .decay_rate = 0.5}, "inverse_time");
  check(schedules::InverseTimeDecay{.initial_learning_rate = 0.1, .decay_steps = 2, .decay_rate = 0.5, .staircase = true}, "inverse_time_staircase");
  check(schedules::CosineDecay{.initial_learning_rate = 0.1, .decay_steps = 8, .alpha = 0.1}, "cosine");
  check(schedules::CosineDecay{.initial_learning_rate = 1e-2, .decay_steps = 8, .alpha = 0.1, .warmup_target = 2e-2, .warmup_steps = 4}, "cosine_warmup");
  check(schedules::CosineDecayRestarts{.initial_learning_rate = 0.1, .first_decay_steps = 3, .t_mul = 2, .m_mul = 0.5, .alpha = 0.1}, "cosine_restarts");
  check(schedules::CosineDecayRestarts{.initial_learning_rate = 0.1, .first_decay_steps = 3, .t_mul = 1, .m_mul = 1}, "cosine_restarts_constant");
}

TEST_CASE("optimizers: a user's schedule, iterations and the learning rate as Keras reports them") {
  two_variables v;
  const std::vector<float> start(v.bias.data(), v.bias.data() + 5);
  optimizers::SGD opt{.learning_rate = [](std::int64_t step) { return 0.1 / double(step + 1); }};
  const Tensor<float, Shape<12>> gk = ones<float, Shape<12>>();
  const Tensor<float, Shape<5>> gb = ones<float, Shape<5>>();
  const std::vector<TensorView<const float, Shape<dyn>>> grads{{gk.data(), {12}}, {gb.data(), {5}}};
  CHECK(opt.current_learning_rate() == Approx(0.1));
  opt.apply_gradients(grads, v.vars);
  opt.apply_gradients(grads, v.vars);
  CHECK(opt.iterations() == 2);
  CHECK(opt.current_learning_rate() == Approx(0.1 / 3));
  for (std::size_t k = 0; k < 5; ++k) CHECK(v.bias(k) == Approx(start[k] - 0.1f - 0.05f).margin(1e-6));
  // A number assigned to the rate replaces the schedule (Keras's optimizer.learning_rate = ...).
  opt.learning_rate = 0.5;
  CHECK(opt.current_learning_rate() == 0.5);
  optimizers::Adam counted{.gradient_accumulation_steps = 2};
  counted.apply_gradients(grads, v.vars);
  CHECK(counted.iterations() == 0);
  counted.apply_gradients(grads, v.vars);
  CHECK(counted.iterations() == 1);
}

TEST_CASE("optimizers: the variables of the first apply, with gradients of their sizes; a clear error otherwise") {
  two_variables v, other;
  const Tensor<float, Shape<12>> gk;
  const Tensor<float, Shape<5>> gb;
  const std::vector<TensorView<const float, Shape<dyn>>> grads{{gk.data(), {12}}, {gb.data(), {5}}};
  optimizers::Adam opt;
  CHECK_THROWS_WITH(opt.apply_gradients(std::vector<TensorView<const float, Shape<dyn>>>{grads[0]}, v.vars),
                    Catch::Contains("Adam::apply_gradients: 1 gradients for 2 variables"));
  CHECK_THROWS_WITH(opt.apply_gradients(std::vector<TensorView<const float, Shape<dyn>>>{grads[1], grads[0]}, v.vars),
                    Catch::Contains("the gradient of dense/kernel has 5 elements, the variable 12"));
  opt.apply_gradients(grads, v.vars);
  CHECK_THROWS_WITH(opt.apply_gradients(grads, other.vars), Catch::Contains("variable 0 (dense/kernel) is not the one it was built for"));
  CHECK_THROWS_WITH(opt.apply_gradients(std::vector<TensorView<const float, Shape<dyn>>>{grads[0]}, std::vector<keras::variable_ref<float>>{v.vars[0]}),
                    Catch::Contains("built for 2 variables, given 1"));
  const schedules::PiecewiseConstantDecay short_of_values{.boundaries = {3, 6}, .values = {0.1}};
  CHECK_THROWS_WITH(short_of_values(0), Catch::Contains("2 boundaries need 3 values; 1 given"));
}

namespace {

namespace losses = keras::losses;

const io::safetensors::File& loss_reference() {
  static const io::safetensors::File f(data("losses.safetensors"));
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

/// Loss class L (its reduction a template argument) made by make<R>() on (y_true, y_pred):
/// every reduction, the weighted value and both gradients are Keras's.
template <template <losses::Reduction> class L, class Make, class Y, class P>
void check_loss(const std::string& name, Make make, const Y& y_true, const P& y_pred) {
  INFO(name);
  const auto w = loss_tensor<Shape<dyn>>("sample_weight", {6});
  const auto loss = make.template operator()<losses::Reduction::sum_over_batch_size>();
  const float value = loss(y_true, y_pred);
  CHECK(loss_difference(&value, 1, name + "/value") < 1e-6);
  const float weighted = loss(y_true, y_pred, w);
  CHECK(loss_difference(&weighted, 1, name + "/weighted") < 1e-6);
  const float sum = make.template operator()<losses::Reduction::sum>()(y_true, y_pred);
  CHECK(loss_difference(&sum, 1, name + "/sum") < 1e-6);
  const auto none = make.template operator()<losses::Reduction::none>()(y_true, y_pred);
  CHECK(none.dims() == dims_t<1>{6});
  CHECK(loss_difference(none.data(), none.size(), name + "/none") < 1e-6);
  const auto [v, g] = loss.value_and_gradient(y_true, y_pred);
  CHECK(v == Approx(value).epsilon(1e-6));
  CHECK(loss_difference(g.data(), g.size(), name + "/gradient") < 1e-6);
  const auto [vw, gw] = loss.value_and_gradient(y_true, y_pred, w);
  CHECK(vw == Approx(weighted).epsilon(1e-6));
  CHECK(loss_difference(gw.data(), gw.size(), name + "/weighted_gradient") < 1e-6);
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
  check_loss<losses::MeanSquaredError>("mse", CTFLOW_MAKE(MeanSquaredError), yr, pr);
  check_loss<losses::MeanAbsoluteError>("mae", CTFLOW_MAKE(MeanAbsoluteError), yr, pr);
  check_loss<losses::MeanAbsolutePercentageError>("mape", CTFLOW_MAKE(MeanAbsolutePercentageError), yr, pr);
  check_loss<losses::MeanSquaredLogarithmicError>("msle", CTFLOW_MAKE(MeanSquaredLogarithmicError), ypos, ppos);
  check_loss<losses::Huber>("huber", CTFLOW_MAKE(Huber, .delta = 0.7), yr, pr);
  check_loss<losses::LogCosh>("log_cosh", CTFLOW_MAKE(LogCosh), yr, pr);
  check_loss<losses::KLDivergence>("kld", CTFLOW_MAKE(KLDivergence), ydist, probs_c);
  check_loss<losses::Poisson>("poisson", CTFLOW_MAKE(Poisson), ypos, ppos);
  check_loss<losses::Hinge>("hinge", CTFLOW_MAKE(Hinge), yb, logits_b);
  check_loss<losses::SquaredHinge>("squared_hinge", CTFLOW_MAKE(SquaredHinge), yb, logits_b);
  check_loss<losses::CategoricalHinge>("categorical_hinge", CTFLOW_MAKE(CategoricalHinge), yc, logits_c);
  check_loss<losses::CosineSimilarity>("cosine_similarity", CTFLOW_MAKE(CosineSimilarity), yr, pr);
  check_loss<losses::BinaryCrossentropy>("bce", CTFLOW_MAKE(BinaryCrossentropy), yb, probs_b);
  check_loss<losses::BinaryCrossentropy>("bce_logits_smoothing", CTFLOW_MAKE(BinaryCrossentropy, .from_logits = true, .label_smoothing = 0.2), yb, logits_b);
  check_loss<losses::CategoricalCrossentropy>("cce", CTFLOW_MAKE(CategoricalCrossentropy), yc, probs_c);
  check_loss<losses::CategoricalCrossentropy>("cce_logits_smoothing", CTFLOW_MAKE(CategoricalCrossentropy, .from_logits = true, .label_smoothing = 0.1), yc,
                                              logits_c);
  check_loss<losses::BinaryFocalCrossentropy>("bfce", CTFLOW_MAKE(BinaryFocalCrossentropy), yb, probs_b);
  check_loss<losses::BinaryFocalCrossentropy>(
      "bfce_logits_balanced",
      CTFLOW_MAKE(BinaryFocalCrossentropy, .apply_class_balancing = true, .alpha = 0.3, .gamma = 1.5, .from_logits = true, .label_smoothing = 0.1), yb,
      logits_b);
  check_loss<losses::CategoricalFocalCrossentropy>("cfce", CTFLOW_MAKE(CategoricalFocalCrossentropy), yc, probs_c);
  check_loss<losses::CategoricalFocalCrossentropy>(
      "cfce_logits_smoothing", CTFLOW_MAKE(CategoricalFocalCrossentropy, .alpha = 0.5, .gamma = 3.0, .from_logits = true, .label_smoothing = 0.1), yc,
      logits_c);
  check_loss<losses::SparseCategoricalCrossentropy>("scce", CTFLOW_MAKE(SparseCategoricalCrossentropy), labels, probs_c);
  check_loss<losses::SparseCategoricalCrossentropy>("scce_logits", CTFLOW_MAKE(SparseCategoricalCrossentropy, .from_logits = true), labels, logits_c);
  check_loss<losses::SparseCategoricalCrossentropy>("scce_logits_ignore", CTFLOW_MAKE(SparseCategoricalCrossentropy, .from_logits = true, .ignore_class = 3),
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
  Tensor<std::int32_t, Shape<2>> bad;
  bad(0) = 2;
  bad(1) = 3;
  CHECK_THROWS_WITH(loss(bad, logits), Catch::Contains("label value of 3 which is outside the valid range of [0, 3)"));
  CHECK_THROWS_AS(loss(labels, logits, Tensor<float, Shape<dyn>>({3})), shape_error);
}

namespace {

const io::safetensors::File& metric_reference() {
  static const io::safetensors::File f(data("metrics.safetensors"));
  return f;
}
template <class S, class T = float> Tensor<T, S> metric_tensor(const std::string& key, const dims_t<std::size_t(S::rank)>& d) {
  Tensor<T, S> t(d);
  metric_reference().read_into(key, t.data());
  return t;
}
double metric_expected(const std::string& key) {
  float v = 0;
  metric_reference().read_into(key, &v);
  return v;
}

/// Updates metric m with three batches (update(m, batch) reads them) and checks its result after
/// each, then after reset_state(), against Keras's.
template <class M, class Update> void check_metric(const std::string& name, M m, Update update) {
  INFO(name);
  for (int b = 0; b < 3; ++b) {
    update(m, std::to_string(b));
    CHECK(m.result() == Approx(metric_expected(name + "/" + std::to_string(b))).epsilon(1e-6).margin(1e-7));
  }
  m.reset_state();
  CHECK(m.result() == metric_expected(name + "/reset"));
}

}  // namespace

TEST_CASE("metrics: update_state over batches, with sample weights, result and reset_state are Keras 3's") {
  namespace metrics = keras::metrics;
  using V = Shape<dyn>;
  using M = Shape<dyn, 4>;
  const auto values = [](const std::string& b) { return metric_tensor<V>(b + "/values", {6}); };
  const auto weights = [](const std::string& b) { return metric_tensor<V>(b + "/weights", {6}); };
  const auto labels = [](const std::string& b) { return metric_tensor<V, std::int32_t>(b + "/labels", {6}); };
  const auto m4 = [](const std::string& key) { return metric_tensor<M>(key, {6, 4}); };
  check_metric("mean", metrics::Mean{}, [&](auto& m, const std::string& b) { m.update_state(values(b), weights(b)); });
  check_metric("sum", metrics::Sum{}, [&](auto& m, const std::string& b) { m.update_state(values(b), weights(b)); });
  check_metric("accuracy", metrics::Accuracy{},
               [&](auto& m, const std::string& b) { m.update_state(labels(b), metric_tensor<V, std::int32_t>(b + "/predicted", {6})); });
  check_metric("binary_accuracy", metrics::BinaryAccuracy{.threshold = 0.4},
               [&](auto& m, const std::string& b) { m.update_state(m4(b + "/binary"), m4(b + "/probs"), weights(b)); });
  check_metric("categorical_accuracy", metrics::CategoricalAccuracy{},
               [&](auto& m, const std::string& b) { m.update_state(m4(b + "/one_hot"), m4(b + "/logits"), weights(b)); });
  check_metric("sparse_categorical_accuracy", metrics::SparseCategoricalAccuracy{},
               [&](auto& m, const std::string& b) { m.update_state(labels(b), m4(b + "/logits"), weights(b)); });
  check_metric("mse", metrics::MeanSquaredError{}, [&](auto& m, const std::string& b) { m.update_state(m4(b + "/y"), m4(b + "/p"), weights(b)); });
  check_metric("rmse", metrics::RootMeanSquaredError{}, [&](auto& m, const std::string& b) { m.update_state(m4(b + "/y"), m4(b + "/p"), weights(b)); });
  check_metric("mae", metrics::MeanAbsoluteError{}, [&](auto& m, const std::string& b) { m.update_state(m4(b + "/y"), m4(b + "/p"), weights(b)); });
  const auto huber = [](const auto& y, const auto& p) { return keras::losses::huber(y, p); };
  check_metric("wrapped_huber", metrics::MeanMetricWrapper{huber, "huber"},
               [&](auto& m, const std::string& b) { m.update_state(m4(b + "/y"), m4(b + "/p"), weights(b)); });
  metrics::Mean mean;
  CHECK_THROWS_WITH(mean.update_state(values("0"), Tensor<float, V>({5})), Catch::Contains("ctflow::keras::metrics::mean: sample_weight"));
}
