// Writes the networks the embedded tests compile for each target, with keras::export_header:
//
//   mlp.hpp, cnn.hpp  Fashion-MNIST's MLP (784-128-10) and Keras's tutorial CNN (the demo's),
//                     trained here for a few hundred steps on Debian's dataset-fashion-mnist
//                     (deterministic: the same weights on every run), with the first 32 test
//                     images as their test case;
//   zoo.hpp           a network of every layer the embedded form has (strided and same-padded
//                     convolutions, depthwise, batch normalization with moving statistics of its
//                     own, zero padding, the poolings, reshapes, a permute, element-wise
//                     activations and softmax), untrained, on random inputs;
//   residual.hpp      a functional model of branches (a residual sum, a gate's product,
//                     concatenations, a transposed convolution), untrained, on random inputs: an
//                     embedded::Model;
//   resnet.hpp        a Sequential of the applications' residual blocks (ResidualBlock, and
//                     BasicBlock with its projection), untrained, on random inputs;
//   rnn.hpp           a network of the recurrent layers (an LSTM of every step, a GRU backwards with
//                     its reset gate before its product, a GRU of the last step), untrained, on
//                     random sequences;
//   mlp_int8.hpp,     the MLP and the CNN quantized to int8 (keras::quantize, calibrated on 512
//   cnn_int8.hpp      training images), with the same test images and the int8 network's outputs;
//   int8_accuracy.txt each one's test accuracy on the 10,000 test images, float and int8
//                     (check_accuracy.cmake holds them within a point of each other).
//
//   export_models OUTDIR
#include <cstdio>
#include <string>

#include <ctflow/data.hpp>
#include <ctflow/keras.hpp>
#include <ctflow/keras/applications.hpp>
#include <ctflow/keras/export.hpp>
#include <ctflow/keras/quantize.hpp>

using namespace ctflow;
namespace layers = keras::layers;
namespace activations = keras::activations;

using Mlp = keras::Sequential<keras::Input<float, Shape<28, 28, 1>>, layers::Rescaling, layers::Flatten, layers::Dense<128, activations::relu>,
                              layers::Dense<10>>;
using Cnn = keras::Sequential<keras::Input<float, Shape<28, 28, 1>>, layers::Rescaling, layers::Conv2D<32, 3, activations::relu>, layers::MaxPooling2D<2>,
                              layers::Conv2D<64, 3, activations::relu>, layers::MaxPooling2D<2>, layers::Flatten, layers::Dense<128, activations::relu>,
                              layers::Dense<10>>;
using Zoo = keras::Sequential<keras::Input<float, Shape<12, 12, 3>>, layers::Rescaling, layers::ZeroPadding2D<layers::pads{1, 0, 2, 1}>,
                              layers::Conv2D<8, 3, layers::same, layers::strides<2>, activations::tanh>, layers::BatchNormalization,
                              layers::DepthwiseConv2D<3, layers::depth_multiplier<2>, activations::relu6>, layers::MaxPooling2D<2, layers::same>,
                              layers::Activation<activations::swish>, layers::Dropout, layers::Conv2D<12, 1, layers::use_bias<false>>, layers::ReLU,
                              layers::AveragePooling2D<2, layers::strides<1>>, layers::Reshape<Shape<4, 12>>, layers::Dense<6, activations::softmax>,
                              layers::Reshape<Shape<8, 3>>, layers::Permute<2, 1>, layers::Activation<activations::log_softmax>, layers::Flatten, layers::Dense<4>>;

/// The residual network: two convolutions and their sum, a 1x1 convolution's sigmoid gating a
/// depthwise branch, the gate and the branch concatenated, upsampled by a transposed convolution
/// and pooled back beside them, pooled, Dropout, Dense with softmax.
auto residual_network() {
  keras::Input<float, Shape<10, 10, 3>> inputs;
  auto x = layers::Conv2D<8, 3, layers::same, activations::relu>{}(inputs);
  auto y = layers::BatchNormalization{}(layers::Conv2D<8, 3, layers::same>{}(x));
  auto sum = layers::ReLU{}(layers::Add{}(x, y));
  auto gate = layers::Conv2D<4, 1, activations::sigmoid>{}(sum);
  auto branch = layers::DepthwiseConv2D<3, layers::same>{}(sum);
  auto gated = layers::Multiply{}(gate, layers::Conv2D<4, 1>{}(branch));
  auto joined = layers::Concatenate<>{}(gated, branch);
  auto up = layers::Conv2DTranspose<4, 3, layers::strides<2>, layers::same, activations::relu>{}(joined);  // 20 x 20
  auto pooled = layers::GlobalAveragePooling2D{}(layers::MaxPooling2D<2>{}(layers::Concatenate<>{}(layers::MaxPooling2D<2>{}(up), joined)));
  auto outputs = layers::Dense<5, activations::softmax>{}(layers::Dropout{.rate = 0.25}(pooled));
  return keras::Model(inputs, outputs);
}

template <class Model, class Images, class Labels>
void fit_steps(Model& model, const Images& images, const Labels& labels, std::int64_t steps) {
  model.compile(keras::optimizers::Adam{}, keras::losses::SparseCategoricalCrossentropy{.from_logits = true}, {"accuracy"});
  model.fit(images, labels, {.batch_size = 64, .epochs = 1, .verbose = 0, .steps_per_epoch = steps});
}

