#pragma once
/// @file
/// @brief keras.optimizers: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, Nadam, Lion
/// and Ftrl with Keras 3's update formulas and defaults, and what every Keras optimizer offers:
/// clipping (`clipnorm`, `clipvalue`, `global_clipnorm`), decoupled weight decay, a moving
/// average of the weights (`use_ema`), gradient accumulation and learning-rate schedules.
///
///     keras::optimizers::Adam opt{.learning_rate = 1e-3, .clipnorm = 1.0};
///     model(x, true);
///     model.backward(dloss_dy);
///     opt.apply_gradients(model.gradients(), model.trainable_variables());
///
/// An optimizer is built on the variables of its first apply (its slots: Adam's momentum and
/// velocity for each, made then) and then takes the gradients of the same variables. Each update
/// is ctflow expressions over the variables' views, evaluated by their device: one fused loop over
/// a variable and its slots (assign_together), no heap allocation once built.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/ctflow.hpp>
#include <ctflow/keras/config_dict.hpp>
#include <ctflow/keras/optimizers/schedules.hpp>
#include <ctflow/keras/variables.hpp>

namespace ctflow::keras::optimizers {

namespace detail {

/// What an optimizer keeps between applies: its count of applies (Keras's `_iterations`), the
/// variables it was built for (their memory), and per variable its slots, then its gradient
/// accumulator (gradient_accumulation_steps) and its moving average (use_ema), as flat tensors of
/// the variables' dtype; Nadam's running product of momentum factors.
struct optimizer_state {
  std::int64_t applies = 0;
  bool built = false;
  std::vector<const void*> keys;
  std::vector<std::string> paths;
  std::vector<std::vector<std::size_t>> shapes;
  std::size_t slots = 0, per_variable = 0;
  std::size_t interleaved = 0;  // the leading slots Keras lists variable by variable (the others: slot by slot)
  bool accumulates = false, averages = false;
  std::vector<Tensor<float, Shape<dyn>>> float_tensors;
  std::vector<Tensor<double, Shape<dyn>>> double_tensors;
  double u_product = 1;
  std::vector<std::string> no_decay;  // exclude_from_weight_decay's names
  template <class T> std::vector<Tensor<T, Shape<dyn>>>& tensors() {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "ctflow::keras::optimizers: variables of float32 or float64");
    if constexpr (std::is_same_v<T, float>) return float_tensors;
    else return double_tensors;
  }
};

template <class T> using flat_view = TensorView<T, Shape<dyn>>;

/// Whether weight decay applies to the variable at path (by its name within its layer).
inline bool decays(const optimizer_state& s, std::string_view path) {
  const std::string_view name = path.substr(path.rfind('/') + 1);
  for (const auto& n : s.no_decay)
    if (name.find(n) != std::string::npos) return false;
  return true;
}

/// Where slot k of rule o starts: its initial_slot_value(k), or 0.
template <class O> double initial_slot_value(const O& o, std::size_t k) {
  if constexpr (requires { o.initial_slot_value(k); }) return o.initial_slot_value(k);
  else return 0;
}

/// How many of rule o's leading slots Keras makes in one add_optimizer_variables call (listed
/// variable by variable); each later slot is a call of its own (listed for every variable in turn).
template <class O> std::size_t interleaved_slots(const O& o) {
  if constexpr (requires { o.interleaved_slots(); }) return std::min(o.interleaved_slots(), o.slot_count());
  else return o.slot_count();
}

/// Makes the state for vars (their slots from the rule's initial values).
template <class O, class Vars> void build(O& o, optimizer_state& s, const Vars& vars) {
  using T = typename std::remove_cvref_t<decltype(vars[0])>::value_type;
  s.slots = o.slot_count();
  s.interleaved = interleaved_slots(o);
  s.accumulates = o.gradient_accumulation_steps.value_or(0) > 0;
  s.averages = o.use_ema;
  s.per_variable = s.slots + s.accumulates + s.averages;
  auto& t = s.tensors<T>();
  t.clear();
  s.keys.clear();
  s.paths.clear();
  s.shapes.clear();
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const auto& v = vars[i];
    s.keys.push_back(v.values.data());
    s.paths.push_back(v.path);
    s.shapes.push_back(v.shape);
    for (std::size_t k = 0; k < s.slots; ++k) t.emplace_back(fill<T, Shape<dyn>>(T(initial_slot_value(o, k)), {v.size()}));
    if (s.accumulates) t.emplace_back(dims_t<1>{v.size()});
    if (s.averages) t.emplace_back(v.value());
  }
  s.built = true;
}

