#pragma once
/// @file
/// @brief keras.optimizers.schedules: learning rates as functions of the optimizer's step, with
/// Keras 3's formulas and defaults, and the learning rate an optimizer takes (a number, one of
/// these, or any callable of the step: Keras's LearningRateSchedule subclass).
///
///     optimizers::SGD opt{.learning_rate = schedules::ExponentialDecay{.initial_learning_rate = 0.1,
///                                                                      .decay_steps = 1000, .decay_rate = 0.96}};

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <numbers>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/keras/config_dict.hpp>

namespace ctflow::keras::optimizers {

namespace schedules {

/// @brief initial_learning_rate * decay_rate ^ (step / decay_steps) (the exponent floored when
/// staircase).
struct ExponentialDecay {
  double initial_learning_rate = 0;
  double decay_steps = 1;
  double decay_rate = 1;
  bool staircase = false;
  double operator()(std::int64_t step) const {
    double p = double(step) / decay_steps;
    if (staircase) p = std::floor(p);
    return initial_learning_rate * std::pow(decay_rate, p);
  }
  /// @brief Its Keras class name.
  static constexpr const char* class_name = "ExponentialDecay";
  /// @brief Calls f(name, field) for each of its Keras config's fields (get_config, from_config).
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("initial_learning_rate", self.initial_learning_rate);
    f("decay_steps", self.decay_steps);
    f("decay_rate", self.decay_rate);
    f("staircase", self.staircase);
  }
};

/// @brief values[0] up to boundaries[0] (inclusive), values[i] in (boundaries[i-1],
/// boundaries[i]], the last value after the last boundary.
struct PiecewiseConstantDecay {
  std::vector<std::int64_t> boundaries;
  std::vector<double> values;
  double operator()(std::int64_t step) const {
    if (values.size() != boundaries.size() + 1)
      throw value_error("ctflow::keras::optimizers::schedules::PiecewiseConstantDecay: " + std::to_string(boundaries.size()) + " boundaries need " +
                        std::to_string(boundaries.size() + 1) + " values; " + std::to_string(values.size()) + " given");
    std::size_t i = 0;
    while (i < boundaries.size() && step > boundaries[i]) ++i;
    return values[i];
  }
  /// @brief Its Keras class name.
  static constexpr const char* class_name = "PiecewiseConstantDecay";
  /// @brief Calls f(name, field) for each of its Keras config's fields (get_config, from_config).
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("boundaries", self.boundaries);
    f("values", self.values);
  }
};

/// @brief (initial - end) * (1 - step / decay_steps) ^ power + end, the step held at decay_steps
/// (or, with cycle, decay_steps stretched to the next multiple past the step).
struct PolynomialDecay {
  double initial_learning_rate = 0;
  double decay_steps = 1;
  double end_learning_rate = 0.0001;
  double power = 1.0;
  bool cycle = false;
  double operator()(std::int64_t step) const {
    double s = double(step), d = decay_steps;
    if (cycle) d *= s == 0 ? 1.0 : std::ceil(s / decay_steps);
    else s = std::min(s, d);
    return (initial_learning_rate - end_learning_rate) * std::pow(1 - s / d, power) + end_learning_rate;
  }
  /// @brief Its Keras class name.
  static constexpr const char* class_name = "PolynomialDecay";
  /// @brief Calls f(name, field) for each of its Keras config's fields (get_config, from_config).
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("initial_learning_rate", self.initial_learning_rate);
    f("decay_steps", self.decay_steps);
    f("end_learning_rate", self.end_learning_rate);
    f("power", self.power);
    f("cycle", self.cycle);
  }
};

/// @brief initial_learning_rate / (1 + decay_rate * step / decay_steps) (the ratio floored when
/// staircase).
struct InverseTimeDecay {
  double initial_learning_rate = 0;
  double decay_steps = 1;
  double decay_rate = 0;
  bool staircase = false;
  double operator()(std::int64_t step) const {
    double p = double(step) / decay_steps;
    if (staircase) p = std::floor(p);
    return initial_learning_rate / (1 + decay_rate * p);
  }
  /// @brief Its Keras class name.
  static constexpr const char* class_name = "InverseTimeDecay";
  /// @brief Calls f(name, field) for each of its Keras config's fields (get_config, from_config).
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("initial_learning_rate", self.initial_learning_rate);
    f("decay_steps", self.decay_steps);
    f("decay_rate", self.decay_rate);
    f("staircase", self.staircase);
  }
};

/// @brief Cosine decay from the initial rate (or, with warmup_target, a linear warm-up over
/// warmup_steps from the initial rate to warmup_target, then the decay from it) down to
/// alpha times it over decay_steps.
struct CosineDecay {
  double initial_learning_rate = 0;
  double decay_steps = 1;
  double alpha = 0.0;
  std::optional<double> warmup_target{};
  double warmup_steps = 0;
  double operator()(std::int64_t step) const {
    const auto decay = [&](double s, double from) {
      const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * (s / decay_steps)));
      return from * ((1 - alpha) * cosine + alpha);
    };
    if (!warmup_target) return decay(std::min(double(step), decay_steps), initial_learning_rate);
    const double s = std::min(double(step), decay_steps + warmup_steps);
    if (s < warmup_steps) return (*warmup_target - initial_learning_rate) * (s / warmup_steps) + initial_learning_rate;
    return decay(s - warmup_steps, *warmup_target);
  }
  /// @brief Its Keras class name.
  static constexpr const char* class_name = "CosineDecay";
  /// @brief Calls f(name, field) for each of its Keras config's fields (get_config, from_config).
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("initial_learning_rate", self.initial_learning_rate);
    f("decay_steps", self.decay_steps);
    f("alpha", self.alpha);
    f("warmup_target", self.warmup_target);
    f("warmup_steps", self.warmup_steps);
  }
};

