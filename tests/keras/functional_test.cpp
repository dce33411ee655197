// Keras's functional API (two inputs and a shared layer, a residual block, a model called as a
// layer) against Keras 3's summaries, weight files, outputs and gradients; custom layers (own
// variables and sub-layers, tracked without a list) against the built-in layers they compose.
#include "keras_check.hpp"

#include <filesystem>

using namespace ctflow;
using keras_check::check_gradients;
using keras_check::data;
using keras_check::read_text;
using keras_check::relative_difference;
using keras_check::scratch;
using keras_check::summary_of;
namespace layers = keras::layers;
namespace activations = keras::activations;

namespace {

template <class S> TensorView<const float, S> view(const Tensor<float, S>& t) { return TensorView<const float, S>(t.data(), t.dims()); }

/// A training call of model on x gives its inference output, and weight `statistic` (a moving
/// statistic) keeps its value in w.
template <class Model, class X> void check_runs_as_inference(Model& model, const X& x, const std::vector<keras::weight_value<float>>& w, std::size_t statistic) {
  using Y = Tensor<float, typename Model::output_shape>;
  const Y inference(model(x));
  const Y training(model(x, true));
  CHECK(relative_difference(training, inference) == 0);
  CHECK(model.get_weights()[statistic].values == w[statistic].values);
}

auto two_inputs_model() {
  keras::Input<float, Shape<4>> a{.name = "a"}, b{.name = "b"};
  layers::Dense<8> shared{.name = "shared"};
  auto sa = shared(a), sb = shared(b);
  auto s = layers::Add{}(sa, sb);
  auto c = layers::Concatenate<>{}(s, sa);
  auto out = layers::Dense<1>{}(c);
  return keras::Model(std::tuple{a, b}, out);
}

/// A residual block (Conv2D, BatchNormalization, ReLU, Conv2D, Add) and a pooled Dense head, as
/// generate.py's "residual"; made after clear_session, so its layers have Keras's names.
auto residual_model() {
  keras::backend::clear_session();
  keras::Input<float, Shape<6, 6, 3>> inputs;
  auto x = layers::Conv2D<4, 3, layers::same>{}(inputs);
  auto y = layers::Conv2D<4, 3, layers::same>{}(layers::ReLU{}(layers::BatchNormalization{}(x)));
  auto out = layers::Dense<3>{}(layers::GlobalAveragePooling2D{}(layers::Add{}(x, y)));
  return keras::Model(inputs, out);
}

/// MobileNetV2's inverted residual block (expand, depthwise, project, Add) with a head, as
/// generate.py's "mobile_block".
auto mobile_block_model() {
  keras::backend::clear_session();
  keras::Input<float, Shape<8, 8, 4>> inputs;
  auto expand = layers::Conv2D<8, 1, layers::use_bias<false>>{}(inputs);
  auto expand_relu = layers::ReLU{.max_value = 6}(layers::BatchNormalization{}(expand));
  auto depthwise = layers::DepthwiseConv2D<3, layers::same, layers::use_bias<false>>{}(expand_relu);
  auto depthwise_relu = layers::ReLU{.max_value = 6}(layers::BatchNormalization{}(depthwise));
  auto project = layers::BatchNormalization{}(layers::Conv2D<4, 1, layers::use_bias<false>>{}(depthwise_relu));
  auto out = layers::Dense<3>{}(layers::GlobalAveragePooling2D{}(layers::Add{}(inputs, project)));
  return keras::Model(inputs, out);
}

}  // namespace

TEST_CASE("functional: .keras archives Keras wrote of a residual block and of a MobileNetV2 block load and reproduce Keras's outputs") {
  {
    auto model = residual_model();
    model.load_weights(data("weights/residual.keras"));
    const io::safetensors::File f(data("weights/residual.safetensors"));
    CHECK(relative_difference(model(view(f.get<float, Shape<dyn, 6, 6, 3>>("x"))), f.get<float, Shape<dyn, 3>>("y")) < 2e-5);
  }
  auto model = mobile_block_model();
  CHECK(summary_of(model) == read_text(data("summaries/mobile_block.txt")));
  const io::safetensors::File f(data("weights/mobile_block.safetensors"));
  const auto x = f.get<float, Shape<dyn, 8, 8, 4>>("x");
  for (const char* file : {"weights/mobile_block.keras", "weights/mobile_block.weights.h5"}) {
    INFO(file);
    auto m = mobile_block_model();
    m.load_weights(data(file));
    CHECK(relative_difference(m(view(x)), f.get<float, Shape<dyn, 3>>("y")) < 2e-5);
  }
}

