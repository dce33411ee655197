// Trains the CNN of Keras's tutorials on Fashion-MNIST (Conv 32 3x3 relu, max-pool 2, Conv 64
// 3x3 relu, max-pool 2, flatten, dense 128 relu, dense 10) with the custom training loop of
// TensorFlow's guides, in ctflow: a tf.data-style input pipeline, value_and_grad of the sparse
// softmax cross-entropy from logits, Adam (Keras defaults) written with ctflow ops, batch 64,
// TensorBoard summaries, a profile of some steps, and a CheckpointManager that resumes an
// interrupted run where it stopped.
//
//   fashion_mnist_loop [LOGDIR] [EPOCHS] [STEPS_PER_EPOCH]
//
// (defaults: runs/fashion_mnist_loop, 3 epochs, every batch of the training set in each: Keras's
// steps_per_epoch; the sanitizer build's test trains 200 steps of one epoch.)
//
// LOGDIR receives train/ (event files: losses, weight histograms, sample images, the result),
// plugins/profile/ (a Chrome trace of 50 steps) and ckpts/ (the last 2 epochs' checkpoints).
// Run it again with more EPOCHS and it continues from its last checkpoint.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <tuple>

#include <ctflow/ctflow.hpp>
#include <ctflow/data.hpp>
#include <ctflow/io.hpp>

using namespace ctflow;

constexpr std::size_t batch = 64, classes = 10, flat = 5 * 5 * 64, hidden = 128;

/// Keras's glorot_uniform for a kernel of any shape: U(-l, l), l = sqrt(6 / (fan_in + fan_out)),
/// with the receptive field counted into both fans for convolutions.
template <class S> Tensor<float, S> glorot_uniform(std::uint64_t seed) {
  constexpr auto e = S::extents;
  constexpr std::size_t receptive = S::rank == 4 ? e[0] * e[1] : 1;
  constexpr std::size_t fan_in = e[S::rank - 2] * receptive, fan_out = e[S::rank - 1] * receptive;
  const double limit = std::sqrt(6.0 / double(fan_in + fan_out));
  return random_uniform<float, S>(seed, -limit, limit);
}

/// The model's variables (Keras's names); `track` names them for checkpoints.
struct Model {
  Variable<float, Shape<3, 3, 1, 32>> k1{glorot_uniform<Shape<3, 3, 1, 32>>(1), "conv2d/kernel"};
  Variable<float, Shape<32>> b1{zeros<float, Shape<32>>(), "conv2d/bias"};
  Variable<float, Shape<3, 3, 32, 64>> k2{glorot_uniform<Shape<3, 3, 32, 64>>(2), "conv2d_1/kernel"};
  Variable<float, Shape<64>> b2{zeros<float, Shape<64>>(), "conv2d_1/bias"};
  Variable<float, Shape<flat, hidden>> w3{glorot_uniform<Shape<flat, hidden>>(3), "dense/kernel"};
  Variable<float, Shape<hidden>> b3{zeros<float, Shape<hidden>>(), "dense/bias"};
  Variable<float, Shape<hidden, classes>> w4{glorot_uniform<Shape<hidden, classes>>(4), "dense_1/kernel"};
  Variable<float, Shape<classes>> b4{zeros<float, Shape<classes>>(), "dense_1/bias"};
  template <class V> void track(V& v) {
    v("conv2d", k1); v("conv2d_bias", b1); v("conv2d_1", k2); v("conv2d_1_bias", b2);
    v("dense", w3); v("dense_bias", b3); v("dense_1", w4); v("dense_1_bias", b4);
  }

  /// images [n, 28, 28, 1] -> logits [n, 10].
  template <class X> auto logits(const X& images) const {
    auto h1 = nn::max_pool2d<2, 2>(relu(nn::conv2d<nn::VALID>(images, k1) + b1));   // [n, 13, 13, 32]
    auto h2 = nn::max_pool2d<2, 2>(relu(nn::conv2d<nn::VALID>(h1, k2) + b2));       // [n, 5, 5, 64]
    auto flat_h2 = reshape<Shape<dyn, flat>>(h2);  // tf.reshape(h2, [-1, flat]): a static batch stays static
    return matmul(relu(matmul(flat_h2, w3) + b3), w4) + b4;
  }
};

/// Adam with Keras's defaults (learning_rate 1e-3, beta_1 0.9, beta_2 0.999, epsilon 1e-7); its
/// slots (one m and one v per variable) and step count are checkpointed with the model.
struct Adam {
  float learning_rate = 1e-3f, beta_1 = 0.9f, beta_2 = 0.999f, epsilon = 1e-7f;
  std::int64_t iterations = 0;
  Model m, v;  // slots shaped like the model's variables, zero at first
  Adam() {
    auto zero = [](std::string_view, auto& x) { std::fill(x.begin(), x.end(), 0.f); };
    m.track(zero);
    v.track(zero);
  }
  template <class V> void track(V& t) {
    t("iterations", iterations);
    t("m", m);
    t("v", v);
  }

