// The metrics against Keras 3: three batches each, with sample weights, then reset_state
// (tests/keras/generate_metrics.py wrote data/metrics.safetensors).
#include "keras_check.hpp"

#include <ctflow/keras/losses.hpp>
#include <ctflow/keras/metrics.hpp>

using namespace ctflow;

namespace {

const io::safetensors::File& metric_reference() {
  static const io::safetensors::File f(keras_check::data_file("metrics.safetensors"));
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
  check_metric("top_k", metrics::TopKCategoricalAccuracy{.k = 2},
               [&](auto& m, const std::string& b) { m.update_state(m4(b + "/one_hot"), m4(b + "/logits"), weights(b)); });
  check_metric("sparse_top_k", metrics::SparseTopKCategoricalAccuracy{.k = 2},
               [&](auto& m, const std::string& b) { m.update_state(labels(b), m4(b + "/logits"), weights(b)); });
  check_metric("precision", metrics::Precision{.thresholds = 0.4},
               [&](auto& m, const std::string& b) { m.update_state(m4(b + "/binary"), m4(b + "/probs"), weights(b)); });
  check_metric("precision_class", metrics::Precision{.class_id = 1}, [&](auto& m, const std::string& b) { m.update_state(m4(b + "/binary"), m4(b + "/probs")); });
  check_metric("recall", metrics::Recall{.thresholds = 0.4}, [&](auto& m, const std::string& b) { m.update_state(m4(b + "/binary"), m4(b + "/probs"), weights(b)); });
  check_metric("auc_roc", metrics::AUC{.num_thresholds = 50}, [&](auto& m, const std::string& b) { m.update_state(m4(b + "/binary"), m4(b + "/probs"), weights(b)); });
  check_metric("auc_pr", metrics::AUC{.curve = "PR"}, [&](auto& m, const std::string& b) { m.update_state(m4(b + "/binary"), m4(b + "/probs"), weights(b)); });
  check_metric("auc_pr_minoring", metrics::AUC{.num_thresholds = 20, .curve = "PR", .summation_method = "minoring"},
               [&](auto& m, const std::string& b) { m.update_state(m4(b + "/binary"), m4(b + "/probs")); });
  check_metric("auc_logits", metrics::AUC{.from_logits = true}, [&](auto& m, const std::string& b) { m.update_state(m4(b + "/binary"), m4(b + "/y")); });
  check_metric("mean_iou", metrics::MeanIoU{.num_classes = 4},
               [&](auto& m, const std::string& b) { m.update_state(labels(b), metric_tensor<V, std::int32_t>(b + "/predicted", {6}), weights(b)); });
  check_metric("mean_iou_ignore", metrics::MeanIoU{.num_classes = 4, .ignore_class = 0, .sparse_y_pred = false},
               [&](auto& m, const std::string& b) { m.update_state(labels(b), m4(b + "/logits")); });
  check_metric("f1_micro", metrics::F1Score{.average = "micro", .threshold = 0.5},
               [&](auto& m, const std::string& b) { m.update_state(m4(b + "/binary"), m4(b + "/probs"), weights(b)); });
  check_metric("f1_macro", metrics::F1Score{.average = "macro"}, [&](auto& m, const std::string& b) { m.update_state(m4(b + "/one_hot"), m4(b + "/probs")); });
  check_metric("f1_weighted", metrics::F1Score{.average = "weighted", .threshold = 0.4},
               [&](auto& m, const std::string& b) { m.update_state(m4(b + "/binary"), m4(b + "/probs"), weights(b)); });
  check_metric("fbeta_macro", metrics::FBetaScore{.beta = 2.0, .average = "macro", .threshold = 0.5},
               [&](auto& m, const std::string& b) { m.update_state(m4(b + "/binary"), m4(b + "/probs")); });
  {
    // average none: a score per class (the row's largest logit its predicted class).
    metrics::F1Score per_class;
    for (const std::string b : {"0", "1", "2"}) {
      per_class.update_state(m4(b + "/one_hot"), m4(b + "/logits"), weights(b));
      const auto scores = per_class.result_per_class();
      const auto expected = metric_tensor<Shape<4>>("f1_per_class/" + b, {4});
      REQUIRE(scores.size() == 4);
      for (std::size_t k = 0; k < 4; ++k) CHECK(scores[k] == Approx(expected(k)).epsilon(1e-6).margin(1e-7));
    }
    CHECK_THROWS_WITH(per_class.result(), Catch::Contains("average=None gives one score per class (result_per_class())"));
    CHECK_THROWS_WITH((metrics::F1Score{.average = "mean"}.update_state(m4("0/one_hot"), m4("0/probs"))), Catch::Contains("not \"mean\""));
  }
  // Classes outside [0, num_classes) count for nothing, as in Keras.
  metrics::MeanIoU two{.num_classes = 2};
  Tensor<std::int32_t, Shape<3>> truth, predicted;
  truth(1) = predicted(1) = predicted(2) = 1;
  truth(2) = 255;
  two.update_state(truth, predicted);
  CHECK(two.result() == 1.0);
  CHECK_THROWS_WITH(metrics::AUC{.curve = "roc"}.update_state(m4("0/binary"), m4("0/probs")), Catch::Contains("curve must be \"ROC\" or \"PR\""));
  metrics::Mean mean;
  CHECK_THROWS_WITH(mean.update_state(values("0"), Tensor<float, V>({5})), Catch::Contains("ctflow::keras::metrics::mean: sample_weight"));
}