/// The share of the n examples whose largest of the 10 outputs y is their label.
template <class Labels> double accuracy(const float* y, const Labels& labels, std::size_t n) {
  std::size_t right = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < 10; ++c)
      if (y[i * 10 + c] > y[i * 10 + best]) best = c;
    right += best == std::size_t(labels.data()[i]);
  }
  return double(right) / double(n);
}

/// Model quantized on representative images, exported as OUTDIR/<name>_int8.hpp with the test
/// case's images, its test accuracy and the float model's written to report.
template <class Model, class Images, class Labels>
void export_int8(Model& model, const std::string& out, const std::string& name, const Images& representative, const Images& test_images,
                 const Labels& test_labels, const Images& case_images, std::FILE* report) {
  const auto q = keras::quantize(model, representative);
  const std::size_t n = test_images.dims()[0];
  const auto y = model.predict(test_images, {.batch_size = 500, .verbose = 0});
  const std::vector<float> yq = q.predict(test_images.data(), n);
  std::fprintf(report, "%s float %.4f int8 %.4f\n", name.c_str(), accuracy(y.data(), test_labels, n), accuracy(yq.data(), test_labels, n));
  keras::export_header(q, out + "/" + name + "_int8.hpp", {.name_space = name + "_int8"}, case_images);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: export_models OUTDIR\n");
    return 2;
  }
  const std::string out = argv[1];
  auto [train_set, test_set] = datasets::fashion_mnist::load_data();
  const Tensor<float, Shape<dyn, 28, 28, 1>> images(reshape<Shape<dyn, 28, 28, 1>>(cast<float>(slice<Shape<32, 28, 28>>(test_set.first, {0, 0, 0})), {32, 28, 28, 1}));

  keras::utils::set_random_seed(7);
  Mlp mlp({}, {.scale = 1.0 / 255}, {}, {}, {});
  fit_steps(mlp, train_set.first, train_set.second, 300);
  keras::export_header(mlp, out + "/mlp.hpp", {.name_space = "mlp"}, images);

  Cnn cnn({}, {.scale = 1.0 / 255}, {}, {}, {}, {}, {}, {}, {});
  fit_steps(cnn, train_set.first, train_set.second, 150);
  keras::export_header(cnn, out + "/cnn.hpp", {.name_space = "cnn"}, images);

  using Images = Tensor<float, Shape<dyn, 28, 28, 1>>;
  const Images representative(reshape<Shape<dyn, 28, 28, 1>>(cast<float>(slice<Shape<512, 28, 28>>(train_set.first, {0, 0, 0})), {512, 28, 28, 1}));
  const std::size_t n = test_set.first.dims()[0];
  const Images test_images(reshape<Shape<dyn, 28, 28, 1>>(cast<float>(test_set.first), {n, 28, 28, 1}));
  std::FILE* report = std::fopen((out + "/int8_accuracy.txt").c_str(), "w");
  if (!report) return 1;
  export_int8(mlp, out, "mlp", representative, test_images, test_set.second, images, report);
  export_int8(cnn, out, "cnn", representative, test_images, test_set.second, images, report);
  std::fclose(report);

  Zoo zoo({}, {.scale = 0.5, .offset = -1}, {}, {}, {}, {}, {}, {}, {.rate = 0.5}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});
  // Moving statistics and an affine part of the batch normalization's own.
  auto& bn = zoo.get_layer<3>().layer;
  bn.gamma.assign(random_uniform<float, Shape<8>>(1, 0.5, 1.5));
  bn.beta.assign(random_uniform<float, Shape<8>>(2, -0.5, 0.5));
  bn.moving_mean.assign(random_uniform<float, Shape<8>>(3, -0.2, 0.2));
  bn.moving_variance.assign(random_uniform<float, Shape<8>>(4, 0.5, 2.0));
  const auto inputs = random_uniform<float, Shape<dyn, 12, 12, 3>>(5, 0.0, 4.0, {6, 12, 12, 3});
  keras::export_header(zoo, out + "/zoo.hpp", {.name_space = "zoo"}, inputs);
  using ResNet = keras::Sequential<keras::Input<float, Shape<12, 12, 3>>, layers::Conv2D<8, 3, layers::same>, layers::BatchNormalization, layers::ReLU,
                                   keras::applications::ResidualBlock<8>, keras::applications::BasicBlock<16, 2>, layers::GlobalAveragePooling2D,
                                   layers::Dense<4, activations::softmax>>;
  ResNet resnet;
  keras::export_header(resnet, out + "/resnet.hpp", {.name_space = "resnet"}, random_uniform<float, Shape<dyn, 12, 12, 3>>(7, -1.0, 1.0, {5, 12, 12, 3}));
  auto residual = residual_network();
  keras::export_header(residual, out + "/residual.hpp", {.name_space = "residual"}, random_uniform<float, Shape<dyn, 10, 10, 3>>(6, -1.0, 1.0, {6, 10, 10, 3}));
  using Rnn = keras::Sequential<keras::Input<float, Shape<9, 5>>, layers::LSTM<12, layers::return_sequences<true>>,
                                layers::GRU<6, layers::return_sequences<true>, layers::go_backwards<true>, layers::reset_after<false>>, layers::GRU<5>,
                                layers::Dense<3, activations::softmax>>;
  Rnn rnn;
  keras::export_header(rnn, out + "/rnn.hpp", {.name_space = "rnn"}, random_uniform<float, Shape<dyn, 9, 5>>(8, -2.0, 2.0, {6, 9, 5}));
  return 0;
}