TEST_CASE("functional: a .keras archive whose weights member is damaged is refused by its CRC-32, and the model keeps its weights") {
  auto model = residual_model();
  const auto before = model.get_weights();
  std::string bytes = keras_check::read_bytes(data("weights/residual.keras"));
  // 64 bytes flipped inside model.weights.h5's data (the archive's last member): the zip is
  // still well formed, only the member's CRC-32 tells.
  const std::size_t member = bytes.rfind("model.weights.h5", bytes.find("PK\x01\x02"));
  REQUIRE(member != std::string::npos);
  for (std::size_t i = member + 4096; i < member + 4096 + 64; ++i) bytes[i] = char(~bytes[i]);
  const std::string path = scratch("damaged.keras");
  keras_check::write_bytes(path, bytes);
  CHECK_THROWS_WITH(model.load_weights(path), Catch::Contains("bad CRC-32 for zip member 'model.weights.h5'"));
  CHECK(keras_check::same_weights(model.get_weights(), before));
}

TEST_CASE("functional: two inputs, a shared layer, Add and Concatenate: Keras's summary, weights, outputs and gradients") {
  keras::backend::clear_session();
  auto model = two_inputs_model();
  CHECK(model.name == "functional");
  CHECK(summary_of(model) == read_text(data("summaries/functional.txt")));
  CHECK(model.count_params() == 57);
  model.load_weights(data("weights/functional.weights.h5"));
  const io::safetensors::File f(data("weights/functional.safetensors"));
  const auto x0 = f.get<float, Shape<dyn, 4>>("x0"), x1 = f.get<float, Shape<dyn, 4>>("x1");
  const auto y = model(std::tuple{view(x0), view(x1)});
  CHECK(relative_difference(y, f.get<float, Shape<dyn, 1>>("y")) < 2e-5);
  // Training: the shared layer's gradient is the sum over its two calls.
  model(std::tuple{view(x0), view(x1)}, true);
  const auto dy = f.get<float, Shape<dyn, 1>>("dy");
  const auto [dx0, dx1] = model.backward(view(dy), true);
  check_gradients(model, f);
  REQUIRE((dx0 && dx1));
  CHECK(relative_difference(*dx0, f.get<float, Shape<dyn, 4>>("dx0")) < 2e-5);
  CHECK(relative_difference(*dx1, f.get<float, Shape<dyn, 4>>("dx1")) < 2e-5);
  // The shared layer is one layer of the model, its weights listed once.
  CHECK(model.trainable_variables().size() == 4);
  CHECK(model.trainable_variables()[0].path == "shared/kernel");
}

TEST_CASE("functional: a residual block with BatchNormalization; weight files both ways; a copy is the same model") {
  auto model = residual_model();
  CHECK(summary_of(model) == read_text(data("summaries/residual.txt")));
  model.load_weights(data("weights/residual.weights.h5"));
  const io::safetensors::File f(data("weights/residual.safetensors"));
  const auto xs = f.get<float, Shape<dyn, 6, 6, 3>>("x");
  CHECK(relative_difference(model(view(xs)), f.get<float, Shape<dyn, 3>>("y")) < 2e-5);
  model(view(xs), true);
  const auto dy = f.get<float, Shape<dyn, 3>>("dy");
  const auto [dx] = model.backward(view(dy), true);
  check_gradients(model, f);
  REQUIRE(dx);
  CHECK(relative_difference(*dx, f.get<float, Shape<dyn, 6, 6, 3>>("dx")) < 2e-5);
  // Saved by ctflow, read back into a copy of the graph's weights.
  const auto before = model.get_weights();
  const auto expected = eval(model(view(xs)));
  const std::string path = scratch("residual.weights.h5");
  model.save_weights(path);
  auto copy = model;  // the same model
  auto w = copy.get_weights();
  for (auto& t : w) std::fill(t.values.begin(), t.values.end(), 0.f);
  copy.set_weights(w);
  CHECK(relative_difference(model(view(xs)), expected) > 0);
  model.load_weights(path);
  CHECK(relative_difference(model(view(xs)), expected) == 0);
  CHECK(copy.get_weights()[0].values == before[0].values);
}

