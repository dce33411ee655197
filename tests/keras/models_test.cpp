// Keras models: summary() against Keras 3's own text, Keras's weight files read (.weights.h5, a
// legacy .h5, a .keras archive) and written (read back), shape mismatches, freezing, get_weights
// and set_weights, and the parameter count the compiler knows.
#include "keras_check.hpp"
#include "../unit/counting_new.hpp"  // every operator new in the process is counted

#include <ctflow/keras/optimizers.hpp>

#include <filesystem>

using namespace ctflow;
using keras_check::data_file;
using test_files::slurp;
using keras_check::relative_difference;
using keras_check::scratch;
using keras_check::summary_of;
namespace layers = keras::layers;
namespace activations = keras::activations;

namespace {

using FashionCnn = keras::Sequential<keras::Input<float, Shape<28, 28, 1>>, layers::Conv2D<32, 3, activations::relu>, layers::MaxPooling2D<>,
                                     layers::Conv2D<64, 3, activations::relu>, layers::MaxPooling2D<>, layers::Flatten,
                                     layers::Dense<128, activations::relu>, layers::Dense<10>>;
using BnModel = keras::Sequential<keras::Input<float, Shape<8>>, layers::Dense<16>, layers::BatchNormalization, layers::Dense<2>>;

}  // namespace

TEST_CASE("the Fashion-MNIST CNN: the compiler's parameter count, Keras's summary, Keras's weights reproduce Keras's outputs") {
  static_assert(FashionCnn::count_params() == 225034);
  keras::backend::clear_session();
  FashionCnn model;
  CHECK(summary_of(model) == slurp(data_file("summaries/fashion_mnist_cnn.txt")));
  model.load_weights(data_file("weights/fashion_mnist_cnn.weights.h5"));
  const io::safetensors::File f(data_file("weights/fashion_mnist_cnn.safetensors"));
  const auto y = model(f.get<float, Shape<dyn, 28, 28, 1>>("x"));
  CHECK(relative_difference(y, f.get<float, Shape<dyn, 10>>("y")) < 2e-5);
}

TEST_CASE("BatchNormalization's model: summary with non-trainable parameters; its .weights.h5, .keras archive and legacy .h5 files") {
  keras::backend::clear_session();
  BnModel model;
  CHECK(summary_of(model) == slurp(data_file("summaries/batch_normalization.txt")));
  const io::safetensors::File f(data_file("weights/batch_normalization.safetensors"));
  for (const char* file : {"weights/batch_normalization.weights.h5", "weights/batch_normalization.keras", "weights/batch_normalization.h5",
                           "weights/batch_normalization_weights.h5"}) {
    INFO(file);
    BnModel m;
    m.load_weights(data_file(file));
    const auto w = m.get_weights();
    REQUIRE(w.size() == 8);
    for (std::size_t i = 0; i < w.size(); ++i) {
      std::vector<float> expected(w[i].values.size());
      f.read_into(std::string("w").append(std::to_string(i)), expected.data());
      CHECK(w[i].values == expected);
    }
    CHECK(relative_difference(m(f.get<float, Shape<dyn, 8>>("x")), f.get<float, Shape<dyn, 2>>("y")) < 2e-5);
  }
  // Its moving statistics are not trainable, and freezing a layer moves its weights over.
  CHECK(model.trainable_variables().size() == 6);
  CHECK(model.non_trainable_variables().size() == 2);
  CHECK(model.non_trainable_variables()[0].path == model.get_layer<1>().name + "/moving_mean");
}

TEST_CASE("a model's table of variables: paths, views, regularizers and gradient slots; a warm step reads it without allocating") {
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<8>>, layers::Dense<16, activations::relu>, layers::Dense<2>> model(
      keras::Input<float, Shape<8>>{}, layers::Dense<16, activations::relu>{.kernel_regularizer = keras::regularizers::L2(0.01)}, layers::Dense<2>{});
  const auto vars = model.trainable_variables();
  REQUIRE(vars.size() == 4);
  CHECK(vars[0].path == "dense/kernel");
  CHECK(vars[3].path == "dense_1/bias");
  CHECK(vars[0].value().dims() == dims_t<1>{128});
  CHECK(vars[0].regularizer != nullptr);
  CHECK(vars[1].regularizer == nullptr);
  CHECK(model.weights().size() == 4);
  // The penalty, from the kernel's values.
  double squares = 0;
  for (const float w : vars[0].values) squares += double(w) * double(w);
  REQUIRE(model.losses().size() == 1);
  CHECK(model.losses()[0] == Approx(0.01 * squares).epsilon(1e-5));
  // Before any backward pass the gradients are zeros.
  for (const auto& g : model.gradients())
    for (std::size_t k = 0; k < g.size(); ++k) REQUIRE(g(k) == 0.f);

  const auto x = random_uniform<float, Shape<dyn, 8>>(3, -1, 1, {5, 8});
  const auto dy = ones<float, Shape<dyn, 2>>({5, 2});
  auto step = [&] {
    model(x, true);
    model.backward(TensorView<const float, Shape<dyn, 2>>(dy.data(), dy.dims()));
    const auto v = model.trainable_variables();
    const auto g = model.gradients();
    for (std::size_t i = 0; i < v.size(); ++i) v[i].value() = v[i].value() - 0.1f * g[i];
  };
  step();
  step();
  // The gradients are views of the memory the backward pass left them in (each layer's slot).
  const auto g = model.gradients();
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i].data() == vars[i].gradient());
  // The update reads the table: w - 0.1 g, one fused loop per variable.
  const std::vector<float> before(vars[2].values.begin(), vars[2].values.end());
  const std::vector<float> gradient(g[2].data(), g[2].data() + g[2].size());
  const auto v = model.trainable_variables();
  v[2].value() = v[2].value() - 0.1f * model.gradients()[2];
  for (std::size_t k = 0; k < before.size(); ++k) CHECK(vars[2].values[k] == Approx(before[k] - 0.1f * gradient[k]).margin(1e-7));
  // Listing the variables and their gradients allocates nothing once warm.
  const std::size_t calls = counting_new::calls.load();
  for (int i = 0; i < 3; ++i) {
    const auto t = model.trainable_variables();
    const auto n = model.non_trainable_variables();
    const auto gs = model.gradients();
    REQUIRE((t.size() == 4 && n.empty() && gs.size() == 4));
  }
  CHECK(counting_new::calls.load() == calls);
  // Freezing a layer after the table is built moves its weights to the non-trainable ones.
  model.get_layer<0>().trainable = false;
  REQUIRE(model.trainable_variables().size() == 2);
  CHECK(model.trainable_variables()[0].path == "dense_1/kernel");
  CHECK(model.non_trainable_variables()[1].path == "dense/bias");
  CHECK(model.gradients().size() == 2);
}

