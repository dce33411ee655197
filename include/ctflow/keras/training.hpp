#pragma once
/// @file
/// @brief What `model.compile` keeps and what `fit`, `evaluate`, `predict` and the `*_on_batch`
/// methods run: the optimizer, the loss and the metrics over the model's output, the batches of
/// tensors (gathered and converted to the model's dtypes) or of a Dataset, the training step
/// (the model's forward pass, the loss's gradient, the model's backward pass, one optimizer
/// update), the callbacks and the progress bar. keras::model_base offers them as methods.

#include <algorithm>
#include <any>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <ctflow/ctflow.hpp>
#include <ctflow/io/checkpoint.hpp>
#include <ctflow/keras/callbacks.hpp>
#include <ctflow/keras/detail/weight_files.hpp>
#include <ctflow/keras/initializers.hpp>
#include <ctflow/keras/losses.hpp>
#include <ctflow/keras/metrics.hpp>
#include <ctflow/keras/optimizers.hpp>
#include <ctflow/keras/variables.hpp>

namespace ctflow::keras {

/// @brief Keras's verbose argument: 0 (silent), 1 (the progress bar), 2 (a line per epoch) or
/// "auto" (1).
struct Verbose {
  int level = 1;
  /// @brief 0, 1 or 2.
  Verbose(int l) : level(l) {  // NOLINT: implicit, as Keras's verbose=1 reads
    if (l < 0 || l > 2) throw value_error("ctflow::keras: verbose must be 0, 1, 2 or \"auto\"; got " + std::to_string(l));
  }
  /// @brief "auto" (1).
  Verbose(const char* s) : level(1) {  // NOLINT
    if (std::string(s) != "auto") throw value_error("ctflow::keras: verbose must be 0, 1, 2 or \"auto\"; got \"" + std::string(s) + "\"");
  }
};

/// @brief Any tensor (or tensor view) of host memory as fit, evaluate and predict read it: its
/// rows (the first axis) are gathered into batches and converted to the model's dtypes, as Keras
/// reads NumPy arrays. The tensor must outlive the call.
class array_ref {
 public:
  array_ref() = default;
  /// @brief A tensor of any real dtype (or bool).
  template <Expression X> requires(is_leaf_v<X>)
  array_ref(const X& x) : data_(x.data()), dims_(x.dims().begin(), x.dims().end()), code_(code_of<std::remove_const_t<value_t<X>>>()), dtype_(dtype_name<std::remove_const_t<value_t<X>>>()) {}  // NOLINT
  /// @brief Whether a tensor was given.
  explicit operator bool() const { return data_ != nullptr; }
  /// @brief Its extents.
  const std::vector<std::size_t>& dims() const { return dims_; }
  /// @brief Its rows (the first extent).
  std::size_t rows() const { return dims_.empty() ? 0 : dims_[0]; }
  /// @brief Its dtype's name.
  const char* dtype() const { return dtype_; }
  /// @brief The elements of one row.
  std::size_t row_size() const {
    std::size_t n = 1;
    for (std::size_t i = 1; i < dims_.size(); ++i) n *= dims_[i];
    return n;
  }
  /// @brief Copies rows rows[0..n) to out, converted to To.
  template <class To> void gather(const std::size_t* rows, std::size_t n, To* out) const {
    const std::size_t row = row_size();
    visit([&](const auto* src) {
      for (std::size_t i = 0; i < n; ++i) {
        const auto* from = src + rows[i] * row;
        To* to = out + i * row;
        for (std::size_t k = 0; k < row; ++k) to[k] = To(from[k]);
      }
    });
  }