/// Keras's optimizer.apply(grads, trainable_variables): builds on the first call, checks the
/// variables, then accumulates, clips, decays and updates; moves the average; counts the apply.
template <class O, class Grads, class Vars> void apply(O& o, optimizer_state& s, const Grads& grads, const Vars& vars) {
  using T = typename std::remove_cvref_t<decltype(vars[0])>::value_type;
  const auto who = [] { return std::string("ctflow::keras::optimizers::") + O::class_name; };  // for errors only
  if (grads.size() != vars.size())
    throw value_error(who() + "::apply_gradients: " + std::to_string(grads.size()) + " gradients for " + std::to_string(vars.size()) + " variables");
  if (vars.size() == 0) return;
  if (!s.built) build(o, s, vars);
  if (s.keys.size() != vars.size())
    throw value_error(who() + ": built for " + std::to_string(s.keys.size()) + " variables, given " + std::to_string(vars.size()) +
                      " (an optimizer updates the variables of its first apply)");
  for (std::size_t i = 0; i < vars.size(); ++i) {
    if (vars[i].values.data() != s.keys[i])
      throw value_error(who() + ": variable " + std::to_string(i) + " (" + vars[i].path + ") is not the one it was built for (" + s.paths[i] + ")");
    if (grads[i].size() != vars[i].size())
      throw shape_error(who() + ": the gradient of " + vars[i].path + " has " + std::to_string(grads[i].size()) + " elements, the variable " +
                        std::to_string(vars[i].size()));
  }
  auto& t = s.tensors<T>();
  const std::int64_t steps = o.gradient_accumulation_steps.value_or(0);
  const std::int64_t iterations = steps > 0 ? s.applies / steps : s.applies;  // Keras's optimizer.iterations
  const double lr = o.learning_rate(s.applies);
  const bool update = steps <= 0 || (s.applies + 1) % steps == 0;
  const auto gradient = [&](std::size_t i) {
    if (!s.accumulates) return flat_view<const T>(grads[i].data(), {grads[i].size()});
    Tensor<T, Shape<dyn>>& acc = t[i * s.per_variable + s.slots];
    return flat_view<const T>(acc.data(), acc.dims());
  };
  if (s.accumulates) {
    // The accumulator becomes the gradient of an update; the apply after it starts it again.
    const bool restart = s.applies % steps == 0;
    for (std::size_t i = 0; i < vars.size(); ++i) {
      flat_view<T> acc(t[i * s.per_variable + s.slots].data(), {vars[i].size()});
      const flat_view<const T> g(grads[i].data(), {grads[i].size()});
      const T mean = T(1.0 / double(steps));
      if (update) {
        if (restart) acc = g * mean;
        else acc = (g + acc) * mean;
      } else {
        if (restart) acc = g;
        else acc = acc + g;
      }
    }
  }
  if (update) {
    // Clipping: a scale per variable (clipnorm) or for all (global_clipnorm), or a range.
    const double inf = std::numeric_limits<double>::infinity();
    const double clip = o.clipvalue.value_or(0) > 0 ? *o.clipvalue : inf;
    double global_scale = 1;
    if (!(o.clipnorm.value_or(0) > 0) && o.global_clipnorm.value_or(0) > 0) {
      double sum = 0;
      for (std::size_t i = 0; i < vars.size(); ++i) sum += double(item(reduce_sum(square(gradient(i)))));
      const double norm = std::sqrt(sum), c = *o.global_clipnorm;
      global_scale = c * std::min(1.0 / norm, 1.0 / c) + (norm - norm);
    }
    if (o.weight_decay.value_or(0) != 0) {
      const T factor = T(*o.weight_decay * lr);
      for (std::size_t i = 0; i < vars.size(); ++i)
        if (decays(s, vars[i].path)) vars[i].value() = vars[i].value() - vars[i].value() * factor;
    }
    if constexpr (requires { o.begin_update(s, iterations); }) o.begin_update(s, iterations);
    for (std::size_t i = 0; i < vars.size(); ++i) {
      const auto g = gradient(i);
      double scale = global_scale;
      if (o.clipnorm.value_or(0) > 0) {
        const double norm = std::sqrt(double(item(reduce_sum(square(g))))), c = *o.clipnorm;
        scale = norm > 0 ? c / std::max(norm, c) : 1.0;
      }
      flat_view<T> slot[4] = {flat_view<T>(nullptr, {0}), flat_view<T>(nullptr, {0}), flat_view<T>(nullptr, {0}), flat_view<T>(nullptr, {0})};
      for (std::size_t k = 0; k < s.slots; ++k) slot[k] = flat_view<T>(t[i * s.per_variable + k].data(), {vars[i].size()});
      o.update_step(vars[i].value(), clip_by_value(g * T(scale), T(-clip), T(clip)), slot, lr, iterations, s);
    }
  }
  if (s.averages) {
    const T m = T(iterations != 0 ? o.ema_momentum : 0.0);
    const std::int64_t every = o.ema_overwrite_frequency.value_or(0);
    for (std::size_t i = 0; i < vars.size(); ++i) {
      flat_view<T> average(t[(i + 1) * s.per_variable - 1].data(), {vars[i].size()});
      average = m * average + (T(1) - m) * vars[i].value();
      // (A view assigned a view of the same type would be rebound, not written: the average is read-only here.)
      if (every > 0 && (iterations + 1) % every == 0) vars[i].value() = flat_view<const T>(average.data(), average.dims());
    }
  }
  ++s.applies;
}

}  // namespace detail