TEST_CASE("functional: a model called as a layer of another: Keras's summary and nested weight file; freezing it") {
  keras::backend::clear_session();
  keras::Input<float, Shape<3>> ii;
  keras::Model inner(ii, layers::Dense<5>{}(layers::Dense<4, activations::tanh>{}(ii)));
  inner.name = "inner";
  keras::Input<float, Shape<3>> oi;
  keras::Model outer(oi, layers::Dense<2>{}(inner(oi)));
  outer.name = "outer";
  CHECK(summary_of(outer) == read_text(data("summaries/nested.txt")));
  outer.load_weights(data("weights/nested.weights.h5"));
  const io::safetensors::File f(data("weights/nested.safetensors"));
  const auto x = f.get<float, Shape<dyn, 3>>("x");
  CHECK(relative_difference(outer(view(x)), f.get<float, Shape<dyn, 2>>("y")) < 2e-5);
  outer(view(x), true);
  const auto dy = f.get<float, Shape<dyn, 2>>("dy");
  outer.backward(view(dy));
  check_gradients(outer, f);
  CHECK(outer.trainable_variables()[0].path == "inner/dense/kernel");
  // The inner model is the outer's layer: freezing it takes its weights out of training.
  inner.trainable = false;
  CHECK(outer.trainable_variables().size() == 2);
  CHECK(outer.non_trainable_variables().size() == 4);
  outer(view(x), true);
  outer.backward(view(dy));
  CHECK(outer.gradients().size() == 2);
}

TEST_CASE("functional: errors name the layers: a disconnected graph, a name used twice, a shared layer called on another shape") {
  keras::backend::clear_session();
  keras::Input<float, Shape<4>> a{.name = "a"}, b{.name = "b"};
  auto out = layers::Add{}(layers::Dense<3>{}(a), layers::Dense<3>{}(b));
  CHECK_THROWS_WITH(keras::Model(a, out), Catch::Contains("graph disconnected: input b [None,4]"));
  keras::Input<float, Shape<4>> c;
  auto twice = layers::Dense<2>{.name = "same"}(layers::Dense<2>{.name = "same"}(c));
  CHECK_THROWS_WITH(keras::Model(c, twice), Catch::Contains("the name \"same\" is used by two layers"));
  layers::Dense<2> shared;
  keras::Input<float, Shape<4>> d;
  keras::Input<float, Shape<5>> e;
  shared(d);
  CHECK_THROWS_WITH(shared(e), Catch::Contains("was built for other inputs than [None,5]"));
}

