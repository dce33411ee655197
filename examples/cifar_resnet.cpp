// A functional residual network on CIFAR-shaped data (32x32 RGB images, 10 classes), trained
// with AdamW under a CosineDecay schedule with warmup, as Keras's image-classification examples
// train them. The images are generated: each class is a colour and a stripe orientation under
// noise, so that the run needs no download and the network has something to learn.
//
//   cifar_resnet [EPOCHS] [STEPS_PER_EPOCH]
//
// (defaults: 3 epochs over 4096 images; the tests run a few steps.)
#include <cmath>
#include <cstdio>
#include <string>

#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;
namespace activations = keras::activations;

namespace {

/// n images of class-dependent colour and stripes, with noise; their labels.
std::pair<Tensor<float, Shape<dyn, 32, 32, 3>>, Tensor<std::int32_t, Shape<dyn>>> make_images(std::size_t n, std::uint64_t seed) {
  Tensor<float, Shape<dyn, 32, 32, 3>> x = random_normal<float, Shape<dyn, 32, 32, 3>>(seed, 0.0f, 0.35f, {n, 32, 32, 3});
  Tensor<std::int32_t, Shape<dyn>> y = cast<std::int32_t>(random_uniform<float, Shape<dyn>>(seed + 1, 0.0f, 9.999f, {n}));
  for (std::size_t i = 0; i < n; ++i) {
    const int c = y(i);
    const double angle = 0.314 * c, red = 0.5 + 0.5 * std::cos(c), green = 0.5 + 0.5 * std::sin(1.7 * c);
    for (std::size_t h = 0; h < 32; ++h)
      for (std::size_t w = 0; w < 32; ++w) {
        const float stripe = float(std::sin(0.6 * (std::cos(angle) * double(h) + std::sin(angle) * double(w))));
        float* p = x.data() + ((i * 32 + h) * 32 + w) * 3;
        p[0] += float(red) * stripe;
        p[1] += float(green) * stripe;
        p[2] += 0.3f * stripe;
      }
  }
  return {std::move(x), std::move(y)};
}

/// Keras's residual block: two 3x3 convolutions with batch normalization, the input added back.
template <class X> auto residual_block(const X& x) {
  const auto a = layers::ReLU{}(layers::BatchNormalization{}(layers::Conv2D<32, 3, layers::same, layers::use_bias<false>>{}(x)));
  const auto b = layers::BatchNormalization{}(layers::Conv2D<32, 3, layers::same, layers::use_bias<false>>{}(a));
  return layers::ReLU{}(layers::Add{}(x, b));
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t epochs = argc > 1 ? std::stoll(argv[1]) : 3;
  const std::optional<std::int64_t> steps = argc > 2 ? std::optional<std::int64_t>(std::stoll(argv[2])) : std::nullopt;
  auto [x_train, y_train] = make_images(4096, 1);
  auto [x_test, y_test] = make_images(1024, 2);
  keras::utils::set_random_seed(3);

  keras::Input<float, Shape<32, 32, 3>> inputs;
  const auto stem = layers::ReLU{}(layers::BatchNormalization{}(layers::Conv2D<32, 3, layers::same, layers::use_bias<false>>{}(inputs)));
  const auto pooled = layers::MaxPooling2D<2>{}(residual_block(stem));
  const auto features = layers::GlobalAveragePooling2D{}(residual_block(pooled));
  keras::Model model(inputs, layers::Dense<10>{}(features));
  model.summary();

  // The schedule spans the run's updates: 90% of the images train (the rest validate).
  const std::int64_t batch = 64, per_epoch = steps ? *steps : (4096 * 9 / 10 + batch - 1) / batch;
  namespace schedules = keras::optimizers::schedules;
  const schedules::CosineDecay schedule{.initial_learning_rate = 1e-4, .decay_steps = double(epochs * per_epoch), .warmup_target = 2e-3,
                                        .warmup_steps = double(per_epoch) / 2};
  keras::optimizers::AdamW optimizer{.learning_rate = schedule, .weight_decay = 1e-4};
  optimizer.exclude_from_weight_decay({"bias", "gamma", "beta"});
  model.compile(optimizer, keras::losses::SparseCategoricalCrossentropy<>{.from_logits = true}, {"accuracy"});
  model.fit(x_train, y_train, {.batch_size = std::size_t(batch), .epochs = epochs, .verbose = 2, .validation_split = 0.1, .steps_per_epoch = steps});
  const auto result = model.evaluate(x_test, y_test, {.verbose = 0});
  std::printf("test accuracy: %.4f (learning rate now %.3g after %lld updates)\n", result.at("accuracy"), model.optimizer().learning_rate(),
              static_cast<long long>(model.optimizer().iterations()));
  return result.at("accuracy") >= 0.5 || steps ? 0 : 1;
}
