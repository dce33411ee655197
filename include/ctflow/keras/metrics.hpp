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

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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
  /// @brief Adds one number (a batch's loss), weighted by sample_weight.
  void update_state(double value, double sample_weight = 1) {
    total += value * sample_weight;
    count += sample_weight;
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

/// @brief Whether the label's prediction is among the k largest of its row (TensorFlow's in_top_k:
/// ties at the boundary count as in; a non-finite prediction never does), per sample, as floats.
template <Expression Y, Expression P> Tensor<float, shape_t<decltype(argmax<-1>(std::declval<const P&>()))>> sparse_top_k_categorical_accuracy(const Y& labels, const P& y_pred, std::size_t k = 5) {
  const auto p = eval(cast<double>(y_pred));
  const auto y = eval(cast<std::int64_t>(labels));
  const std::size_t classes = p.dims()[std::size_t(shape_t<P>::rank) - 1], rows = p.size() / std::max<std::size_t>(classes, 1);
  if (y.size() != rows) throw_shape_error("ctflow::keras::metrics::sparse_top_k_categorical_accuracy: labels", "must have y_pred's shape without its last axis", y.dims(), p.dims());
  Tensor<float, shape_t<decltype(argmax<-1>(std::declval<const P&>()))>> out(y.dims());
  for (std::size_t r = 0; r < rows; ++r) {
    const double* row = p.data() + r * classes;
    const std::int64_t label = y.data()[r];
    bool in = label >= 0 && std::size_t(label) < classes && std::isfinite(row[label]);
    if (in) {
      std::size_t greater = 0;
      for (std::size_t c = 0; c < classes; ++c) greater += row[c] > row[label];
      in = greater < k;
    }
    out.data()[r] = in ? 1.f : 0.f;
  }
  return out;
}
/// @brief The same with one-hot labels (the label is the arg max of y_true).
template <Expression Y, Expression P> auto top_k_categorical_accuracy(const Y& y_true, const P& y_pred, std::size_t k = 5) {
  return sparse_top_k_categorical_accuracy(argmax<-1>(y_true), y_pred, k);
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
struct top_k_fn {
  std::size_t k;
  template <class Y, class P> auto operator()(const Y& y, const P& p) const { return top_k_categorical_accuracy(y, p, k); }
};
struct sparse_top_k_fn {
  std::size_t k;
  template <class Y, class P> auto operator()(const Y& y, const P& p) const { return sparse_top_k_categorical_accuracy(y, p, k); }
};

/// The values of an expression in host memory as doubles (y_true, y_pred, weights).
template <class E> std::vector<double> host_values(const E& e) {
  const auto t = eval(cast<double>(e));
  return std::vector<double>(t.data(), t.data() + t.size());
}

/// Per-element weights of y_pred's n elements from sample weights (none: 1; one per sample,
/// broadcast over the rest; or one per element).
template <class W> std::vector<double> element_weights(const W* w, std::size_t n, const char* who) {
  if (!w) return std::vector<double>(n, 1.0);
  const auto v = host_values(*w);
  if (v.empty() || n % v.size() != 0)
    throw shape_error(std::string("ctflow::keras::metrics::") + who + ": " + std::to_string(v.size()) + " sample weights for " + std::to_string(n) + " predictions");
  std::vector<double> out(n);
  const std::size_t per = n / v.size();
  for (std::size_t i = 0; i < n; ++i) out[i] = v[i / per];
  return out;
}

/// True/false positives/negatives at thresholds: element i is predicted positive at threshold t
/// when y_pred[i] > t, and is a positive when y_true[i] is not 0 (Keras's update of its
/// confusion-matrix variables); only column class_id when given.
struct confusion {
  std::vector<double> thresholds, tp, fp, tn, fn;
  explicit confusion(std::vector<double> t = {0.5})
      : thresholds(std::move(t)), tp(thresholds.size()), fp(thresholds.size()), tn(thresholds.size()), fn(thresholds.size()) {}
  template <class Y, class P, class W>
  void update(const Y& y_true, const P& y_pred, const W* w, std::optional<std::size_t> class_id, const char* who) {
    const auto y = host_values(y_true), p = host_values(y_pred);
    if (y.size() != p.size()) throw shape_error(std::string("ctflow::keras::metrics::") + who + ": y_true has " + std::to_string(y.size()) + " values, y_pred " + std::to_string(p.size()));
    const auto weight = element_weights(w, p.size(), who);
    const std::size_t classes = y_pred.dims().empty() ? 1 : y_pred.dims().back();
    if (class_id && *class_id >= classes) throw value_error(std::string("ctflow::keras::metrics::") + who + ": class_id " + std::to_string(*class_id) + " for " + std::to_string(classes) + " classes");
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (class_id && i % classes != *class_id) continue;
      const bool positive = y[i] != 0;
      for (std::size_t t = 0; t < thresholds.size(); ++t) {
        const bool predicted = p[i] > thresholds[t];
        (positive ? (predicted ? tp : fn) : (predicted ? fp : tn))[t] += weight[i];
      }
    }
  }
  /// The same at one threshold (counts restarted when it changes).
  template <class Y, class P, class W>
  void update_at(double threshold, const Y& y_true, const P& y_pred, const W* w, std::optional<std::size_t> class_id, const char* who) {
    if (thresholds.size() != 1 || thresholds[0] != threshold) *this = confusion({threshold});
    update(y_true, y_pred, w, class_id, who);
  }
  void reset() {
    for (auto* v : {&tp, &fp, &tn, &fn}) std::fill(v->begin(), v->end(), 0.0);
  }
};
inline double divide_no_nan(double a, double b) { return b == 0 ? 0.0 : a / b; }
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

/// @brief keras.metrics.TopKCategoricalAccuracy(k=5) (one-hot labels).
struct TopKCategoricalAccuracy {
  std::string name = "top_k_categorical_accuracy";
  std::size_t k = 5;
  CTFLOW_KERAS_MEAN_METRIC(detail::top_k_fn{k})
  /// @brief The fraction so far.
  double result() const { return mean.result(); }
};
/// @brief keras.metrics.SparseTopKCategoricalAccuracy(k=5) (integer labels).
struct SparseTopKCategoricalAccuracy {
  std::string name = "sparse_top_k_categorical_accuracy";
  std::size_t k = 5;
  CTFLOW_KERAS_MEAN_METRIC(detail::sparse_top_k_fn{k})
  /// @brief The fraction so far.
  double result() const { return mean.result(); }
};

#undef CTFLOW_KERAS_MEAN_METRIC

/// The update_state of a metric with sample weights one per sample or per element: both forms
/// call its update(y_true, y_pred, weights or null).
#define CTFLOW_KERAS_WEIGHTED_UPDATE                                                                                   \
  /** @brief Adds a batch (sample weights one per sample or per element). */                                          \
  template <Expression Y, Expression P> void update_state(const Y& y_true, const P& y_pred) {                          \
    update(y_true, y_pred, static_cast<const Tensor<float, Shape<dyn>>*>(nullptr));                                    \
  }                                                                                                                    \
  template <Expression Y, Expression P, Expression W> void update_state(const Y& y_true, const P& y_pred, const W& sample_weight) { \
    update(y_true, y_pred, &sample_weight);                                                                            \
  }

/// @brief keras.metrics.Precision(thresholds=0.5, class_id): true positives over predicted
/// positives (y_pred > threshold; y_true not 0 is a positive), weighted.
struct Precision {
  std::string name = "precision";
  double thresholds = 0.5;
  std::optional<std::size_t> class_id{};
  detail::confusion counts{};
  CTFLOW_KERAS_WEIGHTED_UPDATE
  /// @brief The precision so far (0 before any positive prediction).
  double result() const { return detail::divide_no_nan(counts.tp[0], counts.tp[0] + counts.fp[0]); }
  /// @brief Starts again.
  void reset_state() { counts.reset(); }

 private:
  template <class Y, class P, class W> void update(const Y& y, const P& p, const W* w) { counts.update_at(thresholds, y, p, w, class_id, "Precision"); }
};
/// @brief keras.metrics.Recall(thresholds=0.5, class_id): true positives over positives.
struct Recall {
  std::string name = "recall";
  double thresholds = 0.5;
  std::optional<std::size_t> class_id{};
  detail::confusion counts{};
  CTFLOW_KERAS_WEIGHTED_UPDATE
  /// @brief The recall so far (0 before any positive).
  double result() const { return detail::divide_no_nan(counts.tp[0], counts.tp[0] + counts.fn[0]); }
  /// @brief Starts again.
  void reset_state() { counts.reset(); }

 private:
  template <class Y, class P, class W> void update(const Y& y, const P& p, const W* w) { counts.update_at(thresholds, y, p, w, class_id, "Recall"); }
};

namespace detail {
/// FBetaScore's counts: per class (or, averaged "micro", over all of them) the weighted true
/// positives, false positives, false negatives and positives, as Keras's fbeta_score.py counts them.
struct fbeta_counts {
  std::vector<double> tp, fp, fn, positives;
  template <class Y, class P, class W>
  void update(const Y& y_true, const P& y_pred, const W* w, const std::optional<std::string>& average, std::optional<double> threshold, const char* who) {
    static_assert(rank_v<P> == 2 && rank_v<Y> == 2, "ctflow::keras::metrics: FBetaScore takes y_true and y_pred of shape [batch, classes]");
    check(average, threshold, who);
    const auto y = host_values(y_true), p = host_values(y_pred);
    if (y.size() != p.size()) throw shape_error(std::string("ctflow::keras::metrics::") + who + ": y_true has " + std::to_string(y.size()) + " values, y_pred " + std::to_string(p.size()));
    const std::size_t classes = y_pred.dims()[1], rows = classes ? p.size() / classes : 0;
    const auto weight = element_weights(w, p.size(), who);
    const bool micro = average && *average == "micro";
    if (tp.empty()) tp = fp = fn = positives = std::vector<double>(micro ? 1 : classes, 0.0);
    if (!micro && tp.size() != classes)
      throw shape_error(std::string("ctflow::keras::metrics::") + who + ": " + std::to_string(classes) + " classes after " + std::to_string(tp.size()));
    for (std::size_t r = 0; r < rows; ++r) {
      // Without a threshold, the row's largest prediction (not 0) is the predicted class.
      double top = p[r * classes];
      for (std::size_t c = 1; c < classes; ++c) top = std::max(top, p[r * classes + c]);
      for (std::size_t c = 0; c < classes; ++c) {
        const std::size_t i = r * classes + c, k = micro ? 0 : c;
        const double predicted = threshold ? double(p[i] > *threshold) : double(p[i] >= top && std::abs(p[i]) > 1e-9);
        tp[k] += weight[i] * predicted * y[i];
        fp[k] += weight[i] * predicted * (1 - y[i]);
        fn[k] += weight[i] * (1 - predicted) * y[i];
        positives[k] += weight[i] * y[i];
      }
    }
  }
  /// Each count's score (one for "micro").
  std::vector<double> scores(double beta) const {
    constexpr double eps = 1e-7;
    std::vector<double> out(tp.size());
    for (std::size_t k = 0; k < tp.size(); ++k) {
      const double precision = tp[k] / (tp[k] + fp[k] + eps), recall = tp[k] / (tp[k] + fn[k] + eps);
      out[k] = precision * recall / (beta * beta * precision + recall + eps) * (1 + beta * beta);
    }
    return out;
  }
  /// The score as average asks: the mean ("micro", "macro") or the positives' weighted sum ("weighted").
  double result(const std::optional<std::string>& average, double beta, const char* who) const {
    if (!average)
      throw value_error(std::string("ctflow::keras::metrics::") + who + ": average=None gives one score per class (result_per_class()); give average \"micro\", "
                        "\"macro\" or \"weighted\" for one number");
    const auto s = scores(beta);
    if (s.empty()) return 0.0;
    if (*average == "weighted") {
      const double total = std::accumulate(positives.begin(), positives.end(), 0.0) + 1e-7;
      double sum = 0;
      for (std::size_t k = 0; k < s.size(); ++k) sum += s[k] * positives[k] / total;
      return sum;
    }
    return std::accumulate(s.begin(), s.end(), 0.0) / double(s.size());
  }
  static void check(const std::optional<std::string>& average, std::optional<double> threshold, const char* who) {
    if (average && *average != "micro" && *average != "macro" && *average != "weighted")
      throw value_error(std::string("ctflow::keras::metrics::") + who + ": average is none, \"micro\", \"macro\" or \"weighted\", not \"" + *average + "\"");
    if (threshold && (*threshold <= 0 || *threshold > 1))
      throw value_error(std::string("ctflow::keras::metrics::") + who + ": threshold must be in (0, 1], got " + std::to_string(*threshold));
  }
  void reset() { tp.clear(), fp.clear(), fn.clear(), positives.clear(); }
};
}  // namespace detail

/// The members FBetaScore and F1Score share: average (none: a score per class; "micro",
/// "macro", "weighted"), threshold (none: each row's largest prediction is its class), the
/// weighted update, the results.
#define CTFLOW_KERAS_FBETA_MEMBERS(CLASS)                                                                              \
  std::optional<std::string> average{};                                                                                \
  std::optional<double> threshold{};                                                                                   \
  CTFLOW_KERAS_WEIGHTED_UPDATE                                                                                         \
  /** @brief The score per class so far (average none; one number for "micro"). */                                   \
  std::vector<double> result_per_class() const { return counts.scores(score_beta()); }                              \
  /** @brief The averaged score so far (average "micro", "macro" or "weighted"). */                                  \
  double result() const { return counts.result(average, score_beta(), CLASS); }                                      \
  /** @brief Starts again. */                                                                                          \
  void reset_state() { counts.reset(); }                                                                              \
  /** @brief The weighted counts so far. */                                                                           \
  detail::fbeta_counts counts{};                                                                                       \
                                                                                                                       \
 private:                                                                                                              \
  template <class Y, class P, class W> void update(const Y& y, const P& p, const W* w) { counts.update(y, p, w, average, threshold, CLASS); }

/// @brief keras.metrics.FBetaScore(average=None, beta=1.0, threshold=None): the weighted
/// harmonic mean of precision and recall, recall beta times as important, over y_true and y_pred
/// of shape [batch, classes] (one-hot or multi-label).
struct FBetaScore {
  std::string name = "fbeta_score";
  double beta = 1.0;
  CTFLOW_KERAS_FBETA_MEMBERS("FBetaScore")
  /// @brief beta, checked.
  double score_beta() const {
    if (!(beta > 0)) throw value_error("ctflow::keras::metrics::FBetaScore: beta must be > 0, got " + std::to_string(beta));
    return beta;
  }
};
/// @brief keras.metrics.F1Score(average=None, threshold=None): FBetaScore with beta 1.
struct F1Score {
  std::string name = "f1_score";
  CTFLOW_KERAS_FBETA_MEMBERS("F1Score")
  /// @brief beta: 1.
  static constexpr double score_beta() { return 1.0; }
};
#undef CTFLOW_KERAS_FBETA_MEMBERS

/// @brief keras.metrics.AUC(num_thresholds=200, curve="ROC", summation_method="interpolation",
/// from_logits=False): the area under the ROC or precision-recall curve, from the confusion
/// counts at num_thresholds thresholds evenly spread over [0, 1] (single-label: every element
/// of y_pred is a prediction).
struct AUC {
  std::string name = "auc";
  std::size_t num_thresholds = 200;
  /// @brief "ROC" or "PR".
  std::string curve = "ROC";
  /// @brief "interpolation", "minoring" or "majoring".
  std::string summation_method = "interpolation";
  bool from_logits = false;
  detail::confusion counts{{}};
  CTFLOW_KERAS_WEIGHTED_UPDATE
  /// @brief The area so far.
  double result() const {
    const std::size_t n = counts.thresholds.size();
    if (n < 2) return 0.0;
    const auto& tp = counts.tp;
    const auto& fp = counts.fp;
    const auto& tn = counts.tn;
    const auto& fn = counts.fn;
    double area = 0;
    if (curve == "PR" && summation_method == "interpolation") {
      // Keras's interpolate_pr_auc (Davis & Goadrich).
      for (std::size_t i = 0; i + 1 < n; ++i) {
        const double dtp = tp[i] - tp[i + 1], p0 = tp[i] + fp[i], p1 = tp[i + 1] + fp[i + 1];
        const double slope = detail::divide_no_nan(dtp, std::max(p0 - p1, 0.0));
        const double intercept = tp[i + 1] - slope * p1;
        const double ratio = p0 > 0 && p1 > 0 ? detail::divide_no_nan(p0, std::max(p1, 0.0)) : 1.0;
        area += detail::divide_no_nan(slope * (dtp + intercept * std::log(ratio)), std::max(tp[i + 1] + fn[i + 1], 0.0));
      }
      return area;
    }
    std::vector<double> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double recall = detail::divide_no_nan(tp[i], tp[i] + fn[i]);
      if (curve == "ROC") {
        x[i] = detail::divide_no_nan(fp[i], fp[i] + tn[i]);
        y[i] = recall;
      } else {
        x[i] = recall;
        y[i] = detail::divide_no_nan(tp[i], tp[i] + fp[i]);
      }
    }
    for (std::size_t i = 0; i + 1 < n; ++i) {
      const double height = summation_method == "interpolation" ? (y[i] + y[i + 1]) / 2
                            : summation_method == "minoring"     ? std::min(y[i], y[i + 1])
                                                                 : std::max(y[i], y[i + 1]);
      area += (x[i] - x[i + 1]) * height;
    }
    return area;
  }
  /// @brief Starts again.
  void reset_state() { counts.reset(); }

 private:
  template <class Y, class P, class W> void update(const Y& y, const P& p, const W* w) {
    if (curve != "ROC" && curve != "PR") throw value_error("ctflow::keras::metrics::AUC: curve must be \"ROC\" or \"PR\"; got \"" + curve + "\"");
    if (summation_method != "interpolation" && summation_method != "minoring" && summation_method != "majoring")
      throw value_error("ctflow::keras::metrics::AUC: summation_method must be \"interpolation\", \"minoring\" or \"majoring\"; got \"" + summation_method + "\"");
    if (num_thresholds < 2) throw value_error("ctflow::keras::metrics::AUC: num_thresholds must be above 1; got " + std::to_string(num_thresholds));
    if (counts.thresholds.size() != num_thresholds) {
      // Keras's thresholds: -epsilon, (i + 1) / (n - 1) for i < n - 2 (in float32), 1 + epsilon.
      std::vector<double> t{0.0 - 1e-7};
      for (std::size_t i = 0; i + 2 < num_thresholds; ++i) t.push_back(double(float(double(i + 1) / double(num_thresholds - 1))));
      t.push_back(1.0 + 1e-7);
      counts = detail::confusion(std::move(t));
    }
    if (from_logits) counts.update(y, sigmoid(p), w, std::nullopt, "AUC");
    else counts.update(y, p, w, std::nullopt, "AUC");
  }
};