 private:
  template <class T> static constexpr int code_of() {
    if constexpr (std::is_same_v<T, float>) return 0;
    else if constexpr (std::is_same_v<T, double>) return 1;
    else if constexpr (std::is_same_v<T, std::int32_t>) return 2;
    else if constexpr (std::is_same_v<T, std::int64_t>) return 3;
    else if constexpr (std::is_same_v<T, std::uint8_t>) return 4;
    else if constexpr (std::is_same_v<T, std::int8_t>) return 5;
    else if constexpr (std::is_same_v<T, std::int16_t>) return 6;
    else if constexpr (std::is_same_v<T, std::uint16_t>) return 7;
    else if constexpr (std::is_same_v<T, bool>) return 8;
    else {
      static_assert(sizeof(T) == 0, "ctflow::keras: fit, evaluate and predict read tensors of float32, float64, int8-64, uint8, uint16 or bool");
      return -1;
    }
  }
  template <class F> void visit(F&& f) const {
    switch (code_) {
      case 0: return f(static_cast<const float*>(data_));
      case 1: return f(static_cast<const double*>(data_));
      case 2: return f(static_cast<const std::int32_t*>(data_));
      case 3: return f(static_cast<const std::int64_t*>(data_));
      case 4: return f(static_cast<const std::uint8_t*>(data_));
      case 5: return f(static_cast<const std::int8_t*>(data_));
      case 6: return f(static_cast<const std::int16_t*>(data_));
      case 7: return f(static_cast<const std::uint16_t*>(data_));
      default: return f(static_cast<const bool*>(data_));
    }
  }
  const void* data_ = nullptr;
  std::vector<std::size_t> dims_{};
  int code_ = -1;
  const char* dtype_ = "";
};

/// @brief Keras's fit arguments (but x, y and the validation data): `model.fit(x, y, {.batch_size
/// = 64, .epochs = 3, .validation_split = 0.1})`.
struct fit_options {
  std::size_t batch_size = 32;
  std::int64_t epochs = 1;
  Verbose verbose = "auto";
  std::vector<callbacks::CallbackRef> callbacks{};
  /// @brief The fraction of the samples (the last ones, before shuffling) kept for validation.
  double validation_split = 0;
  /// @brief Validation tensors (x, y), as Keras's validation_data=(x_val, y_val).
  std::pair<array_ref, array_ref> validation_data{};
  bool shuffle = true;
  /// @brief Weights of the classes (sparse labels, or the argmax of one-hot ones).
  std::map<std::int64_t, double> class_weight{};
  /// @brief Per-sample weights (one per row of x).
  array_ref sample_weight{};
  std::int64_t initial_epoch = 0;
  std::optional<std::int64_t> steps_per_epoch{};
  std::optional<std::int64_t> validation_steps{};
  std::optional<std::size_t> validation_batch_size{};
  std::int64_t validation_freq = 1;
};

/// @brief Keras's evaluate arguments: `model.evaluate(x, y, {.batch_size = 64})` returns the loss
/// and the metrics by name (Keras's return_dict=True).
struct evaluate_options {
  std::size_t batch_size = 32;
  Verbose verbose = "auto";
  array_ref sample_weight{};
  std::optional<std::int64_t> steps{};
  std::vector<callbacks::CallbackRef> callbacks{};
};

/// @brief Keras's predict arguments.
struct predict_options {
  std::size_t batch_size = 32;
  Verbose verbose = "auto";
  std::optional<std::int64_t> steps{};
  std::vector<callbacks::CallbackRef> callbacks{};
};

/// @brief The optimizer a model was compiled with, whatever its class (Keras's model.optimizer):
/// its iterations and learning rate.
template <class T> class compiled_optimizer {
 public:
  virtual ~compiled_optimizer() = default;
  /// @brief Its class name ("Adam").
  virtual std::string name() const = 0;
  /// @brief Its updates so far.
  virtual std::int64_t iterations() const = 0;
  /// @brief The learning rate of the next update.
  virtual double learning_rate() const = 0;
  /// @brief Sets the learning rate to a number (optimizer.learning_rate = ...).
  virtual void set_learning_rate(double rate) = 0;
  /// @brief One update of vars from grads.
  virtual void apply_gradients(std::span<const TensorView<const T, Shape<dyn>>> grads, const variable_list<T>& vars) = 0;
  /// @brief Makes its slots for vars (before restoring a checkpoint).
  virtual void build(const variable_list<T>& vars) = 0;
  /// @brief With use_ema, the variables take their moving average (at the end of fit).
  virtual void finalize_variable_values(const variable_list<T>& vars) = 0;
  /// @brief Names its state for train::Checkpoint.
  virtual void track(train::detail::collector& c) = 0;
  /// @brief Keras's serialized optimizer (config.json's compile_config.optimizer, JSON).
  virtual std::string config() const = 0;
  /// @brief Its variables as a .keras archive holds them (optimizer/vars/<i>): the update count,
  /// a number learning rate, the slots in Keras's order, Nadam's product of momentum factors;
  /// built for vars first. Views of its state, valid until keras_variables_read().
  virtual std::vector<detail::saved_layer::weight> keras_variables(const variable_list<T>& vars) = 0;
  /// @brief Takes the scalars of keras_variables() back after a load wrote them.
  virtual void keras_variables_read() = 0;
};

namespace detail {

template <class T, class O> class optimizer_holder final : public compiled_optimizer<T> {
 public:
  explicit optimizer_holder(O o) : opt(std::move(o)) {}
  std::string name() const override { return opt.name; }
  std::int64_t iterations() const override { return opt.iterations(); }
  double learning_rate() const override { return opt.current_learning_rate(); }
  void set_learning_rate(double rate) override { opt.learning_rate = rate; }
  void apply_gradients(std::span<const TensorView<const T, Shape<dyn>>> grads, const variable_list<T>& vars) override { opt.apply_gradients(grads, vars); }
  void build(const variable_list<T>& vars) override { opt.build(vars); }
  void finalize_variable_values(const variable_list<T>& vars) override { opt.finalize_variable_values(vars); }
  void track(train::detail::collector& c) override { opt.track(c); }
  std::string config() const override {
    config_dict c;
    opt.get_config(c);
    return config_dict::object("keras.optimizers", O::class_name, c).json();
  }
  std::vector<saved_layer::weight> keras_variables(const variable_list<T>& vars) override {
    constexpr char dtype = std::is_same_v<T, float> ? 'f' : 'd';
    if (!opt.state_.built) opt.build(vars);
    std::vector<saved_layer::weight> out;
    out.push_back({"iteration", {}, &opt.state_.applies, 'l'});
    if (!opt.learning_rate.is_schedule()) {
      rate_ = T(opt.learning_rate(0));
      out.push_back({"learning_rate", {}, &rate_, dtype});
    }
    for (auto& v : optimizers::detail::keras_order<T>(opt.state_)) out.push_back({v.path, v.shape, v.values.data(), dtype});
    if constexpr (std::is_same_v<O, optimizers::Nadam>) {
      u_product_ = T(opt.state_.u_product);
      out.push_back({"u_product", {}, &u_product_, dtype});
    }
    return out;
  }
  void keras_variables_read() override {
    // The file's rate is the variable's dtype's; the config's (already set) is exact when they agree.
    if (!opt.learning_rate.is_schedule() && rate_ != T(opt.learning_rate(0))) opt.learning_rate = double(rate_);
    if constexpr (std::is_same_v<O, optimizers::Nadam>) opt.state_.u_product = double(u_product_);
  }
  O opt;

 private:
  T rate_{}, u_product_{};
};

/// Whether a loss or metric takes sparse labels (integers, the output's shape without its last axis).
template <class L> struct takes_sparse_labels : std::false_type {};
template <losses::Reduction R> struct takes_sparse_labels<losses::SparseCategoricalCrossentropy<R>> : std::true_type {};
template <> struct takes_sparse_labels<metrics::SparseCategoricalAccuracy> : std::true_type {};
template <> struct takes_sparse_labels<metrics::SparseTopKCategoricalAccuracy> : std::true_type {};

/// What compile keeps, for a model whose output is T of shape OutS.
struct compiled_base {
  virtual ~compiled_base() = default;
  /// compile's loss and metrics as Keras's compile_config holds them (JSON).
  std::string loss_config, metrics_config = "null";
};

/// Keras's compile_config of a compiled model, its optimizer serialized as `optimizer`.
inline std::string compile_config(const compiled_base& c, const std::string& optimizer) {
  return R"({"optimizer": )" + optimizer + R"(, "loss": )" + c.loss_config + R"(, "loss_weights": null, "metrics": )" + c.metrics_config +
         R"(, "weighted_metrics": null, "run_eagerly": false, "steps_per_execution": 1, "jit_compile": false})";
}

/// Calls f(key, field) for each of loss l's Keras config fields (its name, then those of its
/// class: from_logits, label_smoothing, ...).
template <class L, class F> void each_loss_field(L& l, F&& f) {
  f("name", l.name);
  if constexpr (requires { l.from_logits; }) f("from_logits", l.from_logits);
  if constexpr (requires { l.label_smoothing; }) f("label_smoothing", l.label_smoothing);
  if constexpr (requires { l.delta; }) f("delta", l.delta);
  if constexpr (requires { l.apply_class_balancing; }) f("apply_class_balancing", l.apply_class_balancing);
  if constexpr (requires { l.alpha; }) f("alpha", l.alpha);
  if constexpr (requires { l.gamma; }) f("gamma", l.gamma);
  if constexpr (requires { l.ignore_class; }) f("ignore_class", l.ignore_class);
}
inline const char* reduction_name(losses::Reduction r) {
  return r == losses::Reduction::sum ? "sum" : r == losses::Reduction::none ? "none" : "sum_over_batch_size";
}
/// Loss l serialized as Keras serializes it (a user's loss class: registered as "Custom>Class").
template <class L> std::string loss_config(const L& l) {
  if constexpr (!requires { L::class_name; }) return "null";  // a function: Keras cannot rebuild it
  else {
  config_dict c;
  each_loss_field(l, [&](const char* key, const auto& v) {
    c.set(key, v);
    if (std::string_view(key) == "name") c.set("reduction", reduction_name(L::reduction));
  });
  return config_dict::object("keras.losses", L::class_name, c).json();
  }
}
/// Loss L from Keras's serialized loss (its class and reduction checked).
template <class L> L loss_from_config(const std::string& json, const std::string& what) {
  const config_values object(json, what);
  std::string cls;
  object.get("class_name", cls);
  if (cls != L::class_name) throw value_error("ctflow::keras::load_model: " + what + " is a " + cls + ", the model is loaded with a " + L::class_name);
  const auto* inner = object.text("config");
  const config_values fields(inner ? *inner : "{}", what + "." + cls);
  std::string reduction = reduction_name(L::reduction);
  fields.get("reduction", reduction);
  if (reduction != reduction_name(L::reduction))
    throw value_error("ctflow::keras::load_model: " + what + " reduces by " + reduction + ", the model's " + L::class_name + " by " + reduction_name(L::reduction));
  L loss{};
  each_loss_field(loss, [&](const char* key, auto& v) { fields.get(key, v); });
  return loss;
}
template <class T, class OutS> struct compiled final : compiled_base {
  using output_view = TensorView<const T, OutS>;
  using sample_shape = losses::detail::per_sample_shape_t<OutS>;
  using dense_view = TensorView<const T, OutS>;
  using sparse_view = TensorView<const std::int32_t, sample_shape>;
  using weight_view = TensorView<const T, sample_shape>;
  /// A loss or metric over the labels of either kind.
  template <class R> struct over_labels {
    std::function<R(const dense_view&, const output_view&, const weight_view*, Tensor<T, OutS>*)> dense{};
    std::function<R(const sparse_view&, const output_view&, const weight_view*, Tensor<T, OutS>*)> sparse{};
  };
  struct metric_entry {
    std::string name;
    over_labels<void> update;
    std::function<double()> result;
    std::function<void()> reset;
  };
  bool sparse = false;
  std::string loss_name;
  std::unique_ptr<compiled_optimizer<T>> optimizer;
  over_labels<T> loss;
  std::vector<metric_entry> metrics;
  /// The mean of the batches' losses, weighted by their sizes (Keras's loss tracker).
  metrics::Mean loss_tracker{.name = "loss"};

  void reset_metrics() {
    loss_tracker.reset_state();
    for (auto& m : metrics) m.reset();
  }
  /// The loss and metrics into logs (in place: once logs holds their keys, no allocation).
  void results(callbacks::Logs& logs) const {
    logs["loss"] = loss_tracker.result();
    for (const auto& m : metrics) logs[m.name] = m.result();
  }
  callbacks::Logs results() const {
    callbacks::Logs logs;
    results(logs);
    return logs;
  }
};

}  // namespace detail

/// @brief One batch as a custom train_step or test_step sees it (Keras's `data`): the model's
/// input, the labels (of the output's shape, or integer labels when the loss is sparse) and the
/// sample weights, each null when the batch has none.
template <class Model> struct batch_data {
  /// @brief The compiled model's types of labels and weights.
  using compiled_type = detail::compiled<std::remove_const_t<value_t<typename Model::output_type>>, shape_t<typename Model::output_type>>;
  typename Model::input_type x;
  const typename compiled_type::dense_view* y = nullptr;
  const typename compiled_type::sparse_view* sparse_y = nullptr;
  const typename compiled_type::weight_view* sample_weight = nullptr;
};

/// @brief Keras's overridden Model.train_step and test_step: fit (and train_on_batch) calls
/// train_step for each batch instead of compile's step, evaluate and validation call test_step;
/// each returns the logs the progress bar and the callbacks show. reset_metrics resets the
/// steps' own metrics where fit and evaluate reset compile's (each epoch, each evaluation), as
/// Keras resets the metrics a model lists.
///
///     model.steps.train_step = [&](Net& m, const keras::batch_data<Net>& data) -> keras::callbacks::Logs {
///       const auto logits = m(data.x, true);
///       const auto [loss, dlogits] = loss_fn.value_and_gradient(*data.sparse_y, logits);
///       m.backward(dlogits);
///       m.optimizer().apply_gradients(m.gradients(), m.trainable_variables());
///       tracker.update_state(loss);
///       return {{"loss", tracker.result()}};
///     };
template <class Model> struct custom_steps {
  std::function<callbacks::Logs(Model&, const batch_data<Model>&)> train_step{}, test_step{};
  std::function<void()> reset_metrics{};
};

namespace detail {

/// A metric entry for metric m (labels of the loss's kind).
template <class C, bool Sparse, class M> typename C::metric_entry metric_entry_of(M m, std::string name) {
  auto held = std::make_shared<M>(std::move(m));
  typename C::metric_entry e{std::move(name), {}, [held] { return held->result(); }, [held] { held->reset_state(); }};
  auto update = [held](const auto& y, const auto& p, const auto* w, auto*) {
    if (w) held->update_state(y, p, *w);
    else held->update_state(y, p);
  };
  if constexpr (Sparse) e.update.sparse = update;
  else e.update.dense = update;
  return e;
}

/// A metric named as Keras names it: "accuracy" resolved from the labels' kind and the output's
/// last extent (Keras's is_binary_or_sparse_categorical), or a metric's name.
template <class C, bool Sparse> typename C::metric_entry metric_by_name(const std::string& id) {
  using OutS = shape_t<typename C::output_view>;
  constexpr bool binary = OutS::extents[OutS::rank - 1] == 1;
  if (id == "accuracy" || id == "acc") {
    if constexpr (binary) return metric_entry_of<C, Sparse>(metrics::BinaryAccuracy{}, id);
    else if constexpr (Sparse) return metric_entry_of<C, Sparse>(metrics::SparseCategoricalAccuracy{}, id);
    else return metric_entry_of<C, Sparse>(metrics::CategoricalAccuracy{}, id);
  }
  if constexpr (Sparse) {
    if (id == "sparse_categorical_accuracy") return metric_entry_of<C, Sparse>(metrics::SparseCategoricalAccuracy{}, id);
    if (id == "sparse_top_k_categorical_accuracy") return metric_entry_of<C, Sparse>(metrics::SparseTopKCategoricalAccuracy{}, id);
    throw value_error("ctflow::keras::compile: unknown metric '" + id + "' for sparse labels; known: accuracy, acc, sparse_categorical_accuracy, sparse_top_k_categorical_accuracy");
  } else {
    if (id == "binary_accuracy") return metric_entry_of<C, Sparse>(metrics::BinaryAccuracy{}, id);
    if (id == "categorical_accuracy") return metric_entry_of<C, Sparse>(metrics::CategoricalAccuracy{}, id);
    if (id == "mse" || id == "mean_squared_error") return metric_entry_of<C, Sparse>(metrics::MeanSquaredError{}, id);
    if (id == "mae" || id == "mean_absolute_error") return metric_entry_of<C, Sparse>(metrics::MeanAbsoluteError{}, id);
    if (id == "root_mean_squared_error") return metric_entry_of<C, Sparse>(metrics::RootMeanSquaredError{}, id);
    if (id == "top_k_categorical_accuracy") return metric_entry_of<C, Sparse>(metrics::TopKCategoricalAccuracy{}, id);
    throw value_error("ctflow::keras::compile: unknown metric '" + id +
                      "'; known: accuracy, acc, binary_accuracy, categorical_accuracy, mse, mean_squared_error, mae, mean_absolute_error, "
                      "root_mean_squared_error, top_k_categorical_accuracy");
  }
}

/// model.compile: keeps the optimizer, the loss (its kind of labels) and the metrics.
template <class T, class OutS, class O, class L, class... M>
std::unique_ptr<compiled<T, OutS>> make_compiled(O optimizer, L loss, const std::vector<std::string>& metric_names, M... metric_objects) {
  using C = compiled<T, OutS>;
  constexpr bool sparse = takes_sparse_labels<L>::value;
  static_assert(L::reduction != losses::Reduction::none, "ctflow::keras::compile: training needs a reduced loss (sum_over_batch_size or sum), not none");
  static_assert(((takes_sparse_labels<M>::value == sparse) && ...),
                "ctflow::keras::compile: a metric takes labels of another kind than the loss (sparse integer labels against dense ones)");
  auto c = std::make_unique<C>();
  c->sparse = sparse;
  c->loss_name = loss.name;
  c->optimizer = std::make_unique<optimizer_holder<T, O>>(std::move(optimizer));
  c->loss_config = loss_config(loss);
  if (!metric_names.empty() || sizeof...(M) > 0) {
    // Metric objects by their names, which Keras resolves to its classes with their defaults.
    std::string list;
    for (const auto& id : metric_names) list += (list.empty() ? "" : ", ") + config_dict::quote(id);
    ((list += (list.empty() ? "" : ", ") + config_dict::quote(metric_objects.name)), ...);
    c->metrics_config = "[" + list + "]";
  }
  auto held = std::make_shared<L>(std::move(loss));
  auto fn = [held](const auto& y, const typename C::output_view& p, const typename C::weight_view* w, Tensor<T, OutS>* dy) -> T {
    if (dy) {
      auto [v, g] = w ? held->value_and_gradient(y, p, *w) : held->value_and_gradient(y, p);
      *dy = std::move(g);
      return v;
    }
    return w ? (*held)(y, p, *w) : (*held)(y, p);
  };
  if constexpr (sparse) c->loss.sparse = fn;
  else c->loss.dense = fn;
  for (const auto& id : metric_names) c->metrics.push_back(metric_by_name<C, sparse>(id));
  ([&](M& m) {
    std::string name = m.name;
    c->metrics.push_back(metric_entry_of<C, sparse>(std::move(m), std::move(name)));
  }(metric_objects), ...);
  return c;
}

/// The labels and weights of one batch, in the compiled model's types.
template <class C> struct batch_labels {
  const typename C::dense_view* dense = nullptr;
  const typename C::sparse_view* sparse = nullptr;
  const typename C::weight_view* weight = nullptr;
};

/// The model's input of one batch, the labels, their weights: buffers for the largest batch, and
/// views of the rows of the current one.
template <class Model, class C> struct batch_buffers {
  using in_view = typename Model::input_type;
  using InT = std::remove_const_t<value_t<in_view>>;
  using InS = shape_t<in_view>;
  using T = value_t<typename C::output_view>;
  using OutS = shape_t<typename C::output_view>;
  Tensor<InT, Shape<dyn>> x;
  Tensor<T, Shape<dyn>> dense, weight;
  Tensor<std::int32_t, Shape<dyn>> sparse;
  std::optional<in_view> x_view;
  std::optional<typename C::dense_view> dense_view;
  std::optional<typename C::sparse_view> sparse_view;
  std::optional<typename C::weight_view> weight_view;
};

/// Extents of a batch of n rows of a tensor whose row has extents rest (with a trailing 1 when
/// the model's rank is one more: Keras adds the channel axis).
template <class S> dims_t<std::size_t(S::rank)> batch_dims(std::size_t n, const std::vector<std::size_t>& dims, const char* what, const std::string& model) {
  dims_t<std::size_t(S::rank)> d{};
  d[0] = n;
  const std::size_t given = dims.size(), rank = std::size_t(S::rank);
  // Keras's rank adjustments: a trailing axis of 1 added (images without their channel axis,
  // labels [N] for an output [N, 1]) or dropped (integer labels [N, 1]).
  const bool expand = given + 1 == rank && S::extents[rank - 1] == 1;
  const bool squeeze = given == rank + 1 && dims.back() == 1;
  if (given != rank && !expand && !squeeze)
    throw shape_error("ctflow::keras::" + model + ": " + what + " of rank " + std::to_string(given) + " (" + format_dims(dims) + ") for " + format_dims(S::extents));
  for (std::size_t i = 1; i < rank; ++i) d[i] = i < given ? dims[i] : 1;
  if (!matches_static<S>(d))
    throw shape_error("ctflow::keras::" + model + ": " + what + " " + format_dims(dims) + " does not fit " + format_dims(S::extents));
  return d;
}

/// Whether labels of rank r fit the compiled loss: sparse ones have the output's rank less one
/// (or the output's, their last extent 1), dense ones the output's (or one less when the output's
/// last extent is 1).
template <class C> bool labels_fit(bool sparse, std::size_t r, std::size_t last) {
  using OutS = shape_t<typename C::output_view>;
  constexpr std::size_t out = std::size_t(OutS::rank);
  if (sparse) return r + 1 == out || (r == out && last == 1);
  return r == out || (r + 1 == out && OutS::extents[out - 1] == 1);
}

/// No class weights.
inline const std::map<std::int64_t, double>& no_class_weight() {
  static const std::map<std::int64_t, double> none;
  return none;
}

/// Batches of rows of tensors: x, labels (y) and per-sample weights, rows [begin, end) in
/// batches of batch_size, shuffled each epoch (a permutation drawn from seed and the epoch).
template <class Model, class C> class tensor_batches {
 public:
  tensor_batches(bool sparse, const std::string& loss_name, const array_ref& x, const array_ref& y, const array_ref& sw,
                 const std::map<std::int64_t, double>& class_weight, std::size_t begin, std::size_t end, std::size_t batch_size, const std::string& model)
      : sparse_(sparse), x_(x), y_(y), sw_(sw), class_weight_(class_weight), begin_(begin), end_(end), batch_(batch_size), model_(model) {
    if (batch_size == 0) throw value_error("ctflow::keras::" + model + ": batch_size must be positive");
    if (end <= begin) throw value_error("ctflow::keras::" + model + ": no samples to iterate over (an empty x, or a validation_split that takes every sample)");
    if (y && y.rows() != x.rows())
      throw shape_error("ctflow::keras::" + model + ": x has " + std::to_string(x.rows()) + " samples, y " + std::to_string(y.rows()) + "; they must be as many");
    if (y && !labels_fit<C>(sparse, y.dims().size(), y.dims().back()))
      throw value_error("ctflow::keras::" + model + ": the loss " + loss_name +
                        (sparse ? " takes integer labels of the output's shape without its last axis; y is " : " takes labels of the output's shape; y is ") +
                        y.dtype() + " " + format_dims(y.dims()));
    if (sw && sw.rows() != x.rows())
      throw shape_error("ctflow::keras::" + model + ": sample_weight has " + std::to_string(sw.rows()) + " values for " + std::to_string(x.rows()) + " samples");
  }
  std::int64_t steps() const { return std::int64_t((end_ - begin_ + batch_ - 1) / batch_); }

  /// The rows of epoch `epoch` in order (shuffled with seed when shuffle).
  void order(bool shuffle, std::uint64_t seed, std::int64_t epoch) {
    rows_.resize(end_ - begin_);
    std::iota(rows_.begin(), rows_.end(), begin_);
    if (!shuffle) return;
    for (std::size_t i = rows_.size(); i > 1; --i) {
      const auto w = random::philox(seed, (std::uint64_t(epoch) << 40) + i);
      const std::uint64_t r = (std::uint64_t(w[0]) << 32 | w[1]) % i;
      std::swap(rows_[i - 1], rows_[r]);
    }
  }

  /// Runs f(step, x, labels) on batches first..steps of the current order, in b, while f returns true.
  template <class F> void each(std::int64_t first, std::int64_t steps, batch_buffers<Model, C>& b, F&& f) {
    for (std::int64_t step = first; step < steps; ++step) {
      const auto labels = fill(step, b);
      if (!f(step, *b.x_view, labels)) break;
    }
  }

  /// Fills b with batch `step` of the current order; returns its labels.
  batch_labels<C> fill(std::int64_t step, batch_buffers<Model, C>& b) {
    using B = batch_buffers<Model, C>;
    const std::size_t first = std::size_t(step) * batch_, n = std::min(batch_, rows_.size() - first);
    const std::size_t* rows = rows_.data() + first;
    const auto xd = batch_dims<typename B::InS>(n, x_.dims(), "x", model_);
    grow(b.x, batch_ * x_.row_size());
    x_.gather(rows, n, b.x.data());
    b.x_view.emplace(b.x.data(), xd);
    batch_labels<C> out;
    if (y_) {
      using SS = typename C::sample_shape;
      using OutS = shape_t<typename C::output_view>;
      if (sparse_) {
        const auto yd = batch_dims<SS>(n, y_.dims(), "y (sparse labels)", model_);
        grow(b.sparse, batch_ * y_.row_size());
        y_.gather(rows, n, b.sparse.data());
        b.sparse_view.emplace(b.sparse.data(), yd);
        out.sparse = &*b.sparse_view;
      } else {
        const auto yd = batch_dims<OutS>(n, y_.dims(), "y", model_);
        grow(b.dense, batch_ * y_.row_size());
        y_.gather(rows, n, b.dense.data());
        b.dense_view.emplace(b.dense.data(), yd);
        out.dense = &*b.dense_view;
      }
      if (sw_ || !class_weight_.empty()) {
        using SS2 = typename C::sample_shape;
        if constexpr (SS2::rank != 1) {
          throw value_error("ctflow::keras::" + model_ + ": sample and class weights need one loss per sample (an output of rank 2)");
        } else {
          grow(b.weight, batch_);
          if (sw_) sw_.gather(rows, n, b.weight.data());
          else std::fill_n(b.weight.data(), n, value_t<typename C::output_view>(1));
          if (!class_weight_.empty()) apply_class_weight(b, n);
          b.weight_view.emplace(b.weight.data(), dims_t<1>{n});
          out.weight = &*b.weight_view;
        }
      }
    }
    return out;
  }

 private:
  template <class X> static void grow(X& t, std::size_t n) {
    if (t.size() < n) t = X(dims_t<1>{n});
  }
  template <class B> void apply_class_weight(B& b, std::size_t n) {
    const std::size_t classes = sparse_ ? 0 : y_.row_size();
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t k = 0;
      if (sparse_) k = b.sparse.data()[i];
      else k = std::max_element(b.dense.data() + i * classes, b.dense.data() + (i + 1) * classes) - (b.dense.data() + i * classes);
      const auto it = class_weight_.find(k);
      if (it == class_weight_.end()) throw value_error("ctflow::keras::" + model_ + ": class_weight has no weight for class " + std::to_string(k));
      b.weight.data()[i] *= value_t<typename C::output_view>(it->second);
    }
  }
  bool sparse_;
  array_ref x_, y_, sw_;
  const std::map<std::int64_t, double>& class_weight_;
  std::size_t begin_, end_, batch_;
  std::string model_;
  std::vector<std::size_t> rows_;
};

/// What callbacks reach of model (its weights and its compiled optimizer).
template <class Model, class C> class model_handle final : public callbacks::ModelHandle {
 public:
  using T = typename Model::value_type;
  model_handle(Model& m, C* c, std::uint64_t& seed) : m_(m), c_(c), seed_(seed) {}
  std::string name() const override { return m_.name; }
  std::any get_weights() override { return m_.get_weights(); }
  void set_weights(const std::any& w) override { m_.set_weights(std::any_cast<const std::vector<weight_value<T>>&>(w)); }
  void save_weights(const std::string& path) override { m_.save_weights(path); }
  void save(const std::string& path) override { m_.save(path); }
  double learning_rate() const override { return optimizer().learning_rate(); }
  void set_learning_rate(double rate) override { optimizer().set_learning_rate(rate); }
  std::int64_t iterations() const override { return optimizer().iterations(); }
  void write_backup(const std::string& prefix, std::int64_t epoch, std::int64_t step) override {
    position p{epoch, step, std::int64_t(seed_)};
    erased opt{&optimizer()};
    train::Checkpoint ckpt{{"model", m_}, {"optimizer", opt}, {"fit", p}};
    ckpt.write(prefix);
  }
  std::pair<std::int64_t, std::int64_t> restore_backup(const std::string& prefix) override {
    optimizer().build(m_.trainable_variables());
    position p;
    erased opt{&optimizer()};
    train::Checkpoint ckpt{{"model", m_}, {"optimizer", opt}, {"fit", p}};
    ckpt.restore(prefix);
    seed_ = std::uint64_t(p.seed);
    return {p.epoch, p.step};
  }
  void write_histograms(summary::SummaryWriter& w, std::int64_t step) override {
    for (const auto& v : m_.weights()) w.histogram(v.path, v.value(), step);
  }

 private:
  struct position {
    std::int64_t epoch = 0, step = 0, seed = 0;
    template <class V> void track(V& v) {
      v("epoch", epoch);
      v("step", step);
      v("seed", seed);
    }
  };
  struct erased {
    compiled_optimizer<T>* o;
    void track(train::detail::collector& c) { o->track(c); }
  };
  compiled_optimizer<T>& optimizer() const {
    if (!c_ || !c_->optimizer) throw value_error("ctflow::keras::" + std::string(Model::class_name) + " '" + m_.name + "': the model has no optimizer (compile it first)");
    return *c_->optimizer;
  }
  Model& m_;
  C* c_;
  std::uint64_t& seed_;
};

/// The callbacks of a pass: the user's, then History and the progress bar (Keras's CallbackList).
class callback_list {
 public:
  callback_list(const std::vector<callbacks::CallbackRef>& given, callbacks::ModelHandle& model, const callbacks::Params& params, bool history)
      : list_(given) {
    bool has_bar = false;
    for (const auto& c : list_) {
      if (dynamic_cast<callbacks::History*>(&*c)) history_ = static_cast<callbacks::History*>(&*c);
      if (dynamic_cast<callbacks::ProgbarLogger*>(&*c)) has_bar = true;
    }
    if (history && !history_) {
      auto h = std::make_shared<callbacks::History>();
      history_ = h.get();
      list_.emplace_back(std::shared_ptr<callbacks::Callback>(h));
    }
    if (params.verbose != 0 && !has_bar) list_.emplace_back(std::shared_ptr<callbacks::Callback>(std::make_shared<callbacks::ProgbarLogger>()));
    for (auto& c : list_) {
      c->set_model(model);
      c->set_params(params);
    }
  }
  template <class F> void each(F&& f) {
    for (auto& c : list_) f(*c);
  }
  callbacks::History* history() const { return history_; }