/// What every Keras optimizer takes besides its own arguments, after them (in Keras's order),
/// and what it offers: apply_gradients, iterations(), the current learning rate, the moving
/// average's final values. `CLASS` is Keras's class name, `DECAY` the weight decay by default.
#define CTFLOW_KERAS_OPTIMIZER(CLASS, DECAY)                                                                           \
  std::optional<double> weight_decay = DECAY;                                                                          \
  std::optional<double> clipnorm{};                                                                                    \
  std::optional<double> clipvalue{};                                                                                   \
  std::optional<double> global_clipnorm{};                                                                             \
  bool use_ema = false;                                                                                                \
  double ema_momentum = 0.99;                                                                                          \
  std::optional<std::int64_t> ema_overwrite_frequency{};                                                               \
  std::optional<std::int64_t> gradient_accumulation_steps{};                                                           \
  std::string name = CLASS;                                                                                            \
  ::ctflow::keras::optimizers::detail::optimizer_state state_{};                                                       \
  static constexpr const char* class_name = CLASS;                                                                     \
  /** @brief Keras's apply_gradients(zip(grads, vars)) / apply(grads, vars): one update of vars                        \
      (a model's trainable_variables()) from grads (its gradients()). */                                               \
  template <class Grads, class Vars> void apply_gradients(const Grads& grads, const Vars& vars) {                      \
    ::ctflow::keras::optimizers::detail::apply(*this, state_, grads, vars);                                            \
  }                                                                                                                    \
  /** @brief Keras's optimizer.iterations: the updates made (applies, or accumulated groups of them). */               \
  std::int64_t iterations() const {                                                                                    \
    const std::int64_t s = gradient_accumulation_steps.value_or(0);                                                    \
    return s > 0 ? state_.applies / s : state_.applies;                                                                \
  }                                                                                                                    \
  /** @brief The learning rate of the next update (a schedule's value at the current step). */                        \
  double current_learning_rate() const { return learning_rate(state_.applies); }                                       \
  /** @brief Keras's exclude_from_weight_decay(var_names=...): no decay for variables whose name                       \
      contains one of names. */                                                                                        \
  void exclude_from_weight_decay(std::vector<std::string> names) { state_.no_decay = std::move(names); }               \
  /** @brief Keras's optimizer.build(var_list): makes the slots for vars now (before a restore). */                   \
  template <class Vars> void build(const Vars& vars) { ::ctflow::keras::optimizers::detail::build(*this, state_, vars); } \
  /** @brief Names the optimizer's state for train::Checkpoint: "iterations", "learning_rate" (a number               \
      rate's), "vars" (in Keras 3's order: the moving averages, the gradient accumulators, then each                   \
      variable's slots), "u_product"; build() it before restoring into it. */                                          \
  template <class V> void track(V& v) { ::ctflow::keras::optimizers::detail::track(*this, state_, v); }                 \
  /** @brief Keras's get_config: its arguments as Keras 3 writes them. */                                             \
  void get_config(::ctflow::keras::config_dict& c) const { ::ctflow::keras::optimizers::detail::get_config(*this, c); }  \
  /** @brief Keras's from_config: its arguments from a config Keras (or get_config) wrote. */                          \
  void from_config(const ::ctflow::keras::config_values& v) { ::ctflow::keras::optimizers::detail::from_config(*this, v); } \
  /** @brief Keras's finalize_variable_values: with use_ema, the variables take their moving average. */              \
  template <class Vars> void finalize_variable_values(const Vars& vars) {                                              \
    ::ctflow::keras::optimizers::detail::finalize(*this, state_, vars);                                                \
  }