/// @brief keras.metrics.MeanIoU(num_classes, ignore_class, sparse_y_true=True,
/// sparse_y_pred=True): the mean over classes of the intersection over union of the weighted
/// confusion matrix (classes that never occur are left out). As Keras's (its dtype is int),
/// weights count truncated to integers, and labels or predictions outside [0, num_classes)
/// count for nothing (segmentation's void label 255).
struct MeanIoU {
  std::size_t num_classes = 2;
  std::string name = "mean_iou";
  std::optional<std::int64_t> ignore_class{};
  bool sparse_y_true = true;
  bool sparse_y_pred = true;
  /// @brief The confusion matrix, true class by predicted class.
  std::vector<double> matrix{};
  CTFLOW_KERAS_WEIGHTED_UPDATE
  /// @brief The mean intersection over union so far.
  double result() const {
    if (matrix.size() != num_classes * num_classes) return 0.0;
    double sum = 0, valid = 0;
    for (std::size_t c = 0; c < num_classes; ++c) {
      double row = 0, col = 0;
      for (std::size_t k = 0; k < num_classes; ++k) {
        row += matrix[c * num_classes + k];
        col += matrix[k * num_classes + c];
      }
      const double tp = matrix[c * num_classes + c], denominator = row + col - tp;
      valid += denominator != 0;
      sum += detail::divide_no_nan(tp, denominator);
    }
    return detail::divide_no_nan(sum, valid);
  }
  /// @brief Starts again.
  void reset_state() { std::fill(matrix.begin(), matrix.end(), 0.0); }

