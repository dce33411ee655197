// Trains the CNN of Keras's tutorials on Fashion-MNIST with the custom training loop of
// TensorFlow's guides (the `train_step` of "writing a training loop from scratch"), on Keras's
// classes: a Sequential, a tf.data-style input pipeline, the loss's value and its gradient with
// respect to the logits (derived by the compiler), the model's backward pass, Adam's
// apply_gradients over trainable_variables(), metrics that accumulate over the epoch,
// TensorBoard summaries, a profile of some steps, and a CheckpointManager that resumes an
// interrupted run where it stopped. No variable is named by hand.
//
//   fashion_mnist_loop [LOGDIR] [EPOCHS] [STEPS_PER_EPOCH]
//
// (defaults: runs/fashion_mnist_loop, 3 epochs, every batch of the training set in each: Keras's
// steps_per_epoch; the tests train 200 steps of one epoch.)
//
// LOGDIR receives train/ (event files: losses, weight histograms, sample images, the result),
// plugins/profile/ (a Chrome trace of 50 steps) and ckpts/ (the last 2 epochs' checkpoints).
// Run it again with more EPOCHS and it continues from its last checkpoint.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <tuple>

#include <ctflow/data.hpp>
#include <ctflow/io.hpp>
#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;
namespace activations = keras::activations;

constexpr std::size_t batch = 64;

using Net = keras::Sequential<keras::Input<float, Shape<28, 28, 1>>,                                    //
                              layers::Conv2D<32, 3, activations::relu>, layers::MaxPooling2D<2>,         //
                              layers::Conv2D<64, 3, activations::relu>, layers::MaxPooling2D<2>,         //
                              layers::Flatten, layers::Dense<128, activations::relu>, layers::Dense<10>>;

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
                      .map([](auto x, auto y) { return std::tuple{reshape<Shape<batch, 28, 28, 1>>(cast<float>(x) / 255.0f), cast<std::int32_t>(y)}; })
                      .prefetch(data::AUTOTUNE);

  keras::utils::set_random_seed(42);
  Net model;
  keras::optimizers::Adam optimizer;
  const keras::losses::SparseCategoricalCrossentropy loss_fn{.from_logits = true};
  keras::metrics::SparseCategoricalAccuracy train_accuracy;
  keras::metrics::Mean train_loss;

  std::int64_t epoch = 0;
  optimizer.build(model.trainable_variables());  // its slots exist before a restore fills them
  train::Checkpoint ckpt{{"model", model}, {"optimizer", optimizer}, {"epoch", epoch}};
  train::CheckpointManager manager(ckpt, logdir + "/ckpts", 2);
  if (auto restored = manager.restore_or_initialize())
    std::cout << "restored " << *restored << " (epoch " << epoch << ", step " << optimizer.iterations() << ")\n";

  auto writer = summary::create_file_writer(logdir + "/train");
  auto scope = writer.as_default();
  Tensor<float, Shape<batch, 28, 28, 1>> first_images;
  double train_seconds = 0;

  const std::int64_t first_epoch = epoch;
  for (; epoch < epochs;) {
    const bool profiling = epoch == first_epoch;  // 50 steps of this run's first epoch
    const auto start = std::chrono::steady_clock::now();
    train_loss.reset_state();
    train_accuracy.reset_state();
    std::size_t steps = 0;
    for (const auto& [images, labels] : train_ds) {
      if (steps == steps_per_epoch && steps_per_epoch > 0) break;
      if (epoch == 0 && steps == 0) first_images = images;
      if (profiling && steps == 100) profiler::start(logdir);
      {
        profiler::Trace trace("train_step", optimizer.iterations());
        // train_step: the forward pass, the loss and its gradient, the backward pass, one update.
        const auto logits = model(images, true);
        const auto [loss, dlogits] = loss_fn.value_and_gradient(labels, logits);
        model.backward(dlogits);
        optimizer.apply_gradients(model.gradients(), model.trainable_variables());
        train_loss.update_state(loss);
        train_accuracy.update_state(labels, logits);
        if (optimizer.iterations() % 100 == 0) summary::scalar("batch_loss", loss, optimizer.iterations());
      }
      if (profiling && steps == 149) {
        const auto profile = profiler::stop();
        std::cout << "profile of 50 steps (" << profile.trace_file << "):\n" << profile.summary(6);
      }
      ++steps;
    }
    ++epoch;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    summary::scalar("epoch_loss", train_loss.result(), epoch);
    summary::scalar("epoch_accuracy", train_accuracy.result(), epoch);
    for (const auto& v : model.weights()) summary::histogram(v.path, v.value(), epoch);
    summary::image("inputs", first_images, epoch, 3);
    train_seconds += seconds;
    std::printf("epoch %lld: loss %.4f, accuracy %.4f, %.1f s\n", static_cast<long long>(epoch), train_loss.result(), train_accuracy.result(), seconds);
    std::cout << "  saved " << manager.save(epoch) << "\n";
  }

  // Evaluation on the 10000 test images, in batches of 64.
  keras::metrics::SparseCategoricalAccuracy test_accuracy;
  const std::size_t n_test = test.second.size();
  for (std::size_t b = 0; b < n_test; b += batch) {
    const std::size_t n = std::min(batch, n_test - b);
    const TensorView<const std::uint8_t, Shape<dyn, 28, 28, 1>> images(test.first.data() + b * 784, {n, 28, 28, 1});
    const TensorView<const std::uint8_t, Shape<dyn>> labels(test.second.data() + b, {n});
    test_accuracy.update_state(labels, model(cast<float>(images) / 255.0f));
  }
  const double accuracy = test_accuracy.result();
  summary::scalar("test_accuracy", accuracy, epoch);
  summary::text("result", "test accuracy " + std::to_string(accuracy), epoch);
  writer.flush();
  std::printf("test accuracy: %.4f\n", accuracy);
  if (epoch > first_epoch) std::printf("mean epoch time: %.2f s\n", train_seconds / double(epoch - first_epoch));
  return accuracy >= 0.885 || epochs < 3 || steps_per_epoch > 0 ? 0 : 1;
}
