// A text classifier as Keras's guides build one: token sequences of different lengths, padded
// with 0 to one length, an Embedding with mask_zero (the padding is masked), an LSTM that skips
// the masked steps, and a sigmoid Dense, trained with fit on BinaryCrossentropy.
//
// The sequences are generated: "reviews" of 4 to 40 words from a vocabulary of 100 (0 is the
// padding), some words positive (2-11), some negative (12-21), the rest neutral; a review is
// positive when it has more positive words than negative ones.
//
//   text_classifier [EPOCHS] [STEPS_PER_EPOCH]
//
// (defaults: 4 epochs, every batch; the tests run a few steps.)
#include <cstdio>
#include <optional>
#include <random>
#include <string>

#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;
namespace activations = keras::activations;

namespace {

constexpr std::size_t max_length = 40, vocabulary = 100;

/// n reviews padded to max_length, and their labels (1: positive).
struct reviews {
  Tensor<std::int32_t, Shape<dyn, max_length>> tokens;
  Tensor<float, Shape<dyn, 1>> labels;
};
reviews generate(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::size_t> length(4, max_length);
  std::uniform_int_distribution<std::int32_t> sentiment(2, 21), neutral(22, vocabulary - 1);
  std::bernoulli_distribution opinion(0.3);
  reviews r{Tensor<std::int32_t, Shape<dyn, max_length>>({n, max_length}), Tensor<float, Shape<dyn, 1>>({n, 1})};
  for (std::size_t i = 0; i < n; ++i) {
    int balance = 0;
    std::int32_t* row = r.tokens.data() + i * max_length;
    do {
      const std::size_t len = length(gen);
      balance = 0;
      for (std::size_t t = 0; t < max_length; ++t) {
        if (t >= len) {
          row[t] = 0;  // padding, after the words
          continue;
        }
        row[t] = opinion(gen) ? sentiment(gen) : neutral(gen);
        if (row[t] <= 21) balance += row[t] <= 11 ? 1 : -1;
      }
    } while (balance == 0);  // no ties
    r.labels.data()[i] = balance > 0 ? 1.f : 0.f;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t epochs = argc > 1 ? std::stoll(argv[1]) : 4;
  const std::optional<std::int64_t> steps = argc > 2 ? std::optional<std::int64_t>(std::stoll(argv[2])) : std::nullopt;
  const reviews train = generate(8000, 1), test = generate(2000, 2);
  keras::utils::set_random_seed(3);

  using Net = keras::Sequential<keras::Input<std::int32_t, Shape<max_length>>, layers::Embedding<vocabulary, 16>, layers::LSTM<32>,
                                layers::Dense<1, activations::sigmoid>>;
  Net model({}, {.mask_zero = true}, {}, {});
  model.summary();
  model.compile(keras::optimizers::Adam{.learning_rate = 5e-3}, keras::losses::BinaryCrossentropy{}, {"accuracy"});
  model.fit(train.tokens, train.labels, {.batch_size = 32, .epochs = epochs, .verbose = 2, .validation_split = 0.1, .steps_per_epoch = steps});
  const auto result = model.evaluate(test.tokens, test.labels, {.verbose = 0});
  std::printf("test loss: %.4f, test accuracy: %.4f\n", result.at("loss"), result.at("accuracy"));

  // The mask at work: a review with five padding steps put after its third word reads the same.
  Tensor<std::int32_t, Shape<dyn, max_length>> pair({2, max_length});
  const std::int32_t* review = test.tokens.data();
  std::size_t words = 0;
  while (words < max_length && review[words] != 0) ++words;
  for (std::size_t t = 0; t < max_length; ++t) {
    pair.data()[t] = t < 35 ? review[t] : 0;
    pair.data()[max_length + t] = t < 3 ? review[t] : (t >= 8 && t - 5 < 35) ? review[t - 5] : 0;
  }
  const auto p = model.predict(pair, {.verbose = 0});
  std::printf("the first test review (%zu words): %.6f; with padding inside it: %.6f\n", words, p.data()[0], p.data()[1]);
  if (p.data()[0] != p.data()[1]) return 1;
  return result.at("accuracy") >= 0.9 || steps ? 0 : 1;
}