namespace {

// Keras's guide's Linear layer: its own weights, made by add_weight.
template <std::size_t Units> struct Linear {
  CTFLOW_KERAS_LAYER_SPEC("Linear");
  template <class T, ShapeType In> struct built : keras::Layer<Linear, T, In> {
    Variable<T, Shape<In::extents[1], Units>> w = keras::add_weight("w", keras::initializers::RandomNormal(0.0, 0.05, 3));
    Variable<T, Shape<Units>> b = keras::add_weight("b", keras::initializers::Zeros());
    template <class X, class Training> auto call(const X& x, Training) const { return matmul(x, w) + b; }
  };
};

// Two Dense sub-layers and a Dropout whose rate comes from the layer's own spec.
struct MLPBlock {
  CTFLOW_KERAS_LAYER_SPEC("MLPBlock");
  double rate = 0.0;
  template <class T, ShapeType In> struct built : keras::Layer<MLPBlock, T, In> {
    keras::config<MLPBlock, T> config;
    keras::sublayer<layers::Dense<6, activations::relu>, T, In> dense1;
    keras::sublayer_after<decltype(dense1), layers::Dense<3>> dense2;
    template <class X, class Training> auto call(const X& x, Training training) const {
      if constexpr (training) return dense2(nn::dropout(dense1(x, training), config.rate, 7), training);
      else return dense2(dense1(x, training), training);
    }
  };
};

// One Dense sub-layer called twice (a layer shared inside a layer), and a residual connection.
struct TwiceBlock {
  CTFLOW_KERAS_LAYER_SPEC("TwiceBlock");
  template <class T, ShapeType In> struct built : keras::Layer<TwiceBlock, T, In> {
    keras::sublayer<layers::Dense<In::extents[1]>, T, In> dense;
    template <class X, class Training> auto call(const X& x, Training training) const { return dense(dense(x, training), training) + x; }
  };
};

// A Dense and a BatchNormalization: frozen, the normalization runs as in inference.
struct NormBlock {
  CTFLOW_KERAS_LAYER_SPEC("NormBlock");
  template <class T, ShapeType In> struct built : keras::Layer<NormBlock, T, In> {
    keras::sublayer<layers::Dense<4>, T, In> dense;
    keras::sublayer_after<decltype(dense), layers::BatchNormalization> norm;
    template <class X, class Training> auto call(const X& x, Training training) const { return relu(norm(dense(x, training), training)); }
  };
};

// A LSTM called twice, on x and on 2x: one layer, two calls, each keeping its own state.
struct TwoRuns {
  CTFLOW_KERAS_LAYER_SPEC("TwoRuns");
  template <class T, ShapeType In> struct built : keras::Layer<TwoRuns, T, In> {
    keras::sublayer<layers::LSTM<3, layers::return_sequences<true>>, T, In> rnn;
    template <class X, class Training> auto call(const X& x, Training training) const { return rnn(x, training) + rnn(x * T(2), training); }
  };
};

// A BatchNormalization called in inference mode whatever the call's (Keras's
// `self.norm(x, training=False)`).
struct FixedNorm {
  CTFLOW_KERAS_LAYER_SPEC("FixedNorm");
  template <class T, ShapeType In> struct built : keras::Layer<FixedNorm, T, In> {
    keras::sublayer<layers::BatchNormalization, T, In> norm;
    template <class X, class Training> auto call(const X& x, Training) const { return norm(x, keras::inference_t{}); }
  };
};

}  // namespace

TEST_CASE("custom layers: own variables and sub-layers tracked without a list, parameters counted by the compiler") {
  keras::backend::clear_session();
  using Net = keras::Sequential<keras::Input<float, Shape<5>>, Linear<4>, MLPBlock>;
  static_assert(Net::count_params() == (5 * 4 + 4) + (4 * 6 + 6) + (6 * 3 + 3));
  Net model;
  const auto vars = model.trainable_variables();
  REQUIRE(vars.size() == 6);
  CHECK(vars[0].path == "linear/w");
  CHECK(vars[1].path == "linear/b");
  CHECK(vars[2].path == "mlp_block/dense/kernel");
  CHECK(vars[5].path == "mlp_block/dense_1/bias");
  // The same network from built-in layers, with the same weights, gives the same outputs and gradients.
  keras::Sequential<keras::Input<float, Shape<5>>, layers::Dense<4>, layers::Dense<6, activations::relu>, layers::Dense<3>> plain;
  plain.set_weights(model.get_weights());
  const auto x = random_uniform<float, Shape<dyn, 5>>(9, -1, 1, {7, 5});
  CHECK(relative_difference(model(x), plain(x)) < 1e-6);
  const auto dy = random_uniform<float, Shape<dyn, 3>>(10, -1, 1, {7, 3});
  model(x, true);
  plain(x, true);
  const auto dxa = model.backward(view(dy), true);
  const auto dxb = plain.backward(view(dy), true);
  REQUIRE((dxa && dxb));
  CHECK(relative_difference(*dxa, *dxb) < 1e-6);
  const auto ga = model.gradients(), gb = plain.gradients();
  REQUIRE(ga.size() == gb.size());
  for (std::size_t i = 0; i < ga.size(); ++i)
    for (std::size_t k = 0; k < ga[i].size(); ++k) CHECK(ga[i][k] == Approx(gb[i][k]).margin(1e-6));
  // Freezing a sub-layer takes its weights out of training; weight files keep the nesting.
  model.get_layer<1>().layer.dense1.trainable = false;
  CHECK(model.trainable_variables().size() == 4);
  const std::string path = scratch("custom.weights.h5");
  model.save_weights(path);
  Net other;
  other.load_weights(path);
  CHECK(relative_difference(other(x), model(x)) == 0);
  // Its summary lists it as one layer with all its parameters.
  CHECK(summary_of(model).find("mlp_block (MLPBlock)") != std::string::npos);
}