 private:
  template <class E> std::vector<double> ids(const E& e, bool sparse) const {
    if (sparse) return detail::host_values(e);
    return detail::host_values(argmax<-1>(e));
  }
  template <class Y, class P, class W> void update(const Y& y_true, const P& y_pred, const W* w) {
    if (matrix.size() != num_classes * num_classes) matrix.assign(num_classes * num_classes, 0.0);
    const auto y = ids(y_true, sparse_y_true), p = ids(y_pred, sparse_y_pred);
    if (y.size() != p.size()) throw shape_error("ctflow::keras::metrics::MeanIoU: " + std::to_string(y.size()) + " labels for " + std::to_string(p.size()) + " predictions");
    const auto weight = detail::element_weights(w, p.size(), "MeanIoU");
    for (std::size_t i = 0; i < y.size(); ++i) {
      const auto t = std::int64_t(y[i]), q = std::int64_t(p[i]);
      const auto in = [&](std::int64_t c) { return c >= 0 && std::size_t(c) < num_classes; };
      if (!in(t) || !in(q) || (ignore_class && t == *ignore_class)) continue;
      matrix[std::size_t(t) * num_classes + std::size_t(q)] += std::trunc(weight[i]);
    }
  }
};

#undef CTFLOW_KERAS_WEIGHTED_UPDATE

}  // namespace ctflow::keras::metrics