 private:
  std::vector<callbacks::CallbackRef> list_;
  callbacks::History* history_ = nullptr;
};

/// One training step on a batch: forward, the loss and its gradient (into dy), backward, one
/// update, and the loss tracker and metrics.
template <class Model, class C> void train_step(Model& model, C& c, const typename Model::input_type& x, const batch_labels<C>& y, Tensor<value_t<typename C::output_view>, shape_t<typename C::output_view>>& dy) {
  using T = value_t<typename C::output_view>;
  const auto out = model(x, true);
  const T loss = y.sparse ? c.loss.sparse(*y.sparse, out, y.weight, &dy) : c.loss.dense(*y.dense, out, y.weight, &dy);
  model.backward(typename C::output_view(dy.data(), dy.dims()));
  c.optimizer->apply_gradients(model.gradients(), model.trainable_variables());
  c.loss_tracker.update_state(double(loss) + model.regularization_loss(), double(x.dims()[0]));
  for (auto& m : c.metrics) y.sparse ? m.update.sparse(*y.sparse, out, y.weight, nullptr) : m.update.dense(*y.dense, out, y.weight, nullptr);
}

/// One evaluation step: forward (inference), the loss and the metrics.
template <class Model, class C> void test_step(Model& model, C& c, const typename Model::input_type& x, const batch_labels<C>& y) {
  const auto out = model(x, false);
  const auto loss = y.sparse ? c.loss.sparse(*y.sparse, out, y.weight, nullptr) : c.loss.dense(*y.dense, out, y.weight, nullptr);
  c.loss_tracker.update_state(double(loss) + model.regularization_loss(), double(x.dims()[0]));
  for (auto& m : c.metrics) y.sparse ? m.update.sparse(*y.sparse, out, y.weight, nullptr) : m.update.dense(*y.dense, out, y.weight, nullptr);
}

/// A batch's training step: the model's custom train_step, or compile's; the logs after it, into
/// logs.
template <class Model, class C>
void fit_step(Model& model, C& c, const typename Model::input_type& x, const batch_labels<C>& y, Tensor<value_t<typename C::output_view>, shape_t<typename C::output_view>>& dy,
              callbacks::Logs& logs) {
  if (model.steps.train_step) {
    logs = model.steps.train_step(model, batch_data<Model>{x, y.dense, y.sparse, y.weight});
    return;
  }
  train_step(model, c, x, y, dy);
  c.results(logs);
}
/// A batch's evaluation step, the same way.
template <class Model, class C> void evaluation_step(Model& model, C& c, const typename Model::input_type& x, const batch_labels<C>& y, callbacks::Logs& logs) {
  if (model.steps.test_step) {
    logs = model.steps.test_step(model, batch_data<Model>{x, y.dense, y.sparse, y.weight});
    return;
  }
  test_step(model, c, x, y);
  c.results(logs);
}
/// Resets compile's metrics and the custom steps' own.
template <class Model, class C> void reset_metrics(Model& model, C& c) {
  c.reset_metrics();
  if (model.steps.reset_metrics) model.steps.reset_metrics();
}

/// buffer (flat, grown when short) = the elements of e, converted to its dtype.
template <class B, class E> void copy_converted(B& buffer, const E& e) {
  using To = value_t<B>;
  const auto t = eval(e);
  if (buffer.size() < t.size()) buffer = B(dims_t<1>{t.size()});
  std::transform(t.data(), t.data() + t.size(), buffer.data(), [](const auto v) { return To(v); });
}

/// A dataset's batch x as the model's input: a view of its tensor when it has the input's dtype,
/// a converted copy in b otherwise (an Input's channel axis of 1 added).
template <class Model, class C, class X> typename Model::input_type dataset_input(const X& x, batch_buffers<Model, C>& b, const std::string& model) {
  using B = batch_buffers<Model, C>;
  const std::vector<std::size_t> xd(x.dims().begin(), x.dims().end());
  const auto d = batch_dims<typename B::InS>(xd[0], xd, "the dataset's x", model);
  if constexpr (is_leaf_v<X> && std::is_same_v<std::remove_const_t<value_t<X>>, typename B::InT>) {
    return typename Model::input_type(x.data(), d);
  } else {
    copy_converted(b.x, x);
    return typename Model::input_type(b.x.data(), d);
  }
}

/// A batch of a dataset's element (x, y[, sample_weight]) as the model's input and the compiled
/// labels: views of its tensors when they have the model's dtypes, converted copies otherwise.
template <class Model, class C, class E> batch_labels<C> dataset_batch(const C& c, const E& element, batch_buffers<Model, C>& b, const std::string& model) {
  using InS = typename batch_buffers<Model, C>::InS;
  using T = value_t<typename C::output_view>;
  static_assert(std::tuple_size_v<E> == 2 || std::tuple_size_v<E> == 3,
                "ctflow::keras::fit: a dataset's elements are (x, y) or (x, y, sample_weight) batches");
  const auto& x = std::get<0>(element);
  const auto& y = std::get<1>(element);
  using X = std::remove_cvref_t<decltype(x)>;
  using Y = std::remove_cvref_t<decltype(y)>;
  constexpr bool x_fits = rank_v<X> == InS::rank || (rank_v<X> + 1 == InS::rank && InS::extents[std::size_t(InS::rank) - 1] == 1);
  static_assert(x_fits, "ctflow::keras::fit: the dataset's x has another rank than the model's input (or than it without its channel axis of 1)");
  constexpr std::size_t out_rank = std::size_t(shape_t<typename C::output_view>::rank), y_rank = std::size_t(rank_v<Y>);
  static_assert(y_rank + 1 >= out_rank && y_rank <= out_rank + 1,
                "ctflow::keras::fit: the dataset's y has neither the output's rank (dense labels) nor one less (sparse labels)");
  if (!labels_fit<C>(c.sparse, y_rank, y.dims()[y_rank - 1]))
    throw value_error("ctflow::keras::" + model + ": the loss " + c.loss_name + (c.sparse ? " takes integer labels of the output's shape without its last axis; the dataset gives " : " takes labels of the output's shape; the dataset gives ") +
                      dtype_name<value_t<Y>>() + " " + format_dims(y.dims()));
  const auto xd = b.x_view.emplace(dataset_input<Model, C>(x, b, model)).dims();
  batch_labels<C> out;
  std::vector<std::size_t> yd(y.dims().begin(), y.dims().end());
  if (yd[0] != xd[0]) throw shape_error("ctflow::keras::" + model + ": a batch has " + std::to_string(xd[0]) + " inputs and " + std::to_string(yd[0]) + " labels");
  if (c.sparse) {
    if constexpr (y_rank + 1 == out_rank || y_rank == out_rank) {
      const auto d = batch_dims<typename C::sample_shape>(yd[0], yd, "the dataset's y", model);
      copy_converted(b.sparse, y);
      b.sparse_view.emplace(b.sparse.data(), d);
      out.sparse = &*b.sparse_view;
    }
  } else {
    const auto d = batch_dims<shape_t<typename C::output_view>>(yd[0], yd, "the dataset's y", model);
    if constexpr (is_leaf_v<Y> && std::is_same_v<std::remove_const_t<value_t<Y>>, T>) b.dense_view.emplace(y.data(), d);
    else {
      copy_converted(b.dense, y);
      b.dense_view.emplace(b.dense.data(), d);
    }
    out.dense = &*b.dense_view;
  }
  if constexpr (std::tuple_size_v<E> == 3) {
    const auto& w = std::get<2>(element);
    static_assert(rank_v<std::remove_cvref_t<decltype(w)>> == 1, "ctflow::keras::fit: a dataset's sample weights are one per sample");
    if constexpr (C::sample_shape::rank == 1) {
      if (w.dims()[0] != xd[0]) throw shape_error("ctflow::keras::" + model + ": a batch has " + std::to_string(xd[0]) + " inputs and " + std::to_string(w.dims()[0]) + " sample weights");
      copy_converted(b.weight, w);
      b.weight_view.emplace(b.weight.data(), dims_t<1>{xd[0]});
      out.weight = &*b.weight_view;
    } else {
      throw value_error("ctflow::keras::" + model + ": sample weights need one loss per sample (an output of rank 2)");
    }
  }
  return out;
}

/// Whether D is a dataset (a range of (x, y[, w]) batches with a cardinality).
template <class D> concept dataset = requires(const D& d) {
  typename D::element_type;
  d.cardinality();
  d.begin();
};


/// The name errors give a model: its class and name ("Sequential 'sequential'").
template <class Model> std::string who(const Model& model) { return std::string(Model::class_name) + " '" + model.name + "'"; }

/// The compiled state of model, or Keras's error when compile was not called.
template <class C, class Model> C& compiled_of(Model& model, compiled_base* c, const char* what) {
  if (!c) throw value_error("ctflow::keras::" + who(model) + ": call compile(optimizer, loss, metrics) before " + what);
  return static_cast<C&>(*c);
}

/// Evaluates model on batches (for_each_batch(f) calls f(step, x, labels) for each), with the
/// test hooks of cbs; returns the loss and metrics.
template <class Model, class C, class ForEach> callbacks::Logs run_test(Model& model, C& c, callback_list& cbs, ForEach&& for_each_batch) {
  reset_metrics(model, c);
  callbacks::Logs logs;
  cbs.each([&](callbacks::Callback& cb) { cb.on_test_begin({}); });
  for_each_batch([&](std::int64_t step, const typename Model::input_type& x, const batch_labels<C>& y) {
    cbs.each([&](callbacks::Callback& cb) { cb.on_test_batch_begin(step, {}); });
    evaluation_step(model, c, x, y, logs);
    cbs.each([&](callbacks::Callback& cb) { cb.on_test_batch_end(step, logs); });
    return true;
  });
  if (!model.steps.test_step) logs = c.results();
  cbs.each([&](callbacks::Callback& cb) { cb.on_test_end(logs); });
  return logs;
}

/// Keras's fit loop: epochs of batches (for_each_batch(epoch, first_step, f)), the callbacks,
/// validation each validation_freq epochs (validate(cbs) gives its logs); returns the History.
template <class Model, class C, class ForEach, class Validate>
callbacks::History run_fit(Model& model, C& c, const fit_options& o, std::optional<std::int64_t> steps, std::uint64_t& seed, ForEach&& for_each_batch,
                           Validate&& validate) {
  if (o.epochs < 0 || o.initial_epoch < 0) throw value_error("ctflow::keras::" + who(model) + ": epochs and initial_epoch must not be negative");
  if (o.validation_freq <= 0) throw value_error("ctflow::keras::" + who(model) + ": validation_freq must be positive");
  using T = value_t<typename C::output_view>;
  model_handle<Model, C> handle(model, &c, seed);
  callback_list cbs(o.callbacks, handle, {o.verbose.level, o.epochs, steps}, true);
  Tensor<T, shape_t<typename C::output_view>> dy;
  callbacks::Logs logs, batch_logs;
  cbs.each([&](callbacks::Callback& cb) { cb.on_train_begin({}); });
  std::int64_t epoch = o.initial_epoch, first_step = 0;
  if (handle.resume) {
    epoch = handle.resume_epoch;
    first_step = handle.resume_step;
  }
  for (; epoch < o.epochs && !handle.stop_training; ++epoch) {
    reset_metrics(model, c);
    cbs.each([&](callbacks::Callback& cb) { cb.on_epoch_begin(epoch, {}); });
    callbacks::Logs epoch_logs;
    for_each_batch(epoch, first_step, [&](std::int64_t step, const typename Model::input_type& x, const batch_labels<C>& y) {
      cbs.each([&](callbacks::Callback& cb) { cb.on_train_batch_begin(step, {}); });
      fit_step(model, c, x, y, dy, batch_logs);
      epoch_logs = batch_logs;
      cbs.each([&](callbacks::Callback& cb) { cb.on_train_batch_end(step, batch_logs); });
      return !handle.stop_training;
    });
    first_step = 0;
    if (!model.steps.train_step) epoch_logs = c.results();
    if ((epoch + 1) % o.validation_freq == 0)
      if (auto v = validate(cbs))
        for (const auto& [k, value] : *v) epoch_logs["val_" + k] = value;
    cbs.each([&](callbacks::Callback& cb) { cb.on_epoch_end(epoch, epoch_logs); });
    logs = std::move(epoch_logs);
  }
  c.optimizer->finalize_variable_values(model.trainable_variables());
  cbs.each([&](callbacks::Callback& cb) { cb.on_train_end(logs); });
  return *cbs.history();
}

/// fit on tensors x, y (and o's sample weights, class weights, validation split or data).
template <class Model, class C> callbacks::History fit_tensors(Model& model, C& c, const array_ref& x, const array_ref& y, const fit_options& o) {
  if (!(o.validation_split >= 0 && o.validation_split < 1))
    throw value_error("ctflow::keras::" + who(model) + ": validation_split must be in [0, 1); got " + std::to_string(o.validation_split));
  const std::size_t n = x.rows();
  const std::size_t split = o.validation_split > 0 ? std::size_t(double(n) * (1 - o.validation_split)) : n;
  tensor_batches<Model, C> train(c.sparse, c.loss_name, x, y, o.sample_weight, o.class_weight, 0, split, o.batch_size, who(model));
  const std::size_t vbatch = o.validation_batch_size ? *o.validation_batch_size : o.batch_size;
  std::optional<tensor_batches<Model, C>> val;
  if (split < n) val.emplace(c.sparse, c.loss_name, x, y, o.sample_weight, no_class_weight(), split, n, vbatch, who(model));
  else if (o.validation_data.first) val.emplace(c.sparse, c.loss_name, o.validation_data.first, o.validation_data.second, array_ref{}, no_class_weight(), 0, o.validation_data.first.rows(), vbatch, who(model));
  std::int64_t steps = train.steps();
  if (o.steps_per_epoch) steps = std::min(steps, *o.steps_per_epoch);
  std::uint64_t seed = utils::next_seed();
  batch_buffers<Model, C> buffers, val_buffers;
  return run_fit(
      model, c, o, steps, seed,
      [&](std::int64_t epoch, std::int64_t first, auto&& f) {
        train.order(o.shuffle, seed, epoch);
        train.each(first, steps, buffers, f);
      },
      [&](callback_list& cbs) -> std::optional<callbacks::Logs> {
        if (!val) return std::nullopt;
        val->order(false, 0, 0);
        std::int64_t vsteps = val->steps();
        if (o.validation_steps) vsteps = std::min(vsteps, *o.validation_steps);
        return run_test(model, c, cbs, [&](auto&& f) { val->each(0, vsteps, val_buffers, f); });
      });
}

/// A dataset's element as a tuple (a single tensor: (x,)).
template <class E> decltype(auto) as_tuple(const E& e) {
  if constexpr (requires { std::tuple_size<E>::value; }) return (e);
  else return std::tuple<const E&>(e);
}

/// Runs f(step, x, labels) on the batches of ds from first_step (at most steps); an empty dataset
/// is an error.
template <class Model, class C, class D, class F>
void dataset_batches(Model& model, const C& c, const D& ds, batch_buffers<Model, C>& b, std::int64_t first_step, std::optional<std::int64_t> steps, F&& f) {
  std::int64_t step = 0;
  for (const auto& e : ds) {
    if (steps && step >= *steps) break;
    const std::int64_t at = step++;
    if (at < first_step) continue;
    const auto labels = dataset_batch<Model, C>(c, as_tuple(e), b, who(model));
    if (!f(at, *b.x_view, labels)) break;
  }
  if (step == 0) throw value_error("ctflow::keras::" + who(model) + ": the dataset is empty (no batch to iterate over)");
}

/// fit on a dataset of (x, y[, sample_weight]) batches, validated on another (or not: V = nullptr_t).
template <class Model, class C, class D, class V> callbacks::History fit_dataset(Model& model, C& c, const D& ds, const fit_options& o, const V* validation) {
  if (o.validation_split != 0)
    throw value_error("ctflow::keras::" + who(model) + ": validation_split needs tensors (fit(x, y, ...)); give a dataset's validation data as fit's third argument");
  const std::int64_t cardinality = ds.cardinality();
  if (cardinality == -1 && !o.steps_per_epoch)  // data::infinite_cardinality
    throw value_error("ctflow::keras::" + who(model) + ": the dataset repeats forever; give steps_per_epoch");
  std::optional<std::int64_t> steps = o.steps_per_epoch;
  if (cardinality >= 0) steps = steps ? std::min(*steps, cardinality) : cardinality;
  std::uint64_t seed = utils::next_seed();
  batch_buffers<Model, C> buffers, val_buffers;
  return run_fit(
      model, c, o, steps, seed,
      [&](std::int64_t, std::int64_t first, auto&& f) { dataset_batches(model, c, ds, buffers, first, steps, f); },
      [&](callback_list& cbs) -> std::optional<callbacks::Logs> {
        if constexpr (std::is_same_v<V, std::nullptr_t>) return std::nullopt;
        else
          return run_test(model, c, cbs, [&](auto&& f) { dataset_batches(model, c, *validation, val_buffers, 0, o.validation_steps, f); });
      });
}

/// evaluate on batches: run_test with evaluate's callbacks and progress bar.
template <class Model, class C, class ForEach>
callbacks::Logs evaluate_batches(Model& model, C& c, const evaluate_options& o, std::optional<std::int64_t> steps, ForEach&& for_each_batch) {
  std::uint64_t seed = 0;
  model_handle<Model, C> handle(model, &c, seed);
  callback_list cbs(o.callbacks, handle, {o.verbose.level, 1, steps}, false);
  return run_test(model, c, cbs, for_each_batch);
}

/// predict on batches (for_each_batch(f) calls f(step, x)): the outputs, concatenated.
template <class Model, class ForEach> auto predict_batches(Model& model, const predict_options& o, std::optional<std::int64_t> steps, ForEach&& for_each_batch) {
  using Out = typename Model::output_type;
  using T = value_t<Out>;
  using C = compiled<T, shape_t<Out>>;
  std::uint64_t seed = 0;
  model_handle<Model, C> handle(model, nullptr, seed);
  callback_list cbs(o.callbacks, handle, {o.verbose.level, 1, steps}, false);
  std::vector<T> values;
  dims_t<std::size_t(shape_t<Out>::rank)> d{};
  cbs.each([&](callbacks::Callback& cb) { cb.on_predict_begin({}); });
  for_each_batch([&](std::int64_t step, const typename Model::input_type& x) {
    cbs.each([&](callbacks::Callback& cb) { cb.on_predict_batch_begin(step, {}); });
    const auto out = model(x, false);
    const std::size_t rows = d[0];
    d = out.dims();
    d[0] += rows;
    values.insert(values.end(), out.data(), out.data() + out.size());
    cbs.each([&](callbacks::Callback& cb) { cb.on_predict_batch_end(step, {}); });
    return true;
  });
  cbs.each([&](callbacks::Callback& cb) { cb.on_predict_end({}); });
  Tensor<T, shape_t<Out>> result(d);
  std::copy(values.begin(), values.end(), result.data());
  return result;
}

}  // namespace detail

}  // namespace ctflow::keras
