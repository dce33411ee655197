// Keras's functional API (two inputs and a shared layer, a residual block, a model called as a
// layer) against Keras 3's summaries, weight files, outputs and gradients; custom layers (own
// variables and sub-layers, tracked without a list) against the built-in layers they compose.
#include "keras_check.hpp"
#include "test_models.hpp"

#include <filesystem>

using namespace ctflow;
using keras_check::check_gradients;
using keras_check::data_file;
using keras_check::view;
using test_files::slurp;
using keras_check::relative_difference;
using keras_check::scratch;
using keras_check::summary_of;
namespace layers = keras::layers;
namespace activations = keras::activations;
using test_models::Linear;
using test_models::MLPBlock;
using test_models::residual_model;

namespace {

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


}  // namespace

TEST_CASE("functional: two inputs, a shared layer, Add and Concatenate: Keras's summary, weights, outputs and gradients") {
  keras::backend::clear_session();
  auto model = two_inputs_model();
  CHECK(model.name == "functional");
  CHECK(summary_of(model) == slurp(data_file("summaries/functional.txt")));
  CHECK(model.count_params() == 57);
  model.load_weights(data_file("weights/functional.weights.h5"));
  const io::safetensors::File f(data_file("weights/functional.safetensors"));
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
  CHECK(summary_of(model) == slurp(data_file("summaries/residual.txt")));
  model.load_weights(data_file("weights/residual.weights.h5"));
  const io::safetensors::File f(data_file("weights/residual.safetensors"));
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
  CHECK(summary_of(outer) == slurp(data_file("summaries/nested.txt")));
  outer.load_weights(data_file("weights/nested.weights.h5"));
  const io::safetensors::File f(data_file("weights/nested.safetensors"));
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
    for (std::size_t k = 0; k < ga[i].size(); ++k) CHECK(ga[i](k) == Approx(gb[i](k)).margin(1e-6));
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
      CHECK(ga[i](k) == Approx(gb[i](k) + gb[i + 2](k)).margin(1e-6));
      sum += std::abs(ga[i](k));
    }
    CHECK(sum > 0);
  }
  // A second backward pass of the same call gives the same gradients, and the input's.
  const float g00 = ga[0](0);
  const auto dx = model.backward(view(dy), true);
  REQUIRE((dx && dxp));
  CHECK(relative_difference(*dx, *dxp + dy) < 1e-6);
  CHECK(model.gradients()[0](0) == Approx(g00).margin(1e-7));
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
      for (std::size_t k = 0; k < ga[i].size(); ++k) CHECK(ga[i](k) == Approx(gb[i](k) + gb[i + 2](k)).margin(1e-5));
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
    for (const auto& g : plain.gradients()) g1.emplace_back(g.data(), g.data() + g.size());
    plain(x2, true);
    const auto dx2 = plain.backward(view(dy), true);
    const auto g2 = plain.gradients(), gm = model.gradients();
    REQUIRE((gm.size() == 3 && g2.size() == 3 && g1.size() == 3));
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t k = 0; k < gm[i].size(); ++k) CHECK(gm[i](k) == Approx(g1[i][k] + g2[i](k)).margin(1e-5));
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
    CHECK(g[0](c) == Approx(dgamma).margin(1e-5));
    CHECK(g[1](c) == Approx(dbeta).margin(1e-5));
  }
}

namespace {
/// A masked model's case (generate.py's masked_models): the model loads Keras's weights, its
/// output equals Keras's, and after a training call its gradients (and the input's, for a float
/// input) equal Keras's.
template <class Model> void check_masked_case(Model& model, const std::string& name) {
  INFO("case " << name);
  using In = typename Model::input_type;
  using X = Tensor<std::remove_const_t<value_t<In>>, shape_t<In>>;
  using Y = Tensor<float, shape_t<typename Model::output_type>>;
  model.load_weights(data_file("weights/" + name + ".weights.h5"));
  const io::safetensors::File f(data_file("weights/" + name + ".safetensors"));
  const auto x = f.get<value_t<X>, shape_t<X>>("x");
  CHECK(relative_difference(model(x), f.get<float, shape_t<Y>>("y")) < 2e-5);
  model(x, true);
  const auto dy = f.get<float, shape_t<Y>>("dy");
  const auto result = model.backward(view(dy), is_floating_v<value_t<X>>);
  const auto& dx = [&]() -> const auto& {
    if constexpr (requires { std::get<0>(result); }) return std::get<0>(result);  // a functional model's tuple
    else return result;
  }();
  check_gradients(model, f);
  CHECK(bool(dx) == f.contains("dx"));
  if (dx && f.contains("dx")) CHECK(relative_difference(*dx, f.get<float, shape_t<X>>("dx")) < 2e-5);
}
}  // namespace

