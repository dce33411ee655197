#pragma once
/// @file
/// @brief What every Keras model offers, whatever its kind (Sequential, functional Model): its
/// variables (`trainable_variables()`, `non_trainable_variables()`), their values
/// (`get_weights()`, `set_weights()`), the gradients of the last backward pass, the regularizers'
/// penalties (`losses()`), Keras's weight files (`save_weights`, `load_weights`), and training
/// as Keras trains: `compile`, `fit`, `evaluate`, `predict` and the `*_on_batch` methods.

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/core/shape.hpp>
#include <ctflow/keras/layer_info.hpp>
#include <ctflow/keras/saving.hpp>
#include <ctflow/keras/training.hpp>

namespace ctflow::keras {

namespace detail {

/// The message of a model of class Cls whose Input takes dtype T and shape S, called on X.
template <class Cls, class T, class S, class X> constexpr auto model_input_message() {
  using ctflow::detail::concat;
  using ctflow::detail::fixed_string;
  using ctflow::detail::fixed_string_of;
  return concat(fixed_string("ctflow::keras::"), fixed_string_of<[] { return Cls::class_name; }>(), fixed_string(": its Input takes "),
                fixed_string_of<dtype_name<T>>(), fixed_string(" "), shape_string_v<S>, fixed_string("; the call gives "),
                fixed_string_of<dtype_name<value_t<X>>>(), fixed_string(" "), shape_string_v<shape_t<X>>);
}

/// Whether an expression X can be a model's input of dtype T, shape S on device D (its static
/// extents; dyn ones are checked at run time).
template <class T, class S, class D, class X> inline constexpr bool takes_model_input =
    std::is_same_v<value_t<X>, T> && same_device_v<device_t<X>, D> && S::rank == shape_t<X>::rank && []() {
      if constexpr (S::rank != shape_t<X>::rank) return false;
      else {
        for (int i = 0; i < S::rank; ++i) {
          const auto a = S::extents[std::size_t(i)], b = shape_t<X>::extents[std::size_t(i)];
          if (a != b && a != dyn && b != dyn) return false;
        }
        return true;
      }
    }();

/// Whether X is a tensor that owns its memory (contiguous: a model views it, with no copy).
template <class X> concept whole_tensor = is_leaf_v<std::remove_cvref_t<X>> && requires { requires !std::remove_cvref_t<X>::is_view; };

/// The run-time check of a model's input: the error names the model (its class and name) and its
/// input layer, and both shapes.
template <class S, std::size_t R>
void check_model_input(const char* cls, const std::string& model, const std::string& input, const dims_t<R>& d) {
  if (!matches_static<S>(d))
    throw shape_error(std::string("ctflow::keras::") + cls + " '" + model + "': its input " + input + " (InputLayer) takes " + format_dims(S::extents) +
                      "; the call gives " + format_dims(d));
}

}  // namespace detail

/// @brief The methods every model shares. Derived (the model, a CRTP argument) gives `layers()`
/// (its layer_info list), `name` and `trainable`; T is its weights' dtype, Device their device. They
/// read the model's table of variables (keras::detail::weight_table), built on first use. Where
/// the host does not read Device's memory (cuda), get_weights, set_weights and the weight files
/// copy the weights across.
template <class Derived, class T, class Device = cpu> class model_base {
 public:
  /// @brief Keras's trainable_variables: the weights that train (the model, their layers and the
  /// weight itself trainable), in Keras's order; a view of the model's table.
  variable_list<T, Device> trainable_variables() { return table().select(self().trainable, true); }
  /// @brief Keras's non_trainable_variables: the others (moving statistics, frozen layers).
  variable_list<T, Device> non_trainable_variables() { return table().select(self().trainable, false); }
  /// @brief Every variable (Keras's model.weights), trainable or not, in Keras's order.
  std::span<variable_ref<T, Device>> weights() { return table().all(); }

  /// @brief The gradients of the last backward pass, in trainable_variables()'s order (zeros for
  /// a weight the output did not reach): flat views of the memory the pass left them in, valid
  /// until the next backward pass.
  std::span<const TensorView<const T, Shape<dyn>, Device>> gradients() { return table().gradients(self().trainable); }

  /// @brief Keras's get_weights: every weight's value, in weights()'s order.
  std::vector<weight_value<T>> get_weights() {
    std::vector<weight_value<T>> out;
    for (const auto& w : table().all()) {
      out.push_back({w.shape, std::vector<T>(w.size())});
      ctflow::detail::copy_to_host<Device>(out.back().values.data(), w.values.data(), w.size() * sizeof(T));
    }
    return out;
  }
  /// @brief Keras's set_weights: as many values as weights, each of its weight's shape (checked
  /// for all before any weight changes).
  void set_weights(const std::vector<weight_value<T>>& values) {
    auto& all = table().all();
    for (std::size_t i = 0; i < all.size() && i < values.size(); ++i)
      if (values[i].shape != all[i].shape || values[i].values.size() != all[i].size())
        throw shape_error("ctflow::keras::set_weights: layer " + all[i].path.substr(0, all[i].path.rfind('/')) + ", weight " + all[i].name() + ": shape " + format_dims(values[i].shape) + " given for a weight of shape " +
                          format_dims(all[i].shape));
    if (values.size() != all.size())
      throw value_error("ctflow::keras::set_weights: the model has " + std::to_string(all.size()) + " weights, " + std::to_string(values.size()) +
                        " values were given");
    for (std::size_t i = 0; i < all.size(); ++i) ctflow::detail::copy_from_host<Device>(all[i].values.data(), values[i].values.data(), all[i].size() * sizeof(T));
  }

  /// @brief The weight regularizers' penalties (Keras's model.losses), one per regularized weight.
  std::vector<double> losses() {
    std::vector<double> out;
    for (const auto& w : table().all())
      if (w.regularizer) out.push_back((*w.regularizer)(w.value()));
    return out;
  }

  /// @brief Names the weights for train::Checkpoint (`train::Checkpoint ckpt{{"model", model}}`):
  /// each layer by its key in Keras 3's weight files (its class, numbered: "dense", "dense_1";
  /// fixed by the model's structure, not by its layers' names), each weight under it by its name
  /// ("model/dense_1/kernel", a nested model's "model/functional/dense/kernel"), trainable or not.
  template <class V> void track(V& v) {
    static_assert(host_device_v<Device>, "ctflow::train::Checkpoint: it reads a model's weights on the host; checkpoint a model on cpu or reference "
                                         "(keras::to<cpu>(model) copies a Sequential there)");
    detail::track_layers(self().layers(), v);
  }

  /// @brief Keras's save_weights / load_weights: `.weights.h5` (Keras 3's layout) or
  /// `.safetensors`; load_weights also reads legacy `.h5` files and `.keras` archives.
  void save_weights(const std::string& path) { keras::save_weights(self(), path); }
  void load_weights(const std::string& path, const load_options& options = {}) { keras::load_weights(self(), path, options); }

  /// @brief Keras's model.save("m.keras"): the whole model as a `.keras` archive Keras 3's
  /// load_model reads: its config (each layer's get_config), its weights and, once compiled, its
  /// compile_config and its optimizer's variables (`optimizer/vars/<i>`), written atomically.
  void save(const std::string& path) {
    if (!path.ends_with(".keras"))
      throw value_error("ctflow::keras::save: the file name must end in .keras (weights alone: save_weights with .weights.h5), got " + path);
    detail::saved_model m;
    m.class_name = Derived::class_name;
    m.name = self().name;
    m.trainable = self().trainable;
    m.dtype = dtype_name<T>();
    self().describe_inputs(m);
    const detail::model_layers<Derived> layers(self().layers());
    if constexpr (trains_here) {
      if (compiled_) {
        auto& c = compiled<>("save");
        m.optimizer_name = c.optimizer->name();
        m.optimizer_variables = c.optimizer->keras_variables(trainable_variables());
        m.compile_config = detail::compile_config(c, c.optimizer->config());
      }
    }
    detail::save_model_archive(path, m, layers.saved);
  }

  /// @brief The sum of the regularizers' penalties (what training adds to the loss).
  double regularization_loss() {
    double sum = 0;
    for (const auto& w : table().all())
      if (w.regularizer) sum += (*w.regularizer)(w.value());
    return sum;
  }

  /// @brief Keras's overridden train_step / test_step (keras::custom_steps): empty, compile's.
  custom_steps<Derived> steps;

  /// @brief Keras's model.compile(optimizer, loss, metrics): metrics by name ("accuracy" is
  /// resolved from the loss's labels and the output's shape, as Keras resolves it), then metric
  /// objects. The loss must take the model's output (a compile error naming both otherwise).
  template <class O, class L, class... M>
  void compile(O optimizer, L loss, const std::vector<std::string>& metrics = {}, M... metric_objects) {
    static_assert(trains_here, "ctflow::keras::compile: compile, fit, evaluate and predict train and run models on cpu; copy the model there "
                               "(keras::to<cpu>(model)) and back (keras::to<Device>) once trained");
    compiled_ = detail::make_compiled<T, out_shape<>>(std::move(optimizer), std::move(loss), metrics, std::move(metric_objects)...);
  }
  /// @brief The optimizer given to compile (Keras's model.optimizer): iterations, learning rate.
  compiled_optimizer<T>& optimizer() { return *compiled<>("optimizer()").optimizer; }

  /// @brief Keras's model.fit(x, y, ...): tensors of samples (rows) in any real dtype, converted to
  /// the model's batch by batch; x of the Input's shape (or without its channel axis of 1), y of
  /// the output's shape (or integer labels without its last axis, for a sparse loss). Returns the
  /// History.
  template <Expression X, Expression Y> callbacks::History fit(const X& x, const Y& y, const fit_options& options = {}) {
    check_samples<X>();
    return detail::fit_tensors(self(), compiled<>("fit"), array_ref(x), array_ref(y), options);
  }
  /// @brief model.fit(dataset, ...): a Dataset of (x, y) or (x, y, sample_weight) batches.
  template <detail::dataset D> callbacks::History fit(const D& dataset, const fit_options& options = {}) {
    return detail::fit_dataset(self(), compiled<>("fit"), dataset, options, static_cast<const std::nullptr_t*>(nullptr));
  }
  /// @brief model.fit(dataset, ..., validation_data=validation): validated on another Dataset.
  template <detail::dataset D, detail::dataset V> callbacks::History fit(const D& dataset, const fit_options& options, const V& validation) {
    return detail::fit_dataset(self(), compiled<>("fit"), dataset, options, &validation);
  }

  /// @brief Keras's model.evaluate(x, y, return_dict=True): the loss and the metrics by name.
  template <Expression X, Expression Y> callbacks::Logs evaluate(const X& x, const Y& y, const evaluate_options& options = {}) {
    check_samples<X>();
    auto& c = compiled<>("evaluate");
    detail::tensor_batches<Derived, compiled_type<>> batches(c.sparse, c.loss_name, array_ref(x), array_ref(y), options.sample_weight, detail::no_class_weight(), 0,
                                                           x.dims()[0], options.batch_size, detail::who(self()));
    batches.order(false, 0, 0);
    const std::int64_t steps = options.steps ? std::min(*options.steps, batches.steps()) : batches.steps();
    detail::batch_buffers<Derived, compiled_type<>> b;
    return detail::evaluate_batches(self(), c, options, steps, [&](auto&& f) { batches.each(0, steps, b, f); });
  }
  /// @brief model.evaluate(dataset): on a Dataset of (x, y[, sample_weight]) batches.
  template <detail::dataset D> callbacks::Logs evaluate(const D& dataset, const evaluate_options& options = {}) {
    auto& c = compiled<>("evaluate");
    detail::batch_buffers<Derived, compiled_type<>> b;
    std::optional<std::int64_t> steps = options.steps;
    if (dataset.cardinality() >= 0) steps = steps ? std::min(*steps, dataset.cardinality()) : dataset.cardinality();
    return detail::evaluate_batches(self(), c, options, steps, [&](auto&& f) { detail::dataset_batches(self(), c, dataset, b, 0, steps, f); });
  }

  /// @brief Keras's model.predict(x): the outputs of x's samples in batches, concatenated.
  template <Expression X> auto predict(const X& x, const predict_options& options = {}) {
    check_samples<X>();
    detail::tensor_batches<Derived, compiled_type<>> batches(false, "", array_ref(x), array_ref{}, array_ref{}, detail::no_class_weight(), 0, x.dims()[0],
                                                           options.batch_size, detail::who(self()));
    batches.order(false, 0, 0);
    const std::int64_t steps = options.steps ? std::min(*options.steps, batches.steps()) : batches.steps();
    detail::batch_buffers<Derived, compiled_type<>> b;
    return detail::predict_batches(self(), options, steps,
                                   [&](auto&& f) { batches.each(0, steps, b, [&](std::int64_t step, const auto& x, const auto&) { return f(step, x); }); });
  }
  /// @brief model.predict(dataset): a Dataset of x batches (or of (x, ...) tuples: x is used).
  template <detail::dataset D> auto predict(const D& dataset, const predict_options& options = {}) {
    detail::batch_buffers<Derived, compiled_type<>> b;
    std::optional<std::int64_t> steps = options.steps;
    if (dataset.cardinality() >= 0) steps = steps ? std::min(*steps, dataset.cardinality()) : dataset.cardinality();
    return detail::predict_batches(self(), options, steps, [&](auto&& f) {
      std::int64_t step = 0;
      for (const auto& e : dataset) {
        if (steps && step >= *steps) break;
        if (!f(step++, detail::dataset_input<Derived, compiled_type<>>(std::get<0>(detail::as_tuple(e)), b, detail::who(self())))) break;
      }
    });
  }

  /// @brief Keras's train_on_batch(x, y): one training step on the whole of x; the batch's loss
  /// and metrics.
  template <Expression X, Expression Y> callbacks::Logs train_on_batch(const X& x, const Y& y) { return on_batch<true>(x, y); }
  /// @brief Keras's test_on_batch(x, y): the loss and metrics of one batch.
  template <Expression X, Expression Y> callbacks::Logs test_on_batch(const X& x, const Y& y) { return on_batch<false>(x, y); }
  /// @brief Keras's predict_on_batch(x): the outputs of one batch.
  template <Expression X> auto predict_on_batch(const X& x) { return predict(x, {.batch_size = std::max<std::size_t>(1, x.dims()[0]), .verbose = 0}); }

 private:
  // compile / fit / evaluate / predict: their losses, metrics, optimizers and batches are the cpu
  // device's.
  static constexpr bool trains_here = std::is_same_v<Device, cpu>;
  Derived& self() { return static_cast<Derived&>(*this); }
  template <class D = Derived> using out_shape = shape_t<typename D::output_type>;
  template <class D = Derived> using compiled_type = detail::compiled<T, out_shape<D>>;
  template <class D = Derived> compiled_type<D>& compiled(const char* what) { return detail::compiled_of<compiled_type<D>>(self(), compiled_.get(), what); }
  /// fit, evaluate and predict take tensors of samples: x of the Input's rank (or one less).
  template <class X> static constexpr void check_samples() {
    using InS = shape_t<typename Derived::input_type>;
    static_assert(is_leaf_v<X>, "ctflow::keras: fit, evaluate and predict take tensors (or a Dataset); evaluate an expression into a tensor first");
    static_assert(rank_v<X> == InS::rank || (rank_v<X> + 1 == InS::rank && InS::extents[std::size_t(InS::rank) - 1] == 1),
                  "ctflow::keras: x must have the rank of the model's Input (or one less, when the Input's last extent is 1)");
  }
  template <bool Train, class X, class Y> callbacks::Logs on_batch(const X& x, const Y& y) {
    check_samples<X>();
    auto& c = compiled<>(Train ? "train_on_batch" : "test_on_batch");
    detail::tensor_batches<Derived, compiled_type<>> batches(c.sparse, c.loss_name, array_ref(x), array_ref(y), array_ref{}, detail::no_class_weight(), 0,
                                                           x.dims()[0], std::max<std::size_t>(1, x.dims()[0]), detail::who(self()));
    batches.order(false, 0, 0);
    detail::batch_buffers<Derived, compiled_type<>> b;
    const auto labels = batches.fill(0, b);
    detail::reset_metrics(self(), c);
    callbacks::Logs logs;
    if constexpr (Train) {
      Tensor<T, out_shape<>> dy;
      detail::fit_step(self(), c, *b.x_view, labels, dy, logs);
    } else {
      detail::evaluation_step(self(), c, *b.x_view, labels, logs);
    }
    return logs;
  }
  std::shared_ptr<detail::compiled_base> compiled_;

  detail::weight_table<T, Device>& table() {
    if (!table_.built()) table_.build(self().layers());
    return table_;
  }
  detail::weight_table<T, Device> table_;
};

namespace detail {

/// Loads the .keras archive at path into model: its weights (its config checked against the
/// model's layers first) and, unless O is void, its training state: the model compiled with the
/// archive's optimizer (of class O, its arguments from the config) and loss (of class L), its
/// metrics by name, and the optimizer's variables read.
template <class O, class L, class Model> void load_into(Model& model, const std::string& path, const load_options& options) {
  const model_layers<Model> layers(model.layers());
  if constexpr (std::is_void_v<O>) {
    load_model_archive(path, layers.saved, nullptr, options);
  } else {
    static_assert(!std::is_void_v<L>, "ctflow::keras::load_model: give the loss's class with the optimizer's");
    const std::string compile = archive_compile_config(path);
    if (compile.empty())
      throw value_error("ctflow::keras::load_model: " + path + " holds no compile_config (the model was saved uncompiled); load it without an optimizer and a loss");
    const config_values cc(compile, path + ": compile_config");
    const auto* optimizer = cc.text("optimizer");
    const auto* loss = cc.text("loss");
    if (!optimizer || *optimizer == "null" || !loss || *loss == "null")
      throw value_error("ctflow::keras::load_model: " + path + ": its compile_config names no optimizer or no loss");
    const config_values o(*optimizer, path + ": compile_config.optimizer");
    std::string cls;
    o.get("class_name", cls);
    if (cls != O::class_name) throw value_error("ctflow::keras::load_model: " + path + ": the optimizer is a " + cls + ", the model is loaded with a " + O::class_name);
    O opt{};
    if (const auto* c = o.text("config")) opt.from_config(config_values(*c, path + ": compile_config.optimizer.config"));
    std::vector<std::string> metrics;
    if (const auto* m = cc.text("metrics"); m && *m != "null") {
      const config_values list(*m, path + ": compile_config.metrics");
      for (std::size_t i = 0; list.text(std::to_string(i)); ++i) {
        std::string name;
        const auto& item = *list.text(std::to_string(i));
        if (!item.empty() && item.front() == '{') config_values(item, path + ": compile_config.metrics").get("class_name", name);
        else list.get(std::to_string(i), name);
        metrics.push_back(name);
      }
    }
    model.compile(std::move(opt), loss_from_config<L>(*loss, path + ": compile_config.loss"), metrics);
    auto variables = model.optimizer().keras_variables(model.trainable_variables());
    load_model_archive(path, layers.saved, &variables, options);
    model.optimizer().keras_variables_read();
  }
  layers.store();
}

}  // namespace detail

/// @brief Keras's keras.models.load_model("m.keras") for a model of type Model (built here, so
/// default-constructible: a Sequential, an application): the archive's config is checked against
/// Model's layers (class by class, with their input shapes) and its weights loaded. Given the
/// optimizer's class O and the loss's class L (`load_model<Net, optimizers::Adam,
/// losses::SparseCategoricalCrossentropy<>>`), the model comes compiled as the archive's
/// compile_config says (the optimizer's and loss's arguments, the metrics) with the optimizer's
/// state (its iterations, learning rate and slots), so that fit continues where the saved
/// training stopped. A file of another architecture or optimizer is an error naming the
/// difference; no weight changes unless all of them load.
template <class Model, class O = void, class L = void> std::unique_ptr<Model> load_model(const std::string& path, const load_options& options = {}) {
  auto model = std::make_unique<Model>();
  detail::load_into<O, L>(*model, path, options);
  return model;
}
/// @brief The same into a model already built (a functional Model, built by its code).
template <class O = void, class L = void, class Model> void load_model(Model& model, const std::string& path, const load_options& options = {}) {
  detail::load_into<O, L>(model, path, options);
}

}  // namespace ctflow::keras

// The instances of the keras code no model type enters, which the compiled part holds.
#include <ctflow/keras/detail/instances.hpp>
