// Every Keras layer but the convolutions and pooling (conv_layers_test.cpp) against Keras 3
// itself: given the same weights, the same output, and the same gradients of sum(y * dy) with
// respect to the input and the weights (tests/keras/generate.py recorded them with
// tf.GradientTape).
#include "keras_check.hpp"

using namespace ctflow;
using keras_check::check_layer;
namespace layers = keras::layers;
namespace activations = keras::activations;

TEST_CASE("Dense: 2-D and 3-D inputs, activations, without bias") {
  check_layer<float, Shape<dyn, 4>>("dense", layers::Dense<5, activations::relu>{}, false, true);
  check_layer<float, Shape<dyn, 3, 4>>("dense_3d", layers::Dense<6>{}, false, true);
  check_layer<float, Shape<dyn, 5>>("dense_no_bias_softmax", layers::Dense<4, activations::softmax, layers::use_bias<false>>{}, false, true);
}

TEST_CASE("reshaping: Flatten, Reshape with an inferred extent, Permute, ZeroPadding2D, UpSampling2D") {
  check_layer<float, Shape<dyn, 3, 4, 2>>("flatten", layers::Flatten{}, false, true);
  check_layer<float, Shape<dyn, 3, 4, 2>>("reshape", layers::Reshape<Shape<6, dyn>>{}, false, true);
  check_layer<float, Shape<dyn, 3, 5>>("permute", layers::Permute<2, 1>{}, false, true);
  check_layer<float, Shape<dyn, 3, 4, 2>>("zero_padding2d", layers::ZeroPadding2D<layers::pads{1, 2, 3, 0}>{}, false, true);
  check_layer<float, Shape<dyn, 3, 4, 2>>("up_sampling2d", layers::UpSampling2D<>{}, false, true);
  check_layer<float, Shape<dyn, 3, 4, 2>>("up_sampling2d_bilinear", layers::UpSampling2D<3>{.interpolation = image::ResizeMethod::BILINEAR}, false, true);
}

TEST_CASE("normalization: BatchNormalization in training (with its moving statistics) and inference, LayerNormalization") {
  check_layer<float, Shape<dyn, 3, 3, 5>>("batch_normalization", layers::BatchNormalization{}, true, true);
  check_layer<float, Shape<dyn, 3, 3, 5>>("batch_normalization_inference", layers::BatchNormalization{}, false, false);
  check_layer<float, Shape<dyn, 4, 6>>("layer_normalization", layers::LayerNormalization{}, false, true);
}

TEST_CASE("activation layers, Dropout in inference, Rescaling, Embedding") {
  check_layer<float, Shape<dyn, 5>>("activation_tanh", layers::Activation<activations::tanh>{}, false, true);
  check_layer<float, Shape<dyn, 7>>("relu", layers::ReLU{.max_value = 0.6, .negative_slope = 0.1, .threshold = 0.2}, false, true);
  check_layer<float, Shape<dyn, 7>>("leaky_relu", layers::LeakyReLU{.negative_slope = 0.2}, false, true);
  check_layer<float, Shape<dyn, 7>>("softmax", layers::Softmax<>{}, false, true);
  check_layer<float, Shape<dyn, 8>>("dropout_inference", layers::Dropout(0.5), false, false);
  check_layer<float, Shape<dyn, 5>>("rescaling", layers::Rescaling(1.0 / 255, -1.0), false, true);
  check_layer<std::int32_t, Shape<dyn, 5>>("embedding", layers::Embedding<10, 4>{}, false, true);
}

TEST_CASE("LSTM and GRU against Keras: outputs and gradients through time, gate orders, reset_after, go_backwards") {
  check_layer<float, Shape<dyn, 5, 3>>("lstm", layers::LSTM<4>{}, false, true);
  check_layer<float, Shape<dyn, dyn, 3>>("lstm_sequences", layers::LSTM<3, layers::return_sequences<true>>{}, false, true);
  check_layer<float, Shape<dyn, 6, 2>>(
      "lstm_backwards",
      layers::LSTM<3, layers::go_backwards<true>, layers::return_sequences<true>, activations::relu, layers::recurrent_activation<activations::hard_sigmoid>>{},
      false, true);
  check_layer<float, Shape<dyn, 5, 3>>("gru", layers::GRU<4>{}, false, true);
  check_layer<float, Shape<dyn, 4, 3>>("gru_v1", layers::GRU<3, layers::reset_after<false>, layers::return_sequences<true>>{}, false, true);
  check_layer<float, Shape<dyn, 3, 4>>("gru_backwards", layers::GRU<2, layers::go_backwards<true>, layers::use_bias<false>>{}, false, true);
  // Keras's initial values: the forget gate's bias 1, an orthogonal recurrent kernel.
  keras::layer_instance<layers::LSTM<3>::built<float, Shape<dyn, 4, 2>>> lstm(layers::LSTM<3>{});
  for (std::size_t j = 0; j < 12; ++j) CHECK(lstm.layer.bias.data()[j] == (j >= 3 && j < 6 ? 1.f : 0.f));
  const Tensor<float, Shape<3, 3>> gram = matmul(lstm.layer.recurrent_kernel, transpose(lstm.layer.recurrent_kernel));
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) CHECK(std::abs(gram(i, j) - (i == j ? 1.f : 0.f)) < 1e-5f);
}

TEST_CASE("Dropout in training: kept elements scaled by 1 / (1 - rate), a new mask per call, the seed decides it") {
  using L = layers::Dropout::built<float, Shape<dyn, 1000>>;
  keras::layer_instance<L> a(layers::Dropout{.rate = 0.25, .seed = 7}), b(layers::Dropout{.rate = 0.25, .seed = 7});
  const auto x = ones<float, Shape<dyn, 1000>>({4, 1000});
  const TensorView<const float, Shape<dyn, 1000>> xv(x.data(), x.dims());
  const Tensor<float, Shape<dyn, 1000>> first = a.forward(xv, true);
  std::size_t kept = 0;
  for (float v : first) {
    REQUIRE((v == 0.f || std::abs(v - 1.f / 0.75f) < 1e-6f));
    kept += v != 0.f;
  }
  CHECK(std::abs(double(kept) / 4000 - 0.75) < 0.03);
  const Tensor<float, Shape<dyn, 1000>> again = a.forward(xv, true), other = b.forward(xv, true);
  CHECK(keras_check::relative_difference(other, first) == 0);  // same seed, same first mask
  CHECK(keras_check::relative_difference(again, first) > 0);   // the next call draws another
  // Its gradient is the same mask: dy where kept, scaled.
  auto dx = a.backward(TensorView<const float, Shape<dyn, 1000>>(x.data(), x.dims()));
  REQUIRE(dx);
  CHECK(keras_check::relative_difference(*dx, again) == 0);
  CHECK(keras_check::relative_difference(Tensor<float, Shape<dyn, 1000>>(a.forward(xv, false)), x) == 0);  // inference: identity
}