TEST_CASE("masks: Embedding(mask_zero) and Masking before LSTM and GRU, passed on by return_sequences, Dense, Dropout, merges and nested models") {
  // Padded sequences, a step masked in the middle and a sequence masked whole: the masked steps
  // keep the state, and their gradients pass through unchanged.
  using Tokens = keras::Input<std::int32_t, Shape<6>>;
  keras::Sequential<Tokens, layers::Embedding<12, 4>, layers::LSTM<5>, layers::Dense<3>> lstm(Tokens{}, {.mask_zero = true}, {}, {});
  check_masked_case(lstm, "masked_lstm");
  keras::Sequential<Tokens, layers::Embedding<12, 4>, layers::Dropout, layers::GRU<3, layers::return_sequences<true>, layers::go_backwards<true>>,
                    layers::Dense<4, activations::tanh>, layers::LSTM<2, layers::return_sequences<true>>, layers::GRU<2, layers::reset_after<false>>>
      stack(Tokens{}, {.mask_zero = true}, layers::Dropout(0.0), {}, {}, {}, {});
  check_masked_case(stack, "masked_gru_stack");
  using Steps = keras::Input<float, Shape<5, 3>>;
  keras::Sequential<Steps, layers::Masking, layers::LSTM<4, layers::return_sequences<true>>, layers::Dense<2>> masking(Steps{}, {.mask_value = 0.5}, {}, {});
  check_masked_case(masking, "masking_lstm");
  // A functional model: the mask follows the graph's edges.
  const keras::Input<std::int32_t, Shape<6>> tokens;
  auto h = layers::LSTM<4, layers::return_sequences<true>>{}(layers::Embedding<12, 3>{.mask_zero = true}(tokens));
  auto functional = keras::Model(tokens, layers::Dense<2>{}(layers::GRU<3>{}(layers::Dense<3>{}(h))));
  check_masked_case(functional, "masked_functional");
  // A nested model passes its input's mask in and its output's out.
  keras::backend::clear_session();
  const keras::Input<std::int32_t, Shape<6>> inner_in;
  auto inner = keras::Model(inner_in, layers::LSTM<3, layers::return_sequences<true>>{}(layers::Embedding<12, 4>{.mask_zero = true}(inner_in)));
  const keras::Input<std::int32_t, Shape<6>> outer_in;
  auto nested = keras::Model(outer_in, layers::Dense<2>{}(layers::GRU<2>{}(inner(outer_in))));
  check_masked_case(nested, "masked_nested");
  // Merges join their inputs' masks (the OR): Add of two masked embeddings, Concatenate of a
  // sequence with a masked embedding.
  const keras::Input<std::int32_t, Shape<6>> a, b;
  const auto sum = layers::Add{}(layers::Embedding<12, 3>{.mask_zero = true}(a), layers::Embedding<12, 3>{.mask_zero = true}(b));
  const auto joined = layers::Concatenate<>{}(layers::LSTM<4, layers::return_sequences<true>>{}(sum), layers::Embedding<12, 2>{.mask_zero = true}(b));
  auto merges = keras::Model(std::tuple{a, b}, layers::Dense<2>{}(layers::GRU<3>{}(joined)));
  merges.load_weights(data_file("weights/masked_merges.weights.h5"));
  {
    const io::safetensors::File f(data_file("weights/masked_merges.safetensors"));
    const auto x0 = f.get<std::int32_t, Shape<dyn, 6>>("x0"), x1 = f.get<std::int32_t, Shape<dyn, 6>>("x1");
    using V = TensorView<const std::int32_t, Shape<dyn, 6>>;
    const std::tuple inputs{V(x0.data(), x0.dims()), V(x1.data(), x1.dims())};
    CHECK(relative_difference(merges(inputs), f.get<float, Shape<dyn, 2>>("y")) < 2e-5);
    merges(inputs, true);
    const auto dy = f.get<float, Shape<dyn, 2>>("dy");
    merges.backward(view(dy));
    check_gradients(merges, f);
  }
  // Without mask_zero the same tokens give other outputs (the padding's embedding is read).
  keras::Sequential<Tokens, layers::Embedding<12, 4>, layers::LSTM<5>, layers::Dense<3>> unmasked;
  unmasked.set_weights(lstm.get_weights());
  const io::safetensors::File f(data_file("weights/masked_lstm.safetensors"));
  const auto x = f.get<std::int32_t, Shape<dyn, 6>>("x");
  CHECK(relative_difference(unmasked(x), f.get<float, Shape<dyn, 3>>("y")) > 1e-3);
}
