// ResNet-20 of keras::applications against keras.io's ResNet v1 (depth 20) in Keras 3, with the
// same weights: its inference output, and in training the gradients of every weight and of the
// input. This unit is also the one whose compile time and memory bench/compile_times measures
// for a network defined and trained through Keras.
#include "keras_check.hpp"

#include <ctflow/keras/applications/resnet.hpp>

using namespace ctflow;
using keras_check::data_file;
using keras_check::relative_difference;

TEST_CASE("ResNet-20 against Keras: outputs, and gradients through the residual blocks and their projections") {
  keras::backend::clear_session();
  using Net = keras::applications::ResNet20<>;
  auto model = std::make_unique<Net>();
  const io::safetensors::File f(data_file("weights/resnet20.safetensors"));
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
  // The convolutions' biases before a BatchNormalization in training have a zero gradient in
  // exact arithmetic (the normalization removes any constant): both sides give rounding noise,
  // compared against the scale of the network's gradients (1e-2) rather than their own.
  keras_check::check_gradients(*model, f, 1e-4, 1e-2);
}