  /// One update of every variable from its gradient (in the order of Model::track).
  template <class... G> void apply(Model& model, const G&... grads) {
    ++iterations;
    const double t = double(iterations);
    const float lr_t = float(learning_rate * std::sqrt(1 - std::pow(beta_2, t)) / (1 - std::pow(beta_1, t)));
    auto update = [&](auto& w, const auto& g, auto& m1, auto& v1) {
      m1.assign(beta_1 * m1 + (1 - beta_1) * g);
      v1.assign(beta_2 * v1 + (1 - beta_2) * square(g));
      w.assign_sub(lr_t * m1 / (sqrt(v1) + epsilon));
    };
    auto vars = std::tie(model.k1, model.b1, model.k2, model.b2, model.w3, model.b3, model.w4, model.b4);
    auto ms = std::tie(m.k1, m.b1, m.k2, m.b2, m.w3, m.b3, m.w4, m.b4);
    auto vs = std::tie(v.k1, v.b1, v.k2, v.b2, v.w3, v.b3, v.w4, v.b4);
    const auto gs = std::tie(grads...);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (update(std::get<I>(vars), std::get<I>(gs), std::get<I>(ms), std::get<I>(vs)), ...);
    }(std::index_sequence_for<G...>{});
  }

};

int main(int argc, char** argv) {
  const std::string logdir = argc > 1 ? argv[1] : "runs/fashion_mnist_loop";
  const std::int64_t epochs = argc > 2 ? std::stoll(argv[2]) : 3;
  const std::size_t steps_per_epoch = argc > 3 ? std::stoull(argv[3]) : 0;  // 0: the whole dataset

  auto [train, test] = datasets::fashion_mnist::load_data();
  // The dataset takes the training tensors over (no copy); the shuffle buffer holds indices into
  // them, and the map scales whole batches of uint8 examples to floats, once per batch.
  auto train_ds = data::from_tensor_slices(std::move(train.first), std::move(train.second))
                      .shuffle(60000, 42)
                      .batch<batch>()
                      .map([](auto x, auto y) { return std::tuple{cast<float>(x) / 255.0f, cast<std::int32_t>(y)}; })
                      .prefetch(data::AUTOTUNE);

  Model model;
  Adam adam;
  std::int64_t epoch = 0;
  train::Checkpoint ckpt{{"model", model}, {"optimizer", adam}, {"epoch", epoch}};
  train::CheckpointManager manager(ckpt, logdir + "/ckpts", 2);
  if (auto restored = manager.restore_or_initialize())
    std::cout << "restored " << *restored << " (epoch " << epoch << ", step " << adam.iterations << ")\n";

  auto writer = summary::create_file_writer(logdir + "/train");
  auto scope = writer.as_default();
  Tensor<float, Shape<batch, 28, 28, 1>> first_images;
  double train_seconds = 0;

  const std::int64_t first_epoch = epoch;
  for (; epoch < epochs;) {
    const bool profiling = epoch == first_epoch;  // 50 steps of this run's first epoch
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    std::size_t steps = 0;
    for (const auto& [images, labels] : train_ds) {
      if (steps == steps_per_epoch && steps_per_epoch > 0) break;
      if (epoch == 0 && steps == 0) first_images = reshape<Shape<batch, 28, 28, 1>>(images);
      if (profiling && steps == 100) profiler::start(logdir);
      {
        profiler::Trace trace("train_step", adam.iterations);
        const auto x = reshape<Shape<batch, 28, 28, 1>>(images);
        auto logits = model.logits(x);
        auto loss = nn::compute_average_loss(nn::sparse_softmax_cross_entropy_with_logits(labels, logits));
        auto [value, g1, gb1, g2, gb2, g3, gb3, g4, gb4] =
            value_and_grad(loss, model.k1, model.b1, model.k2, model.b2, model.w3, model.b3, model.w4, model.b4);
        adam.apply(model, g1, gb1, g2, gb2, g3, gb3, g4, gb4);
        loss_sum += value;
        if (adam.iterations % 100 == 0) summary::scalar("batch_loss", value, adam.iterations);
      }
      if (profiling && steps == 149) {
        const auto profile = profiler::stop();
        std::cout << "profile of 50 steps (" << profile.trace_file << "):\n" << profile.summary(6);
      }
      ++steps;
    }
    ++epoch;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    summary::scalar("epoch_loss", loss_sum / double(steps), epoch);
    summary::histogram("conv2d/kernel", model.k1, epoch);
    summary::histogram("dense/kernel", model.w3, epoch);
    summary::image("inputs", first_images, epoch, 3);
    train_seconds += seconds;
    std::printf("epoch %lld: loss %.4f, %.1f s\n", static_cast<long long>(epoch), loss_sum / double(steps), seconds);
    std::cout << "  saved " << manager.save(epoch) << "\n";
  }

  // Evaluation on the 10000 test images, in batches of 64 (the temporaries of training fit them).
  std::size_t correct = 0;
  const std::size_t n_test = test.second.size();
  for (std::size_t b = 0; b < n_test; b += batch) {
    const std::size_t n = std::min(batch, n_test - b);
    const TensorView<const std::uint8_t, Shape<dyn, 28, 28, 1>> images(test.first.data() + b * 784, {n, 28, 28, 1});
    Tensor<std::int64_t, Shape<dyn>> predicted = argmax<1>(model.logits(cast<float>(images) / 255.0f));
    for (std::size_t i = 0; i < n; ++i) correct += predicted(i) == std::int64_t(test.second(b + i));
  }
  const double accuracy = double(correct) / double(n_test);
  summary::scalar("test_accuracy", accuracy, epoch);
  summary::text("result", "test accuracy " + std::to_string(accuracy), epoch);
  writer.flush();
  std::printf("test accuracy: %.4f\n", accuracy);
  if (epoch > first_epoch) std::printf("mean epoch time: %.2f s\n", train_seconds / double(epoch - first_epoch));
  return accuracy >= 0.885 || epochs < 3 ? 0 : 1;
}
