// The main job: Keras's tutorial CNN on Fashion-MNIST, trained as Keras trains it. A Sequential
// (Rescaling, Conv2D 32 3x3 relu, MaxPooling2D, Conv2D 64 3x3 relu, MaxPooling2D, Flatten, Dense
// 128 relu, Dense 10), summary(), compile with Adam, SparseCategoricalCrossentropy(from_logits)
// and "accuracy", fit with batch 64 and a 10% validation split (Keras's progress bar), with
// TensorBoard logs, the best model kept by ModelCheckpoint and a backup that resumes a killed
// run; then evaluate on the test set and save the model as a .keras archive Keras 3 loads.
//
//   fashion_mnist [LOGDIR] [EPOCHS] [STEPS_PER_EPOCH]
//
// (defaults: runs/fashion_mnist, 3 epochs, every batch of the training split in each.) LOGDIR
// receives logs/ (TensorBoard: train/ and validation/), best.keras (the epoch of the best
// validation accuracy), backup/ (while fit runs) and fashion_mnist.keras (the trained model with
// its optimizer's state, which keras.models.load_model and keras::load_model read and train on).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include <ctflow/data.hpp>
#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;
namespace activations = keras::activations;

using Net = keras::Sequential<keras::Input<float, Shape<28, 28, 1>>, layers::Rescaling,                   //
                              layers::Conv2D<32, 3, activations::relu>, layers::MaxPooling2D<2>,         //
                              layers::Conv2D<64, 3, activations::relu>, layers::MaxPooling2D<2>,         //
                              layers::Flatten, layers::Dense<128, activations::relu>, layers::Dense<10>>;

int main(int argc, char** argv) {
  const std::string logdir = argc > 1 ? argv[1] : "runs/fashion_mnist";
  const std::int64_t epochs = argc > 2 ? std::stoll(argv[2]) : 3;
  const std::optional<std::int64_t> steps = argc > 3 ? std::optional<std::int64_t>(std::stoll(argv[3])) : std::nullopt;

  // Images [60000, 28, 28] and labels [60000], uint8: fit converts each batch to the model's
  // float32 [64, 28, 28, 1] (the channel axis added, as Keras adds it) and the labels to int32.
  auto [train, test] = datasets::fashion_mnist::load_data();

  keras::utils::set_random_seed(42);
  Net model({}, {.scale = 1.0 / 255}, {}, {}, {}, {}, {}, {}, {});
  model.summary();
  model.compile(keras::optimizers::Adam{}, keras::losses::SparseCategoricalCrossentropy{.from_logits = true}, {"accuracy"});

  namespace callbacks = keras::callbacks;
  // Each epoch's time (validation included), as a user callback measures it.
  std::vector<double> seconds;
  std::chrono::steady_clock::time_point epoch_start;
  callbacks::LambdaCallback timer({.on_epoch_begin = [&](std::int64_t, const callbacks::Logs&) { epoch_start = std::chrono::steady_clock::now(); },
                                   .on_epoch_end = [&](std::int64_t, const callbacks::Logs&) {
                                     seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count());
                                   }});
  const auto history = model.fit(
      train.first, train.second,
      {.batch_size = 64,
       .epochs = epochs,
       .callbacks = {timer, callbacks::TensorBoard({.log_dir = logdir + "/logs", .histogram_freq = 1}),
                     callbacks::ModelCheckpoint({.filepath = logdir + "/best.keras", .monitor = "val_accuracy", .save_best_only = true}),
                     callbacks::BackupAndRestore({.backup_dir = logdir + "/backup"})},
       .validation_split = 0.1,
       .steps_per_epoch = steps});

  const auto result = model.evaluate(test.first, test.second, {.batch_size = 64, .verbose = 0});
  std::printf("test loss: %.4f, test accuracy: %.4f\n", result.at("loss"), result.at("accuracy"));
  model.save(logdir + "/fashion_mnist.keras");
  if (!seconds.empty()) std::printf("mean epoch time: %.2f s\n", std::accumulate(seconds.begin(), seconds.end(), 0.0) / double(seconds.size()));
  std::printf("best validation accuracy: %.4f\n", *std::max_element(history.history.at("val_accuracy").begin(), history.history.at("val_accuracy").end()));
  // Every batch of 3 epochs reaches 88.5% test accuracy or more, of 1 epoch 85% (86.4% here); a
  // run of fewer steps is not judged.
  const double goal = steps ? 0.0 : epochs >= 3 ? 0.885 : epochs >= 1 ? 0.85 : 0.0;
  return result.at("accuracy") >= goal ? 0 : 1;
}