TEST_CASE("custom layers: a sub-layer called twice sums its weights' gradients; sub-layers train when nothing before them does") {
  keras::backend::clear_session();
  // The block alone in a Sequential: the model's backward pass wants no input gradient, and the
  // sub-layer's weights get theirs all the same.
  keras::Sequential<keras::Input<float, Shape<5>>, TwiceBlock> model;
  keras::Sequential<keras::Input<float, Shape<5>>, layers::Dense<5>, layers::Dense<5>> plain;
  const auto w = model.get_weights();
  REQUIRE(w.size() == 2);
  plain.set_weights({w[0], w[1], w[0], w[1]});
  const auto x = random_uniform<float, Shape<dyn, 5>>(11, -1, 1, {6, 5});
  const auto dy = random_uniform<float, Shape<dyn, 5>>(12, -1, 1, {6, 5});
  const Tensor<float, Shape<dyn, 5>> y(model(x));
  CHECK(relative_difference(y, plain(x) + x) < 1e-6);
  model(x, true);
  plain(x, true);
  CHECK(!model.backward(view(dy)));
  const auto dxp = plain.backward(view(dy), true);
  const auto ga = model.gradients(), gb = plain.gradients();
  REQUIRE((ga.size() == 2 && gb.size() == 4));
  for (std::size_t i = 0; i < 2; ++i) {
    REQUIRE(ga[i].size() == gb[i].size());
    double sum = 0;
    for (std::size_t k = 0; k < ga[i].size(); ++k) {
      CHECK(ga[i][k] == Approx(gb[i][k] + gb[i + 2][k]).margin(1e-6));
      sum += std::abs(ga[i][k]);
    }
    CHECK(sum > 0);
  }
  // A second backward pass of the same call gives the same gradients, and the input's.
  const float g00 = ga[0][0];
  const auto dx = model.backward(view(dy), true);
  REQUIRE((dx && dxp));
  CHECK(relative_difference(*dx, *dxp + dy) < 1e-6);
  CHECK(model.gradients()[0][0] == Approx(g00).margin(1e-7));
}

TEST_CASE("custom layers: frozen, a BatchNormalization sub-layer runs as in inference and the adjoint still reaches the input") {
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<3>>, NormBlock> model;
  keras::Sequential<keras::Input<float, Shape<3>>, layers::Dense<4>, layers::BatchNormalization, layers::ReLU> plain;
  auto w = model.get_weights();
  REQUIRE(w.size() == 6);
  for (std::size_t i = 2; i < 6; ++i)  // gamma, beta, moving mean and variance away from their defaults
    for (std::size_t k = 0; k < 4; ++k) w[i].values[k] = 0.5f + 0.1f * float(i + k);
  model.set_weights(w);
  plain.set_weights(w);
  model.get_layer<0>().trainable = false;
  plain.trainable = false;
  CHECK(model.trainable_variables().empty());
  const auto x = random_uniform<float, Shape<dyn, 3>>(13, -2, 2, {8, 3});
  const auto dy = random_uniform<float, Shape<dyn, 4>>(14, -1, 1, {8, 4});
  check_runs_as_inference(model, x, w, 4);
  const Tensor<float, Shape<dyn, 4>> inference(model(x));
  model(x, true);
  plain(x, true);
  const auto dx = model.backward(view(dy), true), dxp = plain.backward(view(dy), true);
  REQUIRE((dx && dxp));
  CHECK(relative_difference(*dx, *dxp) < 1e-6);
  // Trainable again, the batch's statistics normalize and the moving ones move.
  model.get_layer<0>().trainable = true;
  const Tensor<float, Shape<dyn, 4>> trained(model(x, true));
  CHECK(relative_difference(trained, inference) > 1e-3);
  CHECK(model.get_weights()[4].values != w[4].values);
}