namespace detail {
/// Optimizer o's Keras config: what every optimizer takes, then its own fields.
template <class O> void get_config(const O& o, config_dict& c) {
  const std::string rate = o.learning_rate.config();
  if (rate.empty())
    throw value_error("ctflow::keras::optimizers::" + std::string(O::class_name) + ": its learning rate is a user's schedule, which a Keras config cannot hold");
  c.set("name", o.name).raw("learning_rate", rate).set("weight_decay", o.weight_decay).set("clipnorm", o.clipnorm);
  c.set("global_clipnorm", o.global_clipnorm).set("clipvalue", o.clipvalue).set("use_ema", o.use_ema).set("ema_momentum", o.ema_momentum);
  c.set("ema_overwrite_frequency", o.ema_overwrite_frequency).set("loss_scale_factor", nullptr).set("gradient_accumulation_steps", o.gradient_accumulation_steps);
  ::ctflow::keras::detail::write_fields(o, c);
}
/// Sets optimizer o's arguments from a Keras config (absent keys keep their values).
template <class O> void from_config(O& o, const config_values& v) {
  v.get("name", o.name).get("weight_decay", o.weight_decay).get("clipnorm", o.clipnorm).get("global_clipnorm", o.global_clipnorm);
  v.get("clipvalue", o.clipvalue).get("use_ema", o.use_ema).get("ema_momentum", o.ema_momentum);
  v.get("ema_overwrite_frequency", o.ema_overwrite_frequency).get("gradient_accumulation_steps", o.gradient_accumulation_steps);
  if (const auto* rate = v.text("learning_rate"); rate && *rate != "null") o.learning_rate = learning_rate_t::from_config(*rate, v.what() + ".learning_rate");
  ::ctflow::keras::detail::read_fields(o, v);
}
/// With use_ema, sets vars (those the optimizer was built for) to their moving averages.
template <class O, class Vars> void finalize(O&, optimizer_state& s, const Vars& vars) {
  using T = typename std::remove_cvref_t<decltype(vars[0])>::value_type;
  if (!s.averages || !s.built) return;
  auto& t = s.tensors<T>();
  for (std::size_t i = 0; i < vars.size() && i < s.keys.size(); ++i)
    if (vars[i].values.data() == s.keys[i]) vars[i].value() = flat_view<const T>(t[(i + 1) * s.per_variable - 1].data(), {vars[i].size()});
}
/// The optimizer's variables in Keras 3's order (after its iteration count and learning rate):
/// each variable's moving average, then each one's gradient accumulator, then the rule's slots
/// (the interleaved ones variable by variable, then each other slot for every variable), with
/// their variables' shapes; as references a checkpoint or a .keras file reads and writes.
template <class T> std::vector<variable_ref<T>> keras_order(optimizer_state& s) {
  std::vector<variable_ref<T>> out;
  auto& t = s.tensors<T>();
  const std::size_t n = s.keys.size();
  const auto add = [&](std::size_t i, std::size_t k) {
    auto& x = t[i * s.per_variable + k];
    out.push_back({.path = s.paths[i], .shape = s.shapes[i], .values = {x.data(), x.size()}});
  };
  if (s.averages)
    for (std::size_t i = 0; i < n; ++i) add(i, s.per_variable - 1);
  if (s.accumulates)
    for (std::size_t i = 0; i < n; ++i) add(i, s.slots);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < s.interleaved; ++k) add(i, k);
  for (std::size_t k = s.interleaved; k < s.slots; ++k)
    for (std::size_t i = 0; i < n; ++i) add(i, k);
  return out;
}