TEST_CASE("an optimizer trains a model through its table of variables: the loss falls, a warm update allocates nothing") {
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<8>>, layers::Dense<16, activations::relu>, layers::Dense<1>> model;
  keras::optimizers::Adam adam{.learning_rate = 0.01, .clipnorm = 1.0};
  const auto x = random_uniform<float, Shape<dyn, 8>>(5, -1, 1, {32, 8});
  const Tensor<float, Shape<dyn, 1>> y = reduce_sum<1>(x, keepdims) * 0.25f;  // a target the model can learn
  auto mse = [&](const auto& p) { return double(item(reduce_mean(square(p - y)))); };
  const double first = mse(model(x));
  std::size_t warm_calls = 0;
  for (int step = 0; step < 60; ++step) {
    const auto p = model(x, true);
    const Tensor<float, Shape<dyn, 1>> dy = (p - y) * (2.f / 32);  // d(mean squared error)/d(prediction)
    model.backward(TensorView<const float, Shape<dyn, 1>>(dy.data(), dy.dims()));
    const std::size_t before = counting_new::calls.load();
    adam.apply_gradients(model.gradients(), model.trainable_variables());
    if (step > 0) warm_calls += counting_new::calls.load() - before;
  }
  CHECK(adam.iterations() == 60);
  CHECK(mse(model(x)) < 0.2 * first);
  CHECK(warm_calls == 0);
}

TEST_CASE("Sequential's backward: no input adjoint through weightless layers in front, unless asked for") {
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<4>>, layers::Rescaling, layers::Dense<3>> model({}, {.scale = 0.5}, {});
  const auto x = random_uniform<float, Shape<dyn, 4>>(9, -1, 1, {2, 4});
  const auto dy = random_uniform<float, Shape<dyn, 3>>(10, -1, 1, {2, 3});
  const TensorView<const float, Shape<dyn, 3>> dyv(dy.data(), dy.dims());
  model(x, true);
  CHECK_FALSE(model.backward(dyv).has_value());  // Dense's input adjoint would reach no weight
  const std::vector<float> kernel_gradient(model.gradients()[0].data(), model.gradients()[0].data() + 12);
  model(x, true);
  const auto dx = model.backward(dyv, true);
  REQUIRE(dx.has_value());
  // dx = 0.5 * dy @ kernel^T; the weights' gradients are the same either way.
  const Tensor<float, Shape<dyn, 4>> expected = matmul(dy, transpose(model.get_layer<1>().layer.kernel)) * 0.5f;
  CHECK(keras_check::relative_difference(*dx, expected) < 1e-6);
  for (std::size_t k = 0; k < 12; ++k) CHECK(model.gradients()[0].data()[k] == kernel_gradient[k]);
}

