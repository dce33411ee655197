// ResNet-20 of keras::applications against keras.io's ResNet v1 (depth 20) in Keras 3, with the
// same weights: its inference output, and in training the gradients of every weight and of the
// input. This unit is also the one whose compile time and memory bench/compile_times measures
// for a network defined and trained through Keras.
#include "keras_check.hpp"

#include <ctflow/keras/applications/resnet.hpp>

using namespace ctflow;
using keras_check::data;
using keras_check::relative_difference;

TEST_CASE("ResNet-20 against Keras: outputs, and gradients through the residual blocks and their projections") {
  keras::backend::clear_session();
  using Net = keras::applications::ResNet20<>;
  auto model = std::make_unique<Net>();
  const io::safetensors::File f(data("weights/resnet20.safetensors"));
  auto w = model->get_weights();
  for (std::size_t i = 0; i < w.size(); ++i) {
    const std::string key = "w" + std::to_string(i);
    REQUIRE(f.contains(key));
    f.read_into(key, w[i].values.data());
  }
  model->set_weights(w);
  const auto x = f.get<float, Shape<dyn, 32, 32, 3>>("x");
  CHECK(relative_difference((*model)(x), f.get<float, Shape<dyn, 10>>("y")) < 2e-5);
  (*model)(x, true);
  const auto dy = f.get<float, Shape<dyn, 10>>("dy");
  const auto dx = model->backward(TensorView<const float, Shape<dyn, 10>>(dy.data(), dy.dims()), true);
  REQUIRE(dx);
  CHECK(relative_difference(*dx, f.get<float, Shape<dyn, 32, 32, 3>>("dx")) < 1e-4);
  const auto grads = model->gradients();
  std::size_t trainable = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const std::string key = "dw" + std::to_string(i);
    if (!f.contains(key)) continue;
    INFO("weight " << i);
    REQUIRE(trainable < grads.size());
    std::vector<float> expected(w[i].values.size());
    f.read_into(key, expected.data());
    const auto g = grads[trainable++];
    // The convolutions' biases before a BatchNormalization in training have a zero gradient in
    // exact arithmetic (the normalization removes any constant): both sides give rounding noise,
    // compared against the scale of the network's gradients rather than its own.
    double diff = 0, scale = 1e-2;
    for (std::size_t k = 0; k < expected.size(); ++k) {
      diff = std::max(diff, std::abs(double(g[k]) - double(expected[k])));
      scale = std::max(scale, std::abs(double(expected[k])));
    }
    CHECK(diff / scale < 1e-4);
  }
  CHECK(trainable == grads.size());
}
