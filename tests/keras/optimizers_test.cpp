// The optimizers and learning-rate schedules against Keras 3: the same ten gradients applied to
// the same two variables give the variables Keras gave after each step
// (tests/keras/generate_optimizers.py wrote data/optimizers.safetensors).
#include "keras_check.hpp"

#include <ctflow/keras/optimizers.hpp>

using namespace ctflow;
using keras_check::data_file;
namespace optimizers = keras::optimizers;
namespace schedules = keras::optimizers::schedules;

namespace {

const io::safetensors::File& keras_reference() {
  static const io::safetensors::File f(data_file("optimizers.safetensors"));
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