namespace {
/// Gradients of model's weights and input after one training call on x with output adjoint dy.
template <class Model, class X, class Dy> std::vector<std::vector<float>> gradients_after(Model& model, const X& x, const Dy& dy) {
  model(x, true);
  const auto dx = model.backward(TensorView<const float, shape_t<Dy>>(dy.data(), dy.dims()), true);
  REQUIRE(dx.has_value());
  std::vector<std::vector<float>> out{std::vector<float>(dx->data(), dx->data() + dx->size())};
  for (const auto& g : model.gradients()) out.emplace_back(g.data(), g.data() + g.size());
  return out;
}
/// A model with Conv2D<4, 3, Activation> before the pooling Pool against the same weights with
/// the activation as a layer of its own (which Sequential does not fold into the pooling).
template <auto Activation, class Pool> void check_activation_fold(float tolerance) {
  keras::backend::clear_session();
  using Folded = keras::Sequential<keras::Input<float, Shape<9, 9, 2>>, layers::Conv2D<4, 3, Activation, layers::same>, Pool, layers::Flatten, layers::Dense<3>>;
  using Apart = keras::Sequential<keras::Input<float, Shape<9, 9, 2>>, layers::Conv2D<4, 3, layers::same>, layers::Activation<Activation>, Pool,
                                  layers::Flatten, layers::Dense<3>>;
  static_assert(std::remove_cvref_t<decltype(std::declval<Folded&>().template get_layer<0>())>::activation_from_value);
  static_assert(!std::remove_cvref_t<decltype(std::declval<Apart&>().template get_layer<0>())>::activation_from_value);
  Folded folded;
  Apart apart;
  apart.set_weights(folded.get_weights());
  // Ties and zeros in the pooling windows: a row of equal pixels, relu's zeros.
  auto x = random_uniform<float, Shape<dyn, 9, 9, 2>>(21, -1, 1, {3, 9, 9, 2});
  for (std::size_t k = 0; k < 18; ++k) x.data()[k] = 0.25f;
  const auto dy = random_uniform<float, Shape<dyn, 3>>(22, -1, 1, {3, 3});
  const auto a = gradients_after(folded, x, dy), b = gradients_after(apart, x, dy);
  // The convolution's output went back for the pooling's input adjoint; the next call makes it again.
  CHECK(folded.template get_layer<0>().output().size() == 0);
  folded(x, true);
  CHECK(folded.template get_layer<0>().output().size() == 3u * 9 * 9 * 4);
  REQUIRE(a.size() == 5);  // the input's, then the convolution's kernel and bias, the dense layer's
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].size() == b[i].size());
    // The folded convolution's bias sums the pooled adjoint: the same terms in another order.
    const float within = i == 2 ? std::max(tolerance, 1e-6f) : tolerance;
    for (std::size_t k = 0; k < a[i].size(); ++k) CHECK(std::abs(a[i][k] - b[i][k]) <= within * (1 + std::abs(b[i][k])));
  }
}
}  // namespace

TEST_CASE("Sequential's backward: a max pooling takes the activation's adjoint of the convolution before it at the pooled extents") {
  // relu's adjoint is a selection: the gradients are bitwise those of the activation as a layer
  // (but the bias's, summed in another order).
  check_activation_fold<activations::relu, layers::MaxPooling2D<2>>(0);
  check_activation_fold<activations::relu, layers::MaxPooling2D<3, layers::strides<2>, layers::same>>(0);  // overlapping windows
  // tanh's adjoint multiplies: the sum over overlapping windows is multiplied once, not per window.
  check_activation_fold<activations::tanh, layers::MaxPooling2D<3, layers::strides<2>, layers::same>>(1e-6f);
}

TEST_CASE("release_output gives a layer's output memory back where its shape has a dyn extent; a static one keeps it") {
  keras::backend::clear_session();
  keras::layer_instance<layers::Dense<4>::built<float, Shape<dyn, 3>>> open(layers::Dense<4>{});
  keras::layer_instance<layers::Dense<4>::built<float, Shape<2, 3>>> fixed(layers::Dense<4>{});
  const auto x = random_uniform<float, Shape<2, 3>>(41, -1, 1);
  open.forward(TensorView<const float, Shape<dyn, 3>>(x.data(), x.dims()), true);
  fixed.forward(TensorView<const float, Shape<2, 3>>(x.data(), x.dims()), true);
  const std::vector<float> before(fixed.output().data(), fixed.output().data() + 8);
  open.release_output();
  fixed.release_output();
  CHECK(open.output().size() == 0);
  REQUIRE(fixed.output().size() == 8);
  for (std::size_t k = 0; k < 8; ++k) CHECK(fixed.output().data()[k] == before[k]);
}

TEST_CASE("Flatten's output is a view of its input's memory; a Sequential hands it the adjoint's memory back") {
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<3, 4>>, layers::Dense<5>, layers::Flatten, layers::Dense<2>> model;
  const auto x = random_uniform<float, Shape<dyn, 3, 4>>(31, -1, 1, {2, 3, 4});
  const auto dy = random_uniform<float, Shape<dyn, 2>>(32, -1, 1, {2, 2});
  model(x, true);
  CHECK(model.get_layer<1>().output().data() == model.get_layer<0>().output().data());
  const auto dx = model.backward(TensorView<const float, Shape<dyn, 2>>(dy.data(), dy.dims()), true);
  REQUIRE(dx.has_value());
  // By hand: df = dy W2^T over the 15 flattened features, dh its [3, 5] rows, dx = dh W1^T.
  const auto& w1 = model.get_layer<0>().layer.kernel;
  const auto& w2 = model.get_layer<2>().layer.kernel;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t i = 0; i < 4; ++i) {
        double expected = 0;
        for (std::size_t u = 0; u < 5; ++u) {
          double dh = 0;
          for (std::size_t o = 0; o < 2; ++o) dh += double(dy(b, o)) * double(w2(r * 5 + u, o));
          expected += dh * double(w1(i, u));
        }
        CHECK(std::abs((*dx)(b, r, i) - expected) < 1e-5);
      }
}