/// @brief Cosine decay with warm restarts (SGDR): periods of first_decay_steps, each t_mul times
/// the last, each starting at m_mul times the last's rate.
struct CosineDecayRestarts {
  double initial_learning_rate = 0;
  double first_decay_steps = 1;
  double t_mul = 2.0;
  double m_mul = 1.0;
  double alpha = 0.0;
  double operator()(std::int64_t step) const {
    double fraction = double(step) / first_decay_steps, restart = 0;
    if (t_mul == 1.0) {
      restart = std::floor(fraction);
      fraction -= restart;
    } else {
      restart = std::floor(std::log(1.0 - fraction * (1.0 - t_mul)) / std::log(t_mul));
      const double before = (1.0 - std::pow(t_mul, restart)) / (1.0 - t_mul);
      fraction = (fraction - before) / std::pow(t_mul, restart);
    }
    const double cosine = 0.5 * std::pow(m_mul, restart) * (1.0 + std::cos(std::numbers::pi * fraction));
    return initial_learning_rate * ((1 - alpha) * cosine + alpha);
  }
  /// @brief Its Keras class name.
  static constexpr const char* class_name = "CosineDecayRestarts";
  /// @brief Calls f(name, field) for each of its Keras config's fields (get_config, from_config).
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("initial_learning_rate", self.initial_learning_rate);
    f("first_decay_steps", self.first_decay_steps);
    f("t_mul", self.t_mul);
    f("m_mul", self.m_mul);
    f("alpha", self.alpha);
  }
};

}  // namespace schedules

/// @brief An optimizer's learning rate: a number (`.learning_rate = 1e-3`), a schedule, or any
/// callable of the step returning the rate (a user's schedule, Keras's LearningRateSchedule
/// subclass). Assigning a number replaces a schedule (Keras's `optimizer.learning_rate = 0.01`).
class learning_rate_t {
 public:
  learning_rate_t(double value = 0.001) : value_(value) {}
  template <class F> requires(std::is_invocable_r_v<double, const F&, std::int64_t> && !std::is_arithmetic_v<F>)
  learning_rate_t(F schedule) : schedule_(std::move(schedule)) {
    if constexpr (requires { F::class_name; }) {
      config_dict c;
      schedule_config_ = config_dict::object("keras.optimizers.schedules", F::class_name, ::ctflow::keras::detail::write_fields(schedule, c)).json();
    }
  }
  /// @brief Keras's serialized learning rate: the number, or the schedule's object; empty for a
  /// schedule that is a user's function, which Keras could not rebuild.
  std::string config() const { return schedule_ ? schedule_config_ : config_dict::number(value_); }
  /// @brief The rate a config holds (a number or one of the schedules above).
  static learning_rate_t from_config(const std::string& json, const std::string& what) {
    if (json.empty() || json.front() != '{') {
      double v = 0.001;
      config_values(R"({"v": )" + json + "}", what).get("v", v);
      return v;
    }
    const config_values object(json, what);
    std::string cls;
    object.get("class_name", cls);
    const auto* inner = object.text("config");
    const config_values fields(inner ? *inner : "{}", what + "." + cls);
    const auto make = [&](auto s) {
      ::ctflow::keras::detail::read_fields(s, fields);
      return learning_rate_t(s);
    };
    if (cls == "ExponentialDecay") return make(schedules::ExponentialDecay{});
    if (cls == "PiecewiseConstantDecay") return make(schedules::PiecewiseConstantDecay{});
    if (cls == "PolynomialDecay") return make(schedules::PolynomialDecay{});
    if (cls == "InverseTimeDecay") return make(schedules::InverseTimeDecay{});
    if (cls == "CosineDecay") return make(schedules::CosineDecay{});
    if (cls == "CosineDecayRestarts") return make(schedules::CosineDecayRestarts{});
    throw value_error("ctflow::keras: " + what + ": the learning rate is a " + cls + ", which is not one of Keras's schedules");
  }
  /// @brief The rate at step (the optimizer's count of applied gradients).
  double operator()(std::int64_t step) const { return schedule_ ? schedule_(step) : value_; }
  /// @brief Whether the rate is a schedule.
  bool is_schedule() const { return bool(schedule_); }
  /// @brief Names a number rate for train::Checkpoint ("value"; a schedule has none: it is code).
  template <class V> void track(V& v) {
    if (!schedule_) v("value", value_);
  }

 private:
  double value_ = 0.001;
  std::function<double(std::int64_t)> schedule_;
  std::string schedule_config_;
};

}  // namespace ctflow::keras::optimizers