TEST_CASE("custom layers: shared by two calls of a functional model, or holding a LSTM called twice, each call keeps its own") {
  keras::backend::clear_session();
  {
    keras::Input<float, Shape<5>> in;
    TwiceBlock block;
    keras::Model model(in, block(block(in)));
    keras::Sequential<keras::Input<float, Shape<5>>, TwiceBlock, TwiceBlock> plain;
    const auto w = model.get_weights();
    REQUIRE(w.size() == 2);
    plain.set_weights({w[0], w[1], w[0], w[1]});
    const auto x = random_uniform<float, Shape<dyn, 5>>(15, -1, 1, {6, 5});
    const auto dy = random_uniform<float, Shape<dyn, 5>>(16, -1, 1, {6, 5});
    const Tensor<float, Shape<dyn, 5>> y(model(view(x)));
    CHECK(relative_difference(y, plain(x)) < 1e-6);
    model(view(x), true);
    plain(x, true);
    const auto [dx] = model.backward(view(dy), true);
    const auto dxp = plain.backward(view(dy), true);
    REQUIRE((dx && dxp));
    CHECK(relative_difference(*dx, *dxp) < 1e-5);
    const auto ga = model.gradients(), gb = plain.gradients();
    REQUIRE((ga.size() == 2 && gb.size() == 4));
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t k = 0; k < ga[i].size(); ++k) CHECK(ga[i][k] == Approx(gb[i][k] + gb[i + 2][k]).margin(1e-5));
  }
  {
    keras::Sequential<keras::Input<float, Shape<4, 2>>, TwoRuns> model;
    keras::Sequential<keras::Input<float, Shape<4, 2>>, layers::LSTM<3, layers::return_sequences<true>>> plain;
    plain.set_weights(model.get_weights());
    const auto x = random_uniform<float, Shape<dyn, 4, 2>>(17, -1, 1, {5, 4, 2});
    const auto dy = random_uniform<float, Shape<dyn, 4, 3>>(18, -1, 1, {5, 4, 3});
    const Tensor<float, Shape<dyn, 4, 2>> x2(x * 2.f);
    const Tensor<float, Shape<dyn, 4, 3>> y(model(x)), y1(plain(x));
    CHECK(relative_difference(y, y1 + plain(x2)) < 1e-6);
    model(x, true);
    const auto dx = model.backward(view(dy), true);
    plain(x, true);
    const auto dx1 = plain.backward(view(dy), true);
    std::vector<std::vector<float>> g1;
    for (const auto& g : plain.gradients()) g1.emplace_back(g.begin(), g.end());
    plain(x2, true);
    const auto dx2 = plain.backward(view(dy), true);
    const auto g2 = plain.gradients(), gm = model.gradients();
    REQUIRE((gm.size() == 3 && g2.size() == 3 && g1.size() == 3));
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t k = 0; k < gm[i].size(); ++k) CHECK(gm[i][k] == Approx(g1[i][k] + g2[i][k]).margin(1e-5));
    REQUIRE((dx && dx1 && dx2));
    CHECK(relative_difference(*dx, *dx1 + *dx2 * 2.f) < 1e-5);
  }
}