namespace {
/// The heap allocations fit makes in each warm step of model (the steps of every epoch after the
/// first, but each epoch's first two: the second step still holds the first's recordings while
/// it makes its own, and a worker thread makes its own packing and transform buffers the first
/// time it takes part in a kernel), from one step's end to the next's, over 3 epochs of 4
/// batches of 16 (80 samples, 20% for validation): operator new's, and the blocks tensors take
/// from the system (not from the cache).
template <class Model, class X, class Y> std::size_t warm_step_allocations(Model& model, const X& x, const Y& y) {
  std::size_t warm = 0, last = 0, steps = 0;
  std::int64_t epoch = 0;
  const auto count = [] { return counting_new::calls.load() + ctflow::detail::block_cache::instance().system_allocations(); };
  keras::callbacks::LambdaCallback probe({.on_epoch_begin = [&](std::int64_t e, const keras::callbacks::Logs&) { epoch = e; },
                                          .on_train_batch_end = [&](std::int64_t batch, const keras::callbacks::Logs&) {
                                            if (epoch > 0 && batch > 1) warm += count() - last, ++steps;
                                            last = count();
                                          }});
  model.fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0, .callbacks = {probe}, .validation_split = 0.2});
  REQUIRE(steps == 2 * 2);  // epochs 2 and 3, steps 3 and 4
  return warm;
}
}  // namespace

TEST_CASE("fit: a warm training step allocates nothing (convolution, max pooling, Dropout; a masked Embedding under an LSTM)") {
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<8, 8, 1>>, layers::Conv2D<4, 3, activations::relu>, layers::MaxPooling2D<>, layers::Flatten,
                    layers::Dropout, layers::Dense<3>>
      cnn({}, {}, {}, {}, layers::Dropout(0.25), {});
  cnn.compile(keras::optimizers::Adam{}, keras::losses::SparseCategoricalCrossentropy{.from_logits = true}, {"accuracy"});
  const auto images = random_uniform<float, Shape<dyn, 8, 8, 1>>(3, 0, 1, {80, 8, 8, 1});
  Tensor<std::int32_t, Shape<dyn>> classes({80});
  for (std::size_t i = 0; i < 80; ++i) classes.data()[i] = std::int32_t(i % 3);
  CHECK(warm_step_allocations(cnn, images, classes) == 0);

  keras::Sequential<keras::Input<std::int32_t, Shape<6>>, layers::Embedding<12, 4>, layers::LSTM<5>, layers::Dense<1, activations::sigmoid>> text(
      {}, {.mask_zero = true}, {}, {});
  text.compile(keras::optimizers::RMSprop{}, keras::losses::BinaryCrossentropy{}, {"accuracy"});
  Tensor<std::int32_t, Shape<dyn, 6>> tokens({80, 6});
  Tensor<float, Shape<dyn, 1>> labels({80, 1});
  for (std::size_t i = 0; i < 80; ++i) {
    for (std::size_t t = 0; t < 6; ++t) tokens.data()[i * 6 + t] = t < 2 + i % 4 ? std::int32_t(1 + (i * 7 + t) % 11) : 0;
    labels.data()[i] = float(i % 2);
  }
  CHECK(warm_step_allocations(text, tokens, labels) == 0);
}

TEST_CASE("fit: an epoch's smaller last batch reuses the full batches' memory") {
  // 60 samples in batches of 16 end with one of 12: it takes the blocks the batches of 16 gave
  // back, so the run takes no more blocks from the system than one of 64 samples (no last batch).
  using Net = keras::Sequential<keras::Input<float, Shape<8, 8, 1>>, layers::Conv2D<4, 3, activations::relu>, layers::MaxPooling2D<>,
                                layers::Flatten, layers::Dense<3>>;
  auto& cache = ctflow::detail::block_cache::instance();
  auto blocks_of_fit = [&](std::size_t samples) {
    keras::backend::clear_session();
    Net model;
    model.compile(keras::optimizers::Adam{}, keras::losses::SparseCategoricalCrossentropy{.from_logits = true});
    const auto images = random_uniform<float, Shape<dyn, 8, 8, 1>>(3, 0, 1, {samples, 8, 8, 1});
    Tensor<std::int32_t, Shape<dyn>> classes({samples});
    for (std::size_t i = 0; i < samples; ++i) classes.data()[i] = std::int32_t(i % 3);
    const std::size_t limit = cache.limit();
    cache.set_limit(0);  // an empty cache
    cache.set_limit(limit);
    const std::size_t before = cache.system_allocations();
    model.fit(images, classes, {.batch_size = 16, .epochs = 2, .verbose = 0});
    return cache.system_allocations() - before;
  };
  const std::size_t whole = blocks_of_fit(64);
  CHECK(whole > 0);
  CHECK(blocks_of_fit(60) <= whole);
}