/// Names optimizer o's state to a checkpoint's visitor v.
template <class O, class V> void track(O& o, optimizer_state& s, V& v) {
  v("iterations", s.applies);
  if (!o.learning_rate.is_schedule()) v("learning_rate", o.learning_rate);
  if (!s.built) return;
  if (!s.float_tensors.empty()) {
    auto vars = keras_order<float>(s);
    v("vars", vars);
  } else if (!s.double_tensors.empty()) {
    auto vars = keras_order<double>(s);
    v("vars", vars);
  }
  v("u_product", s.u_product);
}

/// Adam's update of w from g (an expression) with slots s: momentum, velocity (and with amsgrad
/// the largest velocity); AdamW's after its decay.
template <class W, class G, class S>
void adam_step(W w, const G& g, S* s, double lr, std::int64_t iterations, double beta_1, double beta_2, double epsilon, bool amsgrad) {
  using T = value_t<W>;
  const double t = double(iterations + 1);
  const T alpha = T(lr * std::sqrt(1 - std::pow(beta_2, t)) / (1 - std::pow(beta_1, t)));
  const auto m = s[0] + (g - s[0]) * T(1 - beta_1);
  const auto v = s[1] + (square(g) - s[1]) * T(1 - beta_2);
  if (amsgrad) assign_together(std::tie(s[0], s[1], s[2], w), m, v, maximum(s[2], s[1]), w - s[0] * alpha / (sqrt(s[2]) + T(epsilon)));
  else assign_together(std::tie(s[0], s[1], w), m, v, w - s[0] * alpha / (sqrt(s[1]) + T(epsilon)));
}

}  // namespace detail

/// @brief keras.optimizers.SGD: plain, with momentum, or Nesterov's.
struct SGD {
  learning_rate_t learning_rate = 0.01;
  double momentum = 0.0;
  bool nesterov = false;
  CTFLOW_KERAS_OPTIMIZER("SGD", std::nullopt)
  /// @brief Calls f(name, field) for each of its own Keras config fields.
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("momentum", self.momentum);
    f("nesterov", self.nesterov);
  }
  /// @brief Its slots: a momentum per variable when momentum is not 0.
  std::size_t slot_count() const { return momentum != 0 ? 1 : 0; }
  /// @brief One variable's update from its gradient g (an expression).
  template <class W, class G, class S> void update_step(W w, const G& g, S* s, double lr, std::int64_t, detail::optimizer_state&) const {
    using T = value_t<W>;
    if (momentum == 0) {
      w = w - g * T(lr);
      return;
    }
    const T mu = T(momentum);
    if (nesterov) assign_together(std::tie(s[0], w), s[0] * mu - g * T(lr), w + (s[0] * mu - g * T(lr)));
    else assign_together(std::tie(s[0], w), s[0] * mu - g * T(lr), w + s[0]);
  }
};

