#pragma once
/// @file
/// @brief keras.metrics: metrics that accumulate over batches (`update_state`, `result`,
/// `reset_state`) with Keras 3's formulas: Mean, Sum, MeanMetricWrapper (any per-sample function,
/// every loss function among them), Accuracy, BinaryAccuracy, CategoricalAccuracy,
/// SparseCategoricalAccuracy, MeanSquaredError, RootMeanSquaredError, MeanAbsoluteError.
///
///     keras::metrics::SparseCategoricalAccuracy accuracy;
///     accuracy.update_state(labels, logits);      // each batch
///     double a = accuracy.result();               // over every batch since reset_state()

#include <cmath>
#include <string>
#include <type_traits>
#include <utility>

#include <ctflow/ctflow.hpp>
#include <ctflow/keras/losses.hpp>

namespace ctflow::keras::metrics {

/// @brief keras.metrics.Mean: the (weighted) mean of every value given since reset_state():
/// total = sum(values * sample_weight), count = sum(sample_weight) (the number of values without
/// weights).
struct Mean {
  std::string name = "mean";
  double total = 0, count = 0;
  /// @brief Adds values (any shape).
  template <Expression V> void update_state(const V& values) {
    total += double(item(reduce_sum(cast<double>(values))));
    count += double(product(values.dims()));
  }
  /// @brief Adds values weighted by sample_weight (of the values' shape).
  template <Expression V, Expression W> void update_state(const V& values, const W& sample_weight) {
    if (sample_weight.dims() != values.dims())
      throw_shape_error(("ctflow::keras::metrics::" + name + ": sample_weight").c_str(), "must have the values' shape", sample_weight.dims(), values.dims());
    total += double(item(reduce_sum(cast<double>(values) * cast<double>(sample_weight))));
    count += double(item(reduce_sum(cast<double>(sample_weight))));
  }
  /// @brief The mean so far (0 before any value).
  double result() const { return count > 0 ? total / count : 0.0; }
  /// @brief Starts again.
  void reset_state() { total = count = 0; }
};

/// @brief keras.metrics.Sum: the (weighted) sum of every value given since reset_state().
struct Sum {
  std::string name = "sum";
  Mean state{};
  /// @brief Adds values (any shape), optionally weighted.
  template <Expression V> void update_state(const V& values) { state.update_state(values); }
  template <Expression V, Expression W> void update_state(const V& values, const W& sample_weight) { state.update_state(values, sample_weight); }
  /// @brief The sum so far.
  double result() const { return state.total; }
  /// @brief Starts again.
  void reset_state() { state.reset_state(); }
};

/// @brief keras.metrics.MeanMetricWrapper(fn): the mean of fn(y_true, y_pred), a per-sample
/// expression (a loss function, an accuracy), weighted by sample_weight of its shape.
template <class Fn> struct MeanMetricWrapper {
  Fn fn;
  std::string name = "mean_metric_wrapper";
  Mean mean{};
  /// @brief Adds the values of a batch.
  template <Expression Y, Expression P> void update_state(const Y& y_true, const P& y_pred) { mean.update_state(fn(y_true, y_pred)); }
  template <Expression Y, Expression P, Expression W> void update_state(const Y& y_true, const P& y_pred, const W& sample_weight) {
    mean.update_state(fn(y_true, y_pred), sample_weight);
  }
  /// @brief The mean so far.
  double result() const { return mean.result(); }
  /// @brief Starts again.
  void reset_state() { mean.reset_state(); }
};
template <class Fn> MeanMetricWrapper(Fn, std::string = "mean_metric_wrapper") -> MeanMetricWrapper<Fn>;

// ---- the per-sample functions (keras.metrics.<name>) ------------------------------------------

/// @brief Whether y_pred equals y_true, element by element, as floats (Keras's accuracy).
template <Expression Y, Expression P> auto accuracy(const Y& y_true, const P& y_pred) { return cast<float>(equal(y_true, y_pred)); }
/// @brief The fraction of y_pred > threshold equal to y_true over the last axis.
template <Expression Y, Expression P> auto binary_accuracy(const Y& y_true, const P& y_pred, double threshold = 0.5) {
  using T = value_t<P>;
  return reduce_mean<-1>(cast<float>(equal(losses::detail::as_dtype<T>(y_true), cast<T>(y_pred > T(threshold)))));
}
/// @brief Whether the arg max of y_pred is that of y_true (one-hot labels), per sample.
template <Expression Y, Expression P> auto categorical_accuracy(const Y& y_true, const P& y_pred) {
  return cast<float>(equal(argmax<-1>(y_true), argmax<-1>(y_pred)));
}
/// @brief Whether the arg max of y_pred is the integer label, per sample.
template <Expression Y, Expression P> auto sparse_categorical_accuracy(const Y& labels, const P& y_pred) {
  return cast<float>(equal(cast<std::int64_t>(labels), argmax<-1>(y_pred)));
}

/// The function objects the wrappers hold.
namespace detail {
struct accuracy_fn {
  template <class Y, class P> auto operator()(const Y& y, const P& p) const { return accuracy(y, p); }
};
struct binary_accuracy_fn {
  double threshold = 0.5;
  template <class Y, class P> auto operator()(const Y& y, const P& p) const { return binary_accuracy(y, p, threshold); }
};
struct categorical_accuracy_fn {
  template <class Y, class P> auto operator()(const Y& y, const P& p) const { return categorical_accuracy(y, p); }
};
struct sparse_categorical_accuracy_fn {
  template <class Y, class P> auto operator()(const Y& y, const P& p) const { return sparse_categorical_accuracy(y, p); }
};
struct mean_squared_error_fn {
  template <class Y, class P> auto operator()(const Y& y, const P& p) const { return losses::mean_squared_error(y, p); }
};
struct mean_absolute_error_fn {
  template <class Y, class P> auto operator()(const Y& y, const P& p) const { return losses::mean_absolute_error(y, p); }
};
}  // namespace detail

/// The members of a metric over a per-sample function: update_state, result, reset_state.
#define CTFLOW_KERAS_MEAN_METRIC(FN)                                                                                   \
  Mean mean{};                                                                                                         \
  template <Expression Y, Expression P> void update_state(const Y& y_true, const P& y_pred) { mean.update_state(FN(y_true, y_pred)); } \
  template <Expression Y, Expression P, Expression W> void update_state(const Y& y_true, const P& y_pred, const W& sample_weight) { \
    mean.update_state(FN(y_true, y_pred), sample_weight);                                                              \
  }                                                                                                                    \
  void reset_state() { mean.reset_state(); }

/// @brief keras.metrics.Accuracy: how often y_pred equals y_true.
struct Accuracy {
  std::string name = "accuracy";
  CTFLOW_KERAS_MEAN_METRIC(detail::accuracy_fn{})
  /// @brief The fraction so far.
  double result() const { return mean.result(); }
};
/// @brief keras.metrics.BinaryAccuracy(threshold=0.5).
struct BinaryAccuracy {
  std::string name = "binary_accuracy";
  double threshold = 0.5;
  CTFLOW_KERAS_MEAN_METRIC(detail::binary_accuracy_fn{threshold})
  /// @brief The fraction so far.
  double result() const { return mean.result(); }
};
/// @brief keras.metrics.CategoricalAccuracy (one-hot labels).
struct CategoricalAccuracy {
  std::string name = "categorical_accuracy";
  CTFLOW_KERAS_MEAN_METRIC(detail::categorical_accuracy_fn{})
  /// @brief The fraction so far.
  double result() const { return mean.result(); }
};
/// @brief keras.metrics.SparseCategoricalAccuracy (integer labels).
struct SparseCategoricalAccuracy {
  std::string name = "sparse_categorical_accuracy";
  CTFLOW_KERAS_MEAN_METRIC(detail::sparse_categorical_accuracy_fn{})
  /// @brief The fraction so far.
  double result() const { return mean.result(); }
};
/// @brief keras.metrics.MeanSquaredError.
struct MeanSquaredError {
  std::string name = "mean_squared_error";
  CTFLOW_KERAS_MEAN_METRIC(detail::mean_squared_error_fn{})
  /// @brief The mean so far.
  double result() const { return mean.result(); }
};
/// @brief keras.metrics.RootMeanSquaredError: the square root of the mean squared error.
struct RootMeanSquaredError {
  std::string name = "root_mean_squared_error";
  CTFLOW_KERAS_MEAN_METRIC(detail::mean_squared_error_fn{})
  /// @brief The root of the mean so far.
  double result() const { return std::sqrt(mean.result()); }
};
/// @brief keras.metrics.MeanAbsoluteError.
struct MeanAbsoluteError {
  std::string name = "mean_absolute_error";
  CTFLOW_KERAS_MEAN_METRIC(detail::mean_absolute_error_fn{})
  /// @brief The mean so far.
  double result() const { return mean.result(); }
};

#undef CTFLOW_KERAS_MEAN_METRIC

}  // namespace ctflow::keras::metrics
