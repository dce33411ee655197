// What the Keras tests share: reading a case that tests/keras/generate.py wrote with Keras 3,
// running the same layer in ctflow with the same weights, and comparing outputs and gradients.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include <ctflow/io.hpp>
#include <ctflow/keras.hpp>

#include "../unit/test_files.hpp"

namespace keras_check {

using namespace ctflow;

inline std::string data_file(const std::string& relative) { return std::string(CTFLOW_KERAS_DATA) + "/" + relative; }

/// A read-only view of tensor t.
template <class S> TensorView<const float, S> view(const Tensor<float, S>& t) { return TensorView<const float, S>(t.data(), t.dims()); }

/// A model's summary() at Keras's width in a pipe (76 columns), as text.
template <class Model> std::string summary_of(Model& model) {
  std::string text;
  model.summary({.line_length = 76, .print_fn = [&](const std::string& s) { text = s; }});
  return text;
}

/// Whether two lists of weights (get_weights()) are the same, value for value.
template <class T> bool same_weights(const std::vector<keras::weight_value<T>>& a, const std::vector<keras::weight_value<T>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].shape != b[i].shape || a[i].values != b[i].values) return false;
  return true;
}

/// A path for a file named name in this process's scratch directory (/tmp/ctflow_keras_test_XXXXXX,
/// removed when the process ends unless CTFLOW_KEEP_TEST_FILES is set: test_files::remove_at_exit).
inline std::string scratch(const std::string& name) {
  static const std::string dir = test_files::temp_dir("ctflow_keras_test");
  return dir + "/" + name;
}

/// Every trainable weight's gradient of the model's last backward pass against Keras's dw<i> in f
/// (i: the weight's index among all weights): the largest difference, relative to the largest
/// expected magnitude (at least scale_floor), below tolerance; and no other gradient.
template <class Model> void check_gradients(Model& model, const io::safetensors::File& f, double tolerance = 2e-5, double scale_floor = 1) {
  const auto all = model.get_weights();
  const auto grads = model.gradients();
  std::size_t trainable = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::string key = "dw" + std::to_string(i);
    if (!f.contains(key)) continue;
    INFO("weight " << i);
    REQUIRE(trainable < grads.size());
    std::vector<float> expected(all[i].values.size());
    f.read_into(key, expected.data());
    const auto g = grads[trainable++];
    double diff = 0, scale = scale_floor;
    for (std::size_t k = 0; k < expected.size(); ++k) {
      diff = std::max(diff, std::abs(double(g(k)) - double(expected[k])));
      scale = std::max(scale, std::abs(double(expected[k])));
    }
    CHECK(diff / scale < tolerance);
  }
  CHECK(trainable == grads.size());
}

/// The largest difference between a and b, relative to b's largest magnitude (at least 1).
template <class A, class B> double relative_difference(const A& a, const B& b) {
  REQUIRE(a.dims() == b.dims());
  double diff = 0, scale = 1;
  const Tensor<value_t<A>, shape_t<A>> ta(a);
  const Tensor<value_t<B>, shape_t<B>> tb(b);
  for (std::size_t i = 0; i < ta.size(); ++i) {
    diff = std::max(diff, std::abs(double(ta.data()[i]) - double(tb.data()[i])));
    scale = std::max(scale, std::abs(double(tb.data()[i])));
  }
  return diff / scale;
}

/// Runs layer Spec (built for inputs of dtype T and shape In) on the case's x with the case's
/// weights: its output must equal Keras's y; with `gradients`, after a training call, the
/// gradients of sum(y * dy) with respect to x and to the trainable weights must equal Keras's.
template <class T, class In, class Spec> void check_layer(const std::string& name, const Spec& spec, bool training, bool gradients,
                                                         double tolerance = 2e-5) {
  INFO("case " << name);
  const io::safetensors::File f(data_file("layers/" + name + ".safetensors"));
  using L = typename Spec::template built<T, In>;
  using TOut = typename L::value_type;
  keras::layer_instance<L> layer(spec);
  const auto x = f.get<T, In>("x");
  std::apply(
      [&](auto&... w) {
        std::size_t i = 0;
        ((f.read("w" + std::to_string(i++), static_cast<Tensor<TOut, shape_t<decltype(w)>>&>(w))), ...);
      },
      layer.layer.weights());
  const typename keras::layer_instance<L>::input_view xv(x.data(), x.dims());
  const auto y = layer.forward(xv, training);
  const auto expected = f.get<TOut, typename L::output_shape>("y");
  CHECK(relative_difference(y, expected) < tolerance);
  if (training) {
    // The moving statistics the call left (BatchNormalization).
    std::size_t m = 0;
    std::apply([&](auto&... w) { ([&] { if (!w.trainable() && f.contains("m" + std::to_string(m))) {
                                           CHECK(relative_difference(w, f.get<TOut, shape_t<decltype(w)>>("m" + std::to_string(m))) < tolerance);
                                           ++m;
                                         } }(), ...); },
               layer.layer.weights());
  }
  if (!gradients) return;
  if (!training) layer.forward(xv, true);
  const auto dy = f.get<TOut, typename L::output_shape>("dy");
  auto dx = layer.backward(typename keras::layer_instance<L>::output_view(dy.data(), dy.dims()));
  if (f.contains("dx")) {
    REQUIRE(dx.has_value());
    CHECK(relative_difference(*dx, f.get<T, In>("dx")) < tolerance);
  }
  std::size_t i = 0;
  layer.each_gradient([&](auto& w, const auto* g) {
    const std::string key = "dw" + std::to_string(i++);
    if (!f.contains(key)) return;
    INFO("weight " << w.name());
    REQUIRE(g != nullptr);
    CHECK(relative_difference(*g, f.get<TOut, shape_t<std::remove_cvref_t<decltype(w)>>>(key)) < tolerance);
  });
}

}  // namespace keras_check