/// @brief keras.optimizers.Adam (with amsgrad: the largest velocity so far).
struct Adam {
  learning_rate_t learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  CTFLOW_KERAS_OPTIMIZER("Adam", std::nullopt)
  /// @brief Calls f(name, field) for each of its own Keras config fields.
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("beta_1", self.beta_1);
    f("beta_2", self.beta_2);
    f("epsilon", self.epsilon);
    f("amsgrad", self.amsgrad);
  }
  /// @brief Its slots: momentum and velocity (and the largest velocity, with amsgrad).
  std::size_t slot_count() const { return amsgrad ? 3 : 2; }
  /// @brief Keras makes momentum and velocity together, the largest velocity after them.
  std::size_t interleaved_slots() const { return 2; }
  /// @brief One variable's update from its gradient g (an expression).
  template <class W, class G, class S> void update_step(W w, const G& g, S* s, double lr, std::int64_t iterations, detail::optimizer_state&) const {
    detail::adam_step(w, g, s, lr, iterations, beta_1, beta_2, epsilon, amsgrad);
  }
};

/// @brief keras.optimizers.AdamW: Adam with decoupled weight decay (0.004 by default).
struct AdamW {
  learning_rate_t learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  CTFLOW_KERAS_OPTIMIZER("AdamW", 0.004)
  /// @brief Calls f(name, field) for each of its own Keras config fields.
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("beta_1", self.beta_1);
    f("beta_2", self.beta_2);
    f("epsilon", self.epsilon);
    f("amsgrad", self.amsgrad);
  }
  /// @brief Its slots: Adam's.
  std::size_t slot_count() const { return amsgrad ? 3 : 2; }
  /// @brief Keras makes momentum and velocity together, the largest velocity after them.
  std::size_t interleaved_slots() const { return 2; }
  /// @brief One variable's update: Adam's (the decay is applied before it).
  template <class W, class G, class S> void update_step(W w, const G& g, S* s, double lr, std::int64_t iterations, detail::optimizer_state&) const {
    detail::adam_step(w, g, s, lr, iterations, beta_1, beta_2, epsilon, amsgrad);
  }
};

/// @brief keras.optimizers.RMSprop (centered: the variance about the mean gradient; with
/// momentum).
struct RMSprop {
  learning_rate_t learning_rate = 0.001;
  double rho = 0.9;
  double momentum = 0.0;
  double epsilon = 1e-7;
  bool centered = false;
  CTFLOW_KERAS_OPTIMIZER("RMSprop", std::nullopt)
  /// @brief Calls f(name, field) for each of its own Keras config fields.
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("rho", self.rho);
    f("momentum", self.momentum);
    f("epsilon", self.epsilon);
    f("centered", self.centered);
  }
  /// @brief Its slots: velocity, then momentum (when not 0), then the mean gradient (centered).
  std::size_t slot_count() const { return 1 + (momentum > 0) + centered; }
  /// @brief Keras makes each of them in a call of its own.
  std::size_t interleaved_slots() const { return 1; }
  /// @brief One variable's update from its gradient g (an expression).
  template <class W, class G, class S> void update_step(W w, const G& g, S* s, double lr, std::int64_t, detail::optimizer_state&) const {
    using T = value_t<W>;
    const T r = T(rho), mu = T(momentum);
    auto& velocity = s[0];
    const auto new_velocity = r * velocity + T(1 - rho) * square(g);
    // In order: the velocity (and the average), then the momentum, then the variable.
    if (centered) {
      auto& average = s[momentum > 0 ? 2 : 1];
      const auto denominator = velocity - square(average) + T(epsilon);
      if (momentum > 0)
        assign_together(std::tie(velocity, average, s[1], w), new_velocity, r * average + T(1 - rho) * g, mu * s[1] + T(lr) * g / sqrt(denominator), w - s[1]);
      else
        assign_together(std::tie(velocity, average, w), new_velocity, r * average + T(1 - rho) * g, w - T(lr) * g / sqrt(denominator));
    } else {
      if (momentum > 0) assign_together(std::tie(velocity, s[1], w), new_velocity, mu * s[1] + T(lr) * g / sqrt(velocity + T(epsilon)), w - s[1]);
      else assign_together(std::tie(velocity, w), new_velocity, w - T(lr) * g / sqrt(velocity + T(epsilon)));
    }
  }
};