TEST_CASE("train::Checkpoint keeps a model and its optimizer: a restored run continues bitwise as the first") {
  keras::backend::clear_session();
  using Net = keras::Sequential<keras::Input<float, Shape<8>>, layers::Dense<16, activations::relu>, layers::Dense<1>>;
  const auto x = random_uniform<float, Shape<dyn, 8>>(5, -1, 1, {32, 8});
  const Tensor<float, Shape<dyn, 1>> y = reduce_sum<1>(x, keepdims) * 0.25f;
  auto step = [&](auto& model, auto& opt) {
    const auto p = model(x, true);
    const Tensor<float, Shape<dyn, 1>> dy = (p - y) * (2.f / 32);
    model.backward(TensorView<const float, Shape<dyn, 1>>(dy.data(), dy.dims()));
    opt.apply_gradients(model.gradients(), model.trainable_variables());
  };
  const auto options = keras::optimizers::Adam{.learning_rate = 0.01, .use_ema = true, .gradient_accumulation_steps = 2};
  Net model;
  auto adam = options;
  for (int i = 0; i < 3; ++i) step(model, adam);  // an odd count: a gradient is mid-accumulation
  const std::string path = scratch("optimizer_checkpoint");
  train::Checkpoint ckpt{{"model", model}, {"optimizer", adam}};
  ckpt.write(path);

  Net fresh;
  auto restored = options;
  restored.build(fresh.trainable_variables());
  train::Checkpoint again{{"model", fresh}, {"optimizer", restored}};
  again.restore(path).assert_consumed();
  CHECK(restored.iterations() == adam.iterations());
  for (int i = 0; i < 3; ++i) {
    step(model, adam);
    step(fresh, restored);
  }
  const auto a = model.get_weights(), b = fresh.get_weights();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].values == b[i].values);
  // An optimizer restored before it is built has nowhere to put its slots.
  auto unbuilt = options;
  Net other;
  train::Checkpoint partial{{"model", other}, {"optimizer", unbuilt}};
  CHECK_THROWS_WITH(partial.restore(path), Catch::Contains("has values no object takes: 'optimizer/u_product', 'optimizer/vars/0'"));
}

TEST_CASE("freezing a layer: its weights leave trainable_variables(), summary's totals change, backward leaves them") {
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<8>>, layers::Dense<16>, layers::Dense<4>, layers::Dense<2>> model;
  model.get_layer<1>().trainable = false;
  CHECK(summary_of(model) == slurp(data_file("summaries/frozen.txt")));
  CHECK(model.trainable_variables().size() == 4);
  CHECK(model.non_trainable_variables().size() == 2);
  const auto x = random_uniform<float, Shape<dyn, 8>>(3, -1, 1, {5, 8});
  const auto y = model(x, true);
  const auto dy = ones<float, Shape<dyn, 2>>({5, 2});
  model.backward(TensorView<const float, Shape<dyn, 2>>(dy.data(), dy.dims()));
  CHECK_FALSE(model.get_layer<1>().gradient<0>().has_value());
  CHECK(model.get_layer<0>().gradient<0>().has_value());  // the adjoint still flows through the frozen layer
  CHECK(model.gradients().size() == 4);
  model.trainable = false;
  CHECK(model.trainable_variables().empty());
  (void)y;
}

TEST_CASE("save_weights writes Keras 3's .weights.h5 and safetensors; load_weights reads them back") {
  keras::backend::clear_session();
  BnModel a;
  a.set_weights([&] {
    auto w = a.get_weights();
    float v = 0.25f;
    for (auto& t : w)
      for (auto& x : t.values) x = (v += 0.125f);
    return w;
  }());
  const auto x = random_uniform<float, Shape<dyn, 8>>(4, -1, 1, {3, 8});
  const Tensor<float, Shape<dyn, 2>> ya = a(x);
  for (const char* name : {"model.weights.h5", "model.safetensors"}) {
    INFO(name);
    const std::string path = scratch(name);
    a.save_weights(path);
    BnModel b;
    b.load_weights(path);
    CHECK(relative_difference(b(x), ya) == 0);
  }
  CHECK_THROWS_WITH(a.save_weights(scratch("model.h5")), Catch::Contains("must end in .weights.h5 or .safetensors"));
}

TEST_CASE("a weight of another shape is an error naming the layer, the weight and both shapes; skip_mismatch skips it") {
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<8>>, layers::Dense<15>, layers::BatchNormalization, layers::Dense<2>> other;
  const auto before = other.get_weights();
  CHECK_THROWS_WITH(other.load_weights(data_file("weights/batch_normalization.weights.h5")),
                    Catch::Contains("layer dense, weight kernel: shape [8,16] in the file, [8,15] in the model"));
  CHECK(other.get_weights()[0].values == before[0].values);  // nothing changed
  other.load_weights(data_file("weights/batch_normalization.weights.h5"), {.skip_mismatch = true});
  CHECK(other.get_weights()[7].values != before[7].values);  // the last Dense's bias fits, and loaded
  CHECK_THROWS_AS(other.load_weights(data_file("layers/dense.safetensors")), io_error);
  // A .keras archive's config is checked first: its layers' classes, names and input shapes.
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<8>>, layers::Dense<16>, layers::Dense<2>> fewer;
  CHECK_THROWS_WITH(fewer.load_weights(data_file("weights/batch_normalization.keras")),
                    Catch::Contains("layer 1 is batch_normalization (BatchNormalization) in the archive, dense_1 (Dense) in the model"));
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<9>>, layers::Dense<16>, layers::BatchNormalization, layers::Dense<2>> wider;
  CHECK_THROWS_WITH(wider.load_weights(data_file("weights/batch_normalization.keras")),
                    Catch::Contains("layer dense (Dense) is built for inputs [None,8] in the archive, [None,9] in the model"));
}