TEST_CASE("custom layers: a sub-layer called in inference mode in a training call runs as in inference and still trains") {
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<3>>, FixedNorm> model;
  auto w = model.get_weights();
  REQUIRE(w.size() == 4);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t k = 0; k < 3; ++k) w[i].values[k] = 0.5f + 0.1f * float(i + k);
  model.set_weights(w);
  const auto x = random_uniform<float, Shape<dyn, 3>>(19, -2, 2, {6, 3});
  const auto dy = random_uniform<float, Shape<dyn, 3>>(20, -1, 1, {6, 3});
  check_runs_as_inference(model, x, w, 2);
  const auto dx = model.backward(view(dy), true);
  REQUIRE(dx);
  // y = gamma (x - mean) / sqrt(var + epsilon) + beta, epsilon 1e-3.
  const auto g = model.gradients();
  REQUIRE(g.size() == 2);
  for (std::size_t c = 0; c < 3; ++c) {
    const double gamma = w[0].values[c], mean = w[2].values[c], s = 1 / std::sqrt(double(w[3].values[c]) + 1e-3);
    double dgamma = 0, dbeta = 0;
    for (std::size_t b = 0; b < 6; ++b) {
      CHECK((*dx)(b, c) == Approx(dy(b, c) * gamma * s).margin(1e-5));
      dgamma += dy(b, c) * (x(b, c) - mean) * s;
      dbeta += dy(b, c);
    }
    CHECK(g[0][c] == Approx(dgamma).margin(1e-5));
    CHECK(g[1][c] == Approx(dbeta).margin(1e-5));
  }
}

TEST_CASE("train::Checkpoint holds models: functional, Sequential with a custom layer, nested; a fresh model restored computes the same") {
  // A functional model with Keras's weights (moving statistics included), and a step counter.
  auto model = residual_model();
  model.load_weights(data("weights/residual.weights.h5"));
  std::int64_t step = 42;
  const std::string dir = scratch("ckpt");
  std::filesystem::create_directories(dir);
  train::Checkpoint ckpt{{"model", model}, {"step", step}};
  const std::string path = ckpt.save(dir + "/residual");
  const io::safetensors::File file(train::checkpoint_file(path));
  for (const char* key : {"model/conv2d/kernel", "model/conv2d_1/bias", "model/batch_normalization/moving_variance", "model/dense/kernel", "step"})
    CHECK(file.contains(key));
  const io::safetensors::File f(data("weights/residual.safetensors"));
  const auto x = f.get<float, Shape<dyn, 6, 6, 3>>("x");
  const Tensor<float, Shape<dyn, 3>> expected(model(view(x)));
  {
    auto fresh = residual_model();  // Glorot-initialized: other outputs
    std::int64_t fresh_step = 0;
    CHECK(relative_difference(fresh(view(x)), expected) > 0);
    train::Checkpoint restored{{"model", fresh}, {"step", fresh_step}};
    restored.restore(path).assert_consumed();
    CHECK(relative_difference(fresh(view(x)), expected) == 0);
    CHECK(fresh_step == 42);
  }
  // The keys follow the structure, not the layers' automatic names: a model built again in the
  // same session (its layers named conv2d_2, ...) restores from the same file.
  {
    keras::Input<float, Shape<6, 6, 3>> inputs;
    auto a = layers::Conv2D<4, 3, layers::same>{}(inputs);
    auto b = layers::Conv2D<4, 3, layers::same>{}(layers::ReLU{}(layers::BatchNormalization{}(a)));
    keras::Model again(inputs, layers::Dense<3>{}(layers::GlobalAveragePooling2D{}(layers::Add{}(a, b))));
    CHECK(again.trainable_variables()[0].path != model.trainable_variables()[0].path);
    std::int64_t s = 0;
    train::Checkpoint c{{"model", again}, {"step", s}};
    c.restore(path).assert_consumed();
    CHECK(relative_difference(again(view(x)), expected) == 0);
  }
  // A model whose last layer is wider: the restore is refused, and no weight changes.
  {
    keras::Input<float, Shape<6, 6, 3>> inputs;
    auto a = layers::Conv2D<4, 3, layers::same>{}(inputs);
    auto b = layers::Conv2D<4, 3, layers::same>{}(layers::ReLU{}(layers::BatchNormalization{}(a)));
    keras::Model wider(inputs, layers::Dense<5>{}(layers::GlobalAveragePooling2D{}(layers::Add{}(a, b))));
    const auto before = wider.get_weights();
    std::int64_t s = 0;
    train::Checkpoint c{{"model", wider}, {"step", s}};
    CHECK_THROWS_WITH(c.restore(path), Catch::Contains("'model/dense/kernel' has shape [4,3] in the file, [4,5] in the object"));
    CHECK(keras_check::same_weights(wider.get_weights(), before));
    CHECK(s == 0);
  }
  // A Sequential with a custom layer (its own variables and sub-layers), and a nested model.
  keras::backend::clear_session();
  using Net = keras::Sequential<keras::Input<float, Shape<5>>, Linear<4>, MLPBlock>;
  Net net, other;
  train::Checkpoint c1{{"net", net}};
  const std::string net_path = c1.save(dir + "/net");
  CHECK(io::safetensors::File(train::checkpoint_file(net_path)).contains("net/mlp_block/dense_1/bias"));
  const auto xs = random_uniform<float, Shape<dyn, 5>>(3, -1, 1, {4, 5});
  CHECK(relative_difference(other(xs), net(xs)) > 0);
  train::Checkpoint c2{{"net", other}};
  c2.restore(net_path).assert_consumed();
  CHECK(relative_difference(other(xs), net(xs)) == 0);
  keras::backend::clear_session();
  keras::Input<float, Shape<3>> ii, oi;
  keras::Model inner(ii, layers::Dense<5>{}(layers::Dense<4, activations::tanh>{}(ii)));
  keras::Model outer(oi, layers::Dense<2>{}(inner(oi)));
  train::Checkpoint c3{{"outer", outer}};
  CHECK(io::safetensors::File(train::checkpoint_file(c3.save(dir + "/nested"))).contains("outer/functional/dense_1/kernel"));
}

