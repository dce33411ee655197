#pragma once
/// @file
/// @brief keras.layers.Dropout(rate, seed): in training, each element is kept with probability
/// 1 - rate and scaled by 1 / (1 - rate) (inverted dropout); in inference, the identity. Each
/// training call draws a new mask from the layer's seed stream, as Keras's SeedGenerator does.
///
///     layers::Dropout(0.5)            // or layers::Dropout{.rate = 0.5, .seed = 42}

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include <ctflow/keras/config_dict.hpp>
#include <ctflow/keras/layer.hpp>
#include <ctflow/ops/nn/normalization.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.Dropout(rate, noise_shape=None, seed=None).
struct Dropout {
  double rate = 0.0;
  std::optional<std::uint64_t> seed{};
  CTFLOW_KERAS_LAYER_SPEC("Dropout");
  /// @brief Keras's get_config: rate, seed (null when unset; Keras's seeds are 31-bit) and
  /// noise_shape (none).
  void get_config(config_dict& c) const {
    c.set("rate", rate);
    if (seed) c.set("seed", std::int64_t(*seed & 0x7fffffff));
    else c.set("seed", nullptr);
    c.set("noise_shape", nullptr);
  }

  template <class T, ShapeType In, class D = cpu> struct built {
    static constexpr const char* class_name = "Dropout";
    static constexpr bool supports_masking = true;  // passes its input's mask on
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = In;
    double rate;
    std::uint64_t seed;
    /// The masks drawn so far (Keras's seed generator state): checkpoints keep it, so that a
    /// resumed fit draws the masks an uninterrupted one would.
    mutable std::int64_t draws = 0;
    explicit built(const Dropout& c) : rate(c.rate), seed(c.seed ? *c.seed : utils::next_seed()) {
      if (!(rate >= 0.0 && rate <= 1.0)) throw value_error("ctflow::keras::Dropout: rate must be in [0, 1], got " + std::to_string(rate));
    }
    auto weights() { return std::tuple<>(); }
    template <class X, class Training> auto call(const X& x, Training training) const {
      if constexpr (training) {
        // nn::dropout's mask and scale; a rate of 1 keeps nothing (Keras's zeros).
        const auto w = random::philox(seed, std::uint64_t(draws++));
        auto keep = random_uniform<T, In, D>(std::uint64_t(w[0]) << 32 | w[1], 0.0, 1.0, x.dims()) >= T(rate);
        return where(std::move(keep), x * T(rate < 1.0 ? 1.0 / (1.0 - rate) : 0.0), T(0));
      } else {
        return X(x);
      }
    }
  };
};

}  // namespace ctflow::keras::layers