TEST_CASE("a load that fails changes no weight, for every kind of file (the bad weight last in each)") {
  keras::backend::clear_session();
  BnModel model;
  auto w = model.get_weights();
  float v = 0.5f;
  for (auto& t : w)
    for (auto& x : t.values) x = (v += 0.25f);
  model.set_weights(w);
  const auto before = model.get_weights();
  const auto unchanged = [&] { return keras_check::same_weights(model.get_weights(), before); };
  const std::string dir = data_file("weights/damaged/");
  CHECK_THROWS_WITH(model.load_weights(dir + "bias_as_strings.weights.h5"), Catch::Contains("layer dense_1, weight bias: 'layers/dense_1/vars/1' holds string values, not numbers"));
  CHECK(unchanged());
  CHECK_THROWS_WITH(model.load_weights(dir + "bias_shape.weights.h5"), Catch::Contains("layer dense_1, weight bias: shape [3] in the file, [2] in the model"));
  CHECK(unchanged());
  CHECK_THROWS_WITH(model.load_weights(dir + "legacy_bias_shape.h5"), Catch::Contains("layer dense_1, weight bias: shape [3] in the file, [2] in the model"));
  CHECK(unchanged());
  CHECK_THROWS_WITH(model.load_weights(dir + "legacy_bias_missing.h5"), Catch::Contains("weight_names names 'sequential/dense_1/bias', which 'model_weights/dense_1' does not hold"));
  CHECK(unchanged());
  CHECK_THROWS_WITH(model.load_weights(dir + "absent.weights.h5"), Catch::Contains("absent.weights.h5: the file does not exist"));
  CHECK(unchanged());
  // safetensors: ctflow's own layout, and PyTorch's state_dict, each with its last tensor wrong.
  std::vector<Tensor<float, Shape<dyn>>> tensors;
  std::vector<std::pair<std::string, io::tensor_ref>> named;
  const auto add = [&](const std::string& key, std::vector<std::uint64_t> shape) {
    std::size_t n = 1;
    for (auto e : shape) n *= e;
    tensors.emplace_back(dims_t<1>{n});
    named.emplace_back(key, io::tensor_ref("F32", shape, tensors.back().data(), n * 4));
  };
  tensors.reserve(16);
  for (const auto& [key, shape] : std::vector<std::pair<std::string, std::vector<std::uint64_t>>>{
           {"dense/kernel", {8, 16}}, {"dense/bias", {16}}, {"batch_normalization/gamma", {16}}, {"batch_normalization/beta", {16}},
           {"batch_normalization/moving_mean", {16}}, {"batch_normalization/moving_variance", {16}}, {"dense_1/kernel", {16, 2}}, {"dense_1/bias", {3}}})
    add(key, shape);
  io::safetensors::save_file(named, scratch("bias_shape.safetensors"));
  CHECK_THROWS_WITH(model.load_weights(scratch("bias_shape.safetensors")), Catch::Contains("weight dense_1/bias: F32 [3] in the file, [2] in the model"));
  CHECK(unchanged());
  tensors.clear(), named.clear();
  for (const auto& [key, shape] : std::vector<std::pair<std::string, std::vector<std::uint64_t>>>{
           {"fc1.weight", {16, 8}}, {"fc1.bias", {16}}, {"bn.weight", {16}}, {"bn.bias", {16}}, {"bn.running_mean", {16}}, {"bn.running_var", {16}},
           {"fc2.weight", {2, 16}}, {"fc2.bias", {3}}})
    add(key, shape);
  io::safetensors::save_file(named, scratch("torch.safetensors"));
  CHECK_THROWS_WITH(keras::load_pytorch_weights(model, scratch("torch.safetensors"), {"fc1", "bn", "fc2"}), Catch::Contains("weight bias: module fc2 gives [3]"));
  CHECK(unchanged());
  // A .keras archive whose config does not fit.
  keras::backend::clear_session();
  keras::Sequential<keras::Input<float, Shape<8>>, layers::Dense<16>, layers::BatchNormalization, layers::Dense<3>> three;
  const auto three_before = three.get_weights();
  CHECK_THROWS_AS(three.load_weights(data_file("weights/batch_normalization.keras")), std::exception);
  CHECK(keras_check::same_weights(three.get_weights(), three_before));
  // Every damaged copy of Keras's .weights.h5 and legacy .h5 (each byte flipped): read whole, or
  // refused with an io_error (or a shape_error) and no weight changed.
  const auto layers_ = keras::detail::saved_layers(model.layers());
  for (const char* file : {"weights/batch_normalization.weights.h5", "weights/batch_normalization.h5"}) {
    INFO(file);
    const std::string bytes = test_files::slurp(data_file(file));
    std::size_t refused = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      std::string d = bytes;
      d[i] = char(~d[i]);
      try {
        keras::detail::load_weights_bytes({reinterpret_cast<const std::uint8_t*>(d.data()), d.size()}, "damaged.h5", layers_, {});
        model.set_weights(before);  // it loaded (the byte was not one a weight depends on, or was one of a weight's values)
      } catch (const io_error&) {
        ++refused;
        if (!unchanged()) FAIL("byte " << i << ": a refused load changed weights");
      } catch (const shape_error&) {
        ++refused;
        if (!unchanged()) FAIL("byte " << i << ": a refused load changed weights");
      }
    }
    CHECK(refused > 100);
  }
}