TEST_CASE("models called on tensors and expressions; other extents are a shape_error naming the model and its input") {
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<28, 28, 1>>, layers::Flatten, layers::Dense<10>> seq;
  keras::Input<float, Shape<28, 28, 1>> in;
  keras::Model single(in, layers::Dense<10>{}(layers::Flatten{}(in)));
  single.set_weights(seq.get_weights());
  const auto images = random_uniform<float, Shape<dyn, 28, 28, 1>>(5, 0, 1, {3, 28, 28, 1});
  const Tensor<float, Shape<dyn, 10>> expected = seq(images);
  // A tensor is viewed, an expression evaluated first; the same outputs through both models.
  CHECK(relative_difference(single(images), expected) == 0);
  CHECK(relative_difference(seq(images * 1.f), expected) == 0);
  CHECK(relative_difference(single(images * 1.f), expected) == 0);
  // Extents the types leave open, wrong at run time: the message names the model and its input.
  const Tensor<float, Shape<dyn, dyn, dyn, 1>> wrong({2, 32, 32, 1});
  CHECK_THROWS_WITH(seq(wrong), Catch::Contains("ctflow::keras::Sequential '" + seq.name + "': its input input_layer (InputLayer) takes [None,28,28,1]; the call gives [2,32,32,1]"));
  CHECK_THROWS_WITH(single(wrong), Catch::Contains("ctflow::keras::Functional '" + single.name + "': its input input_layer_1 (InputLayer) takes [None,28,28,1]; the call gives [2,32,32,1]"));
  // Several inputs, as a std::tuple of tensors.
  keras::Input<float, Shape<4>> a{.name = "a"}, b{.name = "b"};
  keras::Model two(std::tuple{a, b}, layers::Add{}(layers::Dense<3>{}(a), layers::Dense<3>{}(b)));
  const auto xa = random_uniform<float, Shape<dyn, 4>>(6, -1, 1, {2, 4}), xb = random_uniform<float, Shape<dyn, 4>>(7, -1, 1, {2, 4});
  const Tensor<float, Shape<dyn, 3>> y = two(std::tuple{view(xa), view(xb)});
  CHECK(relative_difference(two(std::tuple{xa, xb}), y) == 0);
  CHECK(relative_difference(two(std::tuple{xa, xb * 1.f}), y) == 0);
  const Tensor<float, Shape<dyn, dyn>> five({2, 5});
  CHECK_THROWS_WITH(two(std::tuple{xa, five}), Catch::Contains("its input b (InputLayer) takes [None,4]; the call gives [2,5]"));
  // Both models count their parameters through the model, as Keras does.
  CHECK(seq.count_params() == single.count_params());
  const auto& constant = single;
  CHECK(constant.count_params() == 7850);
}