/// @brief keras.optimizers.Adagrad.
struct Adagrad {
  learning_rate_t learning_rate = 0.001;
  double initial_accumulator_value = 0.1;
  double epsilon = 1e-7;
  CTFLOW_KERAS_OPTIMIZER("Adagrad", std::nullopt)
  /// @brief Calls f(name, field) for each of its own Keras config fields.
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("initial_accumulator_value", self.initial_accumulator_value);
    f("epsilon", self.epsilon);
  }
  /// @brief Its slot: the sum of squared gradients, from initial_accumulator_value.
  std::size_t slot_count() const { return 1; }
  double initial_slot_value(std::size_t) const { return initial_accumulator_value; }
  /// @brief One variable's update from its gradient g (an expression).
  template <class W, class G, class S> void update_step(W w, const G& g, S* s, double lr, std::int64_t, detail::optimizer_state&) const {
    using T = value_t<W>;
    assign_together(std::tie(s[0], w), s[0] + square(g), w - T(lr) * g / sqrt(s[0] + T(epsilon)));
  }
};

/// @brief keras.optimizers.Adadelta.
struct Adadelta {
  learning_rate_t learning_rate = 0.001;
  double rho = 0.95;
  double epsilon = 1e-7;
  CTFLOW_KERAS_OPTIMIZER("Adadelta", std::nullopt)
  /// @brief Calls f(name, field) for each of its own Keras config fields.
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("rho", self.rho);
    f("epsilon", self.epsilon);
  }
  /// @brief Its slots: the running means of squared gradients and of squared updates.
  std::size_t slot_count() const { return 2; }
  /// @brief One variable's update from its gradient g (an expression).
  template <class W, class G, class S> void update_step(W w, const G& g, S* s, double lr, std::int64_t, detail::optimizer_state&) const {
    using T = value_t<W>;
    const T r = T(rho), e = T(epsilon);
    const auto delta = -(sqrt(s[1] + e) * g) / sqrt(s[0] + e);  // the new s[0], the old s[1]: the variable before s[1]
    assign_together(std::tie(s[0], w, s[1]), r * s[0] + T(1 - rho) * square(g), w + T(lr) * delta, r * s[1] + T(1 - rho) * square(delta));
  }
};

/// @brief keras.optimizers.Adamax (Adam with the infinity norm).
struct Adamax {
  learning_rate_t learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  CTFLOW_KERAS_OPTIMIZER("Adamax", std::nullopt)
  /// @brief Calls f(name, field) for each of its own Keras config fields.
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("beta_1", self.beta_1);
    f("beta_2", self.beta_2);
    f("epsilon", self.epsilon);
  }
  /// @brief Its slots: momentum and the exponentially weighted infinity norm.
  std::size_t slot_count() const { return 2; }
  /// @brief One variable's update from its gradient g (an expression).
  template <class W, class G, class S> void update_step(W w, const G& g, S* s, double lr, std::int64_t iterations, detail::optimizer_state&) const {
    using T = value_t<W>;
    const double power = std::pow(beta_1, double(iterations + 1));
    assign_together(std::tie(s[0], s[1], w), s[0] + (g - s[0]) * T(1 - beta_1), maximum(T(beta_2) * s[1], abs(g)),
                    w - T(lr) * s[0] / (T(1 - power) * (s[1] + T(epsilon))));
  }
};