TEST_CASE("a Sequential in train::Checkpoint: Keras's weights, moving statistics included, restore into a fresh model") {
  keras::backend::clear_session();
  BnModel model, fresh;
  model.load_weights(data_file("weights/batch_normalization.weights.h5"));
  const std::string dir = scratch("sequential_ckpt");
  std::filesystem::create_directories(dir);
  train::Checkpoint saver{{"model", model}};
  const std::string path = saver.save(dir + "/ckpt");
  CHECK(io::safetensors::File(train::checkpoint_file(path)).contains("model/batch_normalization/moving_variance"));
  train::Checkpoint loader{{"model", fresh}};
  loader.restore(path).assert_consumed();
  CHECK(keras_check::same_weights(fresh.get_weights(), model.get_weights()));
  const io::safetensors::File f(data_file("weights/batch_normalization.safetensors"));
  CHECK(relative_difference(fresh(f.get<float, Shape<dyn, 8>>("x")), f.get<float, Shape<dyn, 2>>("y")) < 2e-5);
}

TEST_CASE("set_weights checks the number and shapes of the values") {
  keras::backend::clear_session();
  BnModel model;
  auto w = model.get_weights();
  w.pop_back();
  CHECK_THROWS_WITH(model.set_weights(w), Catch::Contains("the model has 8 weights, 7 values were given"));
  w = model.get_weights();
  w[0].shape = {16, 8};
  CHECK_THROWS_WITH(model.set_weights(w), Catch::Contains("layer dense, weight kernel: shape [16,8] given for a weight of shape [8,16]"));
}

TEST_CASE("ctflow's .weights.h5 files for Keras: written, read back; kept in $CTFLOW_KERAS_OUT for generate.py --check") {
  // generate.py --check <dir> loads each file into the same network in Keras and compares its
  // outputs with those ctflow computed (<model>.safetensors).
  const char* out = std::getenv("CTFLOW_KERAS_OUT");
  const std::string dir = out ? std::string(out) : std::filesystem::path(scratch("x")).parent_path().string();
  std::filesystem::create_directories(dir);
  keras::backend::clear_session();
  auto write = [&](auto& model, const std::string& name, const auto& x) {
    auto w = model.get_weights();
    float v = 0.1f;
    for (auto& t : w)
      for (auto& e : t.values) e = 0.5f + 0.3f * std::sin(v += 0.37f);  // positive: variances too
    model.set_weights(w);
    const auto y = eval(model(x));
    model.save_weights(dir + "/" + name + ".weights.h5");
    io::safetensors::save_file({{"x", x}, {"y", y}}, dir + "/" + name + ".safetensors");
    std::remove_cvref_t<decltype(model)> back;
    back.load_weights(dir + "/" + name + ".weights.h5");
    CHECK(relative_difference(back(x), y) == 0);
  };
  FashionCnn cnn;
  write(cnn, "fashion_mnist_cnn", random_uniform<float, Shape<dyn, 28, 28, 1>>(5, 0, 1, {2, 28, 28, 1}));
  keras::backend::clear_session();
  BnModel bn;
  write(bn, "batch_normalization", random_uniform<float, Shape<dyn, 8>>(6, -1, 1, {3, 8}));
}

namespace {
using TorchCnn = keras::Sequential<keras::Input<float, Shape<9, 9, 2>>, layers::Conv2D<4, 3>, layers::BatchNormalization, layers::ReLU,
                                   layers::DepthwiseConv2D<3, layers::same, layers::depth_multiplier<2>>, layers::SeparableConv2D<6, 3>,
                                   layers::Conv2DTranspose<3, 2, layers::strides<2>>, layers::MaxPooling2D<>, layers::Flatten, layers::Dropout,
                                   layers::Dense<10>>;
using TorchRnn = keras::Sequential<keras::Input<std::int32_t, Shape<7>>, layers::Embedding<12, 5>, layers::Conv1D<6, 2>, layers::LayerNormalization,
                                   layers::LSTM<4, layers::return_sequences<true>>, layers::GRU<3>>;
const std::vector<std::string> cnn_modules{"conv", "bn", "dw", "sep_dw+sep_pw", "up", "fc"};
}  // namespace

TEST_CASE("PyTorch's state_dict loads through the layout conversions and reproduces PyTorch's outputs") {
  // tests/keras/generate_torch.py: the same networks in PyTorch, their state_dicts and outputs.
  keras::backend::clear_session();
  TorchCnn cnn(keras::Input<float, Shape<9, 9, 2>>{}, layers::Conv2D<4, 3>{}, layers::BatchNormalization{.epsilon = 1e-5}, layers::ReLU{},
               layers::DepthwiseConv2D<3, layers::same, layers::depth_multiplier<2>>{}, layers::SeparableConv2D<6, 3>{},
               layers::Conv2DTranspose<3, 2, layers::strides<2>>{}, layers::MaxPooling2D<>{}, layers::Flatten{}, layers::Dropout{.rate = 0.5},
               layers::Dense<10>{});
  keras::load_pytorch_weights(cnn, data_file("torch/cnn.safetensors"), cnn_modules);
  const io::safetensors::File c(data_file("torch/cnn_io.safetensors"));
  CHECK(relative_difference(cnn(c.get<float, Shape<dyn, 9, 9, 2>>("x")), c.get<float, Shape<dyn, 10>>("y")) < 2e-5);

  TorchRnn rnn(keras::Input<std::int32_t, Shape<7>>{}, layers::Embedding<12, 5>{}, layers::Conv1D<6, 2>{}, layers::LayerNormalization{.epsilon = 1e-5},
               layers::LSTM<4, layers::return_sequences<true>>{}, layers::GRU<3>{});
  keras::load_pytorch_weights(rnn, data_file("torch/rnn.safetensors"), {"emb", "conv", "norm", "lstm", "gru"});
  const io::safetensors::File r(data_file("torch/rnn_io.safetensors"));
  CHECK(relative_difference(rnn(r.get<std::int32_t, Shape<dyn, 7>>("x")), r.get<float, Shape<dyn, 3>>("y")) < 2e-5);
}

