// Models and their files as users meet them: .keras archives Keras wrote of functional models,
// a damaged archive refused by its CRC-32, models (functional, Sequential, custom, nested) in
// train::Checkpoint and restored into fresh models, and models called on tensors, expressions and
// tuples, with shape errors naming the model and its input.
#include "keras_check.hpp"
#include "test_models.hpp"

#include <filesystem>

using namespace ctflow;
using keras_check::data_file;
using keras_check::view;
using test_files::slurp;
using keras_check::relative_difference;
using keras_check::scratch;
using keras_check::summary_of;
using test_models::Linear;
using test_models::MLPBlock;
using test_models::mobile_block_model;
using test_models::residual_model;
namespace layers = keras::layers;
namespace activations = keras::activations;

TEST_CASE("functional: .keras archives Keras wrote of a residual block and of a MobileNetV2 block load and reproduce Keras's outputs") {
  {
    auto model = residual_model();
    model.load_weights(data_file("weights/residual.keras"));
    const io::safetensors::File f(data_file("weights/residual.safetensors"));
    CHECK(relative_difference(model(view(f.get<float, Shape<dyn, 6, 6, 3>>("x"))), f.get<float, Shape<dyn, 3>>("y")) < 2e-5);
  }
  auto model = mobile_block_model();
  CHECK(summary_of(model) == slurp(data_file("summaries/mobile_block.txt")));
  const io::safetensors::File f(data_file("weights/mobile_block.safetensors"));
  const auto x = f.get<float, Shape<dyn, 8, 8, 4>>("x");
  for (const char* file : {"weights/mobile_block.keras", "weights/mobile_block.weights.h5"}) {
    INFO(file);
    auto m = mobile_block_model();
    m.load_weights(data_file(file));
    CHECK(relative_difference(m(view(x)), f.get<float, Shape<dyn, 3>>("y")) < 2e-5);
  }
}

TEST_CASE("functional: a .keras archive whose weights member is damaged is refused by its CRC-32, and the model keeps its weights") {
  auto model = residual_model();
  const auto before = model.get_weights();
  std::string bytes = test_files::slurp(data_file("weights/residual.keras"));
  // 64 bytes flipped inside model.weights.h5's data (the archive's last member): the zip is
  // still well formed, only the member's CRC-32 tells.
  const std::size_t member = bytes.rfind("model.weights.h5", bytes.find("PK\x01\x02"));
  REQUIRE(member != std::string::npos);
  for (std::size_t i = member + 4096; i < member + 4096 + 64; ++i) bytes[i] = char(~bytes[i]);
  const std::string path = scratch("damaged.keras");
  test_files::spit(path, bytes);
  CHECK_THROWS_WITH(model.load_weights(path), Catch::Contains("bad CRC-32 for zip member 'model.weights.h5'"));
  CHECK(keras_check::same_weights(model.get_weights(), before));
}

TEST_CASE("train::Checkpoint holds models: functional, Sequential with a custom layer, nested; a fresh model restored computes the same") {
  // A functional model with Keras's weights (moving statistics included), and a step counter.
  auto model = residual_model();
  model.load_weights(data_file("weights/residual.weights.h5"));
  std::int64_t step = 42;
  const std::string dir = scratch("ckpt");
  std::filesystem::create_directories(dir);
  train::Checkpoint ckpt{{"model", model}, {"step", step}};
  const std::string path = ckpt.save(dir + "/residual");
  const io::safetensors::File file(train::checkpoint_file(path));
  for (const char* key : {"model/conv2d/kernel", "model/conv2d_1/bias", "model/batch_normalization/moving_variance", "model/dense/kernel", "step"})
    CHECK(file.contains(key));
  const io::safetensors::File f(data_file("weights/residual.safetensors"));
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