/// @brief keras.optimizers.Nadam (Adam with Nesterov momentum).
struct Nadam {
  learning_rate_t learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  CTFLOW_KERAS_OPTIMIZER("Nadam", std::nullopt)
  /// @brief Calls f(name, field) for each of its own Keras config fields.
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("beta_1", self.beta_1);
    f("beta_2", self.beta_2);
    f("epsilon", self.epsilon);
  }
  /// @brief Its slots: momentum and velocity.
  std::size_t slot_count() const { return 2; }
  /// @brief The product of the momentum factors, once per update.
  void begin_update(detail::optimizer_state& s, std::int64_t iterations) const {
    s.u_product *= beta_1 * (1.0 - 0.5 * std::pow(0.96, double(iterations + 1)));
  }
  /// @brief One variable's update from its gradient g (an expression).
  template <class W, class G, class S> void update_step(W w, const G& g, S* s, double lr, std::int64_t iterations, detail::optimizer_state& st) const {
    using T = value_t<W>;
    const double t = double(iterations + 1);
    const double u_t = beta_1 * (1.0 - 0.5 * std::pow(0.96, t)), u_t1 = beta_1 * (1.0 - 0.5 * std::pow(0.96, t + 1));
    const double u_product = st.u_product, u_product_1 = u_product * u_t1;
    const auto m_hat = T(u_t1 / (1 - u_product_1)) * s[0] + T((1 - u_t) / (1 - u_product)) * g;  // of the new slots
    const auto v_hat = s[1] * T(1 / (1 - std::pow(beta_2, t)));
    assign_together(std::tie(s[0], s[1], w), s[0] + (g - s[0]) * T(1 - beta_1), s[1] + (square(g) - s[1]) * T(1 - beta_2),
                    w - m_hat * T(lr) / (sqrt(v_hat) + T(epsilon)));
  }
};

/// @brief keras.optimizers.Lion (the sign of an interpolated momentum).
struct Lion {
  learning_rate_t learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.99;
  CTFLOW_KERAS_OPTIMIZER("Lion", std::nullopt)
  /// @brief Calls f(name, field) for each of its own Keras config fields.
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("beta_1", self.beta_1);
    f("beta_2", self.beta_2);
  }
  /// @brief Its slot: momentum.
  std::size_t slot_count() const { return 1; }
  /// @brief One variable's update from its gradient g (an expression).
  template <class W, class G, class S> void update_step(W w, const G& g, S* s, double lr, std::int64_t, detail::optimizer_state&) const {
    using T = value_t<W>;
    assign_together(std::tie(w, s[0]), w - T(lr) * sign(s[0] * T(beta_1) + g * T(1 - beta_1)), s[0] * T(beta_2) + g * T(1 - beta_2));
  }
};

/// @brief keras.optimizers.Ftrl (follow the regularized leader).
struct Ftrl {
  learning_rate_t learning_rate = 0.001;
  double learning_rate_power = -0.5;
  double initial_accumulator_value = 0.1;
  double l1_regularization_strength = 0.0;
  double l2_regularization_strength = 0.0;
  double l2_shrinkage_regularization_strength = 0.0;
  double beta = 0.0;
  CTFLOW_KERAS_OPTIMIZER("Ftrl", std::nullopt)
  /// @brief Calls f(name, field) for each of its own Keras config fields.
  template <class Self, class F> static void each_field(Self& self, F&& f) {
    f("learning_rate_power", self.learning_rate_power);
    f("initial_accumulator_value", self.initial_accumulator_value);
    f("l1_regularization_strength", self.l1_regularization_strength);
    f("l2_regularization_strength", self.l2_regularization_strength);
    f("l2_shrinkage_regularization_strength", self.l2_shrinkage_regularization_strength);
    f("beta", self.beta);
  }
  /// @brief Its slots: the accumulator (from initial_accumulator_value) and the linear term.
  std::size_t slot_count() const { return 2; }
  double initial_slot_value(std::size_t k) const { return k == 0 ? initial_accumulator_value : 0.0; }
  /// @brief One variable's update from its gradient g (an expression).
  template <class W, class G, class S> void update_step(W w, const G& g, S* s, double lr, std::int64_t, detail::optimizer_state&) const {
    using T = value_t<W>;
    const T p = T(-learning_rate_power), l1 = T(l1_regularization_strength);
    const double l2 = l2_regularization_strength + beta / (2.0 * lr);
    auto& accum = s[0];
    auto& linear = s[1];
    const auto new_accum = accum + square(g);  // the old accumulator: it is written last
    assign_together(std::tie(linear, w, accum),
                    linear + (g + T(2 * l2_shrinkage_regularization_strength) * w) - (pow(new_accum, p) - pow(accum, p)) * T(1 / lr) * w,
                    (clip_by_value(linear, -l1, l1) - linear) / (pow(new_accum, p) * T(1 / lr) + T(2 * l2)), new_accum);
  }
};

}  // namespace ctflow::keras::optimizers
