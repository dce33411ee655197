// Trains a small model with BackupAndRestore, killing itself (SIGKILL: no unwinding, no
// flushing) after a given batch: the victim of fit_test's kill-and-resume test. Run to the end,
// it writes the final weights to DIR/final.weights.h5.
//
//   backup_killee DIR [KILL_AFTER_BATCH]
//
// (KILL_AFTER_BATCH counts the batches of every epoch of this run: 10 per epoch, 3 epochs.)
#include <csignal>
#include <cstdio>
#include <string>

#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;
namespace callbacks = keras::callbacks;

using Net = keras::Sequential<keras::Input<float, Shape<8>>, layers::Dense<16, keras::activations::relu>, layers::Dropout, layers::Dense<3>>;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: backup_killee DIR [KILL_AFTER_BATCH]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const long kill_after = argc > 2 ? std::stol(argv[2]) : -1;
  keras::utils::set_random_seed(9);
  Net model({}, {}, {.rate = 0.25}, {});
  model.compile(keras::optimizers::Adam{.learning_rate = 0.01}, keras::losses::SparseCategoricalCrossentropy<>{.from_logits = true}, {"accuracy"});
  const auto x = random_uniform<float, Shape<dyn, 8>>(5, -1, 1, {160, 8});
  const Tensor<std::int32_t, Shape<dyn>> y = cast<std::int32_t>(argmax<1>(matmul(x, random_uniform<float, Shape<8, 3>>(7, -1, 1))));
  long batches = 0;
  callbacks::LambdaCallback killer({.on_train_batch_end = [&](std::int64_t, const callbacks::Logs&) {
    if (++batches == kill_after) std::raise(SIGKILL);
  }});
  model.fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0, .callbacks = {callbacks::BackupAndRestore({.backup_dir = dir + "/backup", .save_freq = 4}), killer}});
  model.save_weights(dir + "/final.weights.h5");
  return 0;
}