TEST_CASE("PyTorch weights that do not fit: errors name the layer, the module and the shapes; nothing changes before all fit") {
  keras::backend::clear_session();
  TorchCnn cnn;
  const auto before = cnn.get_weights();
  const auto message = [&](auto&& load) {
    try {
      load();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string path = data_file("torch/cnn.safetensors");
  // Too few module names: the model's layers with weights are listed.
  CHECK_THROWS_AS(keras::load_pytorch_weights(cnn, path, {"conv", "bn"}), value_error);
  CHECK_THAT(message([&] { keras::load_pytorch_weights(cnn, path, {"conv", "bn"}); }), Catch::Contains("6 layers with weights") && Catch::Contains("conv2d"));
  // A module the file lacks.
  auto wrong = cnn_modules;
  wrong[5] = "classifier";
  CHECK_THROWS_AS(keras::load_pytorch_weights(cnn, path, wrong), io_error);
  CHECK_THAT(message([&] { keras::load_pytorch_weights(cnn, path, wrong); }), Catch::Contains("classifier.weight") && Catch::Contains("dense"));
  // Modules in the wrong order: the shapes differ.
  std::swap(wrong[0], wrong[4]);
  wrong[5] = "fc";
  CHECK_THROWS_AS(keras::load_pytorch_weights(cnn, path, wrong), shape_error);
  CHECK_THAT(message([&] { keras::load_pytorch_weights(cnn, path, wrong); }), Catch::Contains("conv2d (Conv2D), weight kernel: module up gives [2,2,3,6] in Keras's layout, the model's is [3,3,2,4]"));
  // Nothing was written by the failed loads; skip_mismatch loads what fits.
  const auto after = cnn.get_weights();
  for (std::size_t i = 0; i < before.size(); ++i) CHECK(after[i].values == before[i].values);
  keras::load_pytorch_weights(cnn, path, wrong, {.skip_mismatch = true});
  const auto skipped = cnn.get_weights();
  CHECK(skipped[0].values == before[0].values);   // conv2d's kernel: did not fit
  CHECK(skipped.back().values != before.back().values);  // dense's bias: loaded
}

TEST_CASE("PyTorch tensors of impossible shapes are shape errors, not reads past their end") {
  keras::backend::clear_session();
  TorchCnn cnn;
  TorchRnn rnn;
  const auto before = cnn.get_weights();
  // The reference state_dicts with one tensor replaced.
  const auto with = [](const std::string& file, const std::string& key, std::vector<std::uint64_t> shape) {
    const io::safetensors::File f(data_file("torch/" + file));
    std::vector<float> values(1);
    for (auto e : shape) values.resize(values.size() * std::size_t(e), 0.5f);
    std::vector<std::pair<std::string, io::tensor_ref>> tensors;
    for (const auto& k : f.keys()) {
      const auto& info = f.info(k);
      if (k == key) tensors.emplace_back(k, io::tensor_ref("F32", shape, values.data(), values.size() * sizeof(float)));
      else tensors.emplace_back(k, io::tensor_ref(info.dtype, info.shape, f.bytes(k).data(), f.bytes(k).size()));
    }
    const std::string path = scratch("torch_" + key + ".safetensors");
    io::safetensors::save_file(tensors, path);
    return path;
  };
  const std::vector<std::string> rnn_modules{"emb", "conv", "norm", "lstm", "gru"};
  CHECK_THROWS_AS(keras::load_pytorch_weights(cnn, with("cnn.safetensors", "dw.weight", {8, 2, 3, 3}), cnn_modules), shape_error);  // not depthwise
  CHECK_THROWS_AS(keras::load_pytorch_weights(cnn, with("cnn.safetensors", "dw.weight", {7, 1, 3, 3}), cnn_modules), shape_error);  // 7 of 4 channels
  CHECK_THROWS_AS(keras::load_pytorch_weights(cnn, with("cnn.safetensors", "fc.weight", {10, 74}), cnn_modules), shape_error);      // one row short
  CHECK_THROWS_AS(keras::load_pytorch_weights(cnn, with("cnn.safetensors", "sep_dw.bias", {9}), cnn_modules), shape_error);         // 9 for 8 channels
  CHECK_THROWS_AS(keras::load_pytorch_weights(rnn, with("rnn.safetensors", "gru.bias_hh_l0", {12}), rnn_modules), shape_error);     // 12 for 9
  CHECK_THROWS_AS(keras::load_pytorch_weights(rnn, with("rnn.safetensors", "lstm.bias_hh_l0", {}), rnn_modules), shape_error);      // a scalar
  CHECK_THROWS_AS(keras::load_pytorch_weights(rnn, with("rnn.safetensors", "lstm.weight_ih_l0", {15, 6}), rnn_modules), shape_error);  // not 4 gates
  const auto after = cnn.get_weights();
  for (std::size_t i = 0; i < before.size(); ++i) CHECK(after[i].values == before[i].values);
}
