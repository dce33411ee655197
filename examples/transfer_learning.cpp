// Transfer learning as Keras's guide does it: a convolutional base trained on one task (the
// first five Fashion-MNIST classes: T-shirt, trouser, pullover, dress, coat) is frozen under a
// new head for another (the last five: sandal, shirt, sneaker, bag, ankle boot); the head trains
// first, then the whole network is fine-tuned at a low learning rate.
//
//   transfer_learning [EPOCHS] [STEPS_PER_EPOCH]
//
// (defaults: 2 epochs per phase, every batch; the tests run a few steps.)
#include <cstdio>
#include <string>
#include <vector>

#include <ctflow/data.hpp>
#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;
namespace activations = keras::activations;

namespace {

/// The samples of classes [first, first + 5), images scaled to [0, 1] and labels from 0.
struct task {
  Tensor<float, Shape<dyn, 28, 28, 1>> x;
  Tensor<std::int32_t, Shape<dyn>> y;
};
template <class X, class Y> task classes_from(const X& images, const Y& labels, int first) {
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels.data()[i] >= first && labels.data()[i] < first + 5) rows.push_back(i);
  task t{Tensor<float, Shape<dyn, 28, 28, 1>>({rows.size(), 28, 28, 1}), Tensor<std::int32_t, Shape<dyn>>({rows.size()})};
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t k = 0; k < 784; ++k) t.x.data()[r * 784 + k] = float(images.data()[rows[r] * 784 + k]) / 255.0f;
    t.y.data()[r] = std::int32_t(labels.data()[rows[r]]) - first;
  }
  return t;
}

/// Whether two lists of weights (get_weights()) hold the same values.
template <class W> bool same_values(const W& a, const W& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].values != b[i].values) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t epochs = argc > 1 ? std::stoll(argv[1]) : 2;
  const std::optional<std::int64_t> steps = argc > 2 ? std::optional<std::int64_t>(std::stoll(argv[2])) : std::nullopt;
  auto [train, test] = datasets::fashion_mnist::load_data();
  const task source = classes_from(train.first, train.second, 0), target = classes_from(train.first, train.second, 5);
  const task target_test = classes_from(test.first, test.second, 5);
  keras::utils::set_random_seed(7);

  // The base: convolutions to a feature map, a functional model of its own.
  keras::Input<float, Shape<28, 28, 1>> base_input;
  const auto shallow = layers::MaxPooling2D<2>{}(layers::Conv2D<32, 3, activations::relu>{}(base_input));
  const auto deep = layers::MaxPooling2D<2>{}(layers::Conv2D<64, 3, activations::relu>{}(shallow));
  keras::Model base(base_input, deep);
  base.name = "base";

  // Trained on the source task under a head of its own.
  keras::Input<float, Shape<28, 28, 1>> source_input;
  keras::Model source_model(source_input, layers::Dense<5>{}(layers::GlobalAveragePooling2D{}(base(source_input))));
  source_model.compile(keras::optimizers::Adam{}, keras::losses::SparseCategoricalCrossentropy<>{.from_logits = true}, {"accuracy"});
  std::printf("source task (classes 0-4), the base and its head:\n");
  source_model.fit(source.x, source.y, {.batch_size = 64, .epochs = epochs, .verbose = 2, .steps_per_epoch = steps});

  // The target task: the base frozen (Keras's base_model.trainable = False) under a new head.
  keras::Input<float, Shape<28, 28, 1>> inputs;
  const auto pooled = layers::GlobalAveragePooling2D{}(base(inputs));
  keras::Model model(inputs, layers::Dense<5>{}(layers::Dropout{.rate = 0.2}(pooled)));
  base.trainable = false;
  model.summary();
  const auto frozen = base.get_weights();
  model.compile(keras::optimizers::Adam{}, keras::losses::SparseCategoricalCrossentropy<>{.from_logits = true}, {"accuracy"});
  std::printf("target task (classes 5-9), the new head only:\n");
  model.fit(target.x, target.y, {.batch_size = 64, .epochs = epochs, .verbose = 2, .validation_split = 0.1, .steps_per_epoch = steps});
  const bool kept = same_values(frozen, base.get_weights());
  const double head_only = model.evaluate(target_test.x, target_test.y, {.verbose = 0}).at("accuracy");

  // Fine-tuning: everything trains, at a learning rate low enough not to undo the base.
  base.trainable = true;
  model.compile(keras::optimizers::Adam{.learning_rate = 1e-5}, keras::losses::SparseCategoricalCrossentropy<>{.from_logits = true}, {"accuracy"});
  std::printf("fine-tuning the whole network:\n");
  model.fit(target.x, target.y, {.batch_size = 64, .epochs = epochs, .verbose = 2, .validation_split = 0.1, .steps_per_epoch = steps});
  const double tuned = model.evaluate(target_test.x, target_test.y, {.verbose = 0}).at("accuracy");
  std::printf("base unchanged while frozen: %s\ntest accuracy on classes 5-9: %.4f with the new head, %.4f fine-tuned\n", kept ? "yes" : "NO", head_only, tuned);
  return kept ? 0 : 1;
}
