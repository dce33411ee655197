#pragma once
/// @file
/// @brief keras.layers.GlobalAveragePooling2D and GlobalMaxPooling2D: the mean or maximum over
/// height and width, [batch, channels].

#include <string>
#include <tuple>

#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/ops/nn/pool.hpp>

namespace ctflow::keras::layers {

namespace detail {
template <bool Max, const char* Name> struct global_pooling2d {
  /// Keras's get_config: data_format and keepdims (false).
  static void get_config(config_dict& c) { c.set("data_format", "channels_last").set("keepdims", false); }
  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(In::rank == 4, "ctflow::keras: a global 2-D pooling layer's input must be [batch, height, width, channels]");
    static constexpr const char* class_name = Name;
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = Shape<detail::extent<In, 0>, detail::extent<In, 3>>;
    template <class Spec> explicit built(const Spec&) {}
    auto weights() { return std::tuple<>(); }
    template <class X, class Training> auto call(const X& x, Training) const {
      if constexpr (Max) return nn::global_max_pool2d(x);
      else return nn::global_avg_pool2d(x);
    }
  };
};
inline constexpr char global_average_pooling2d_name[] = "GlobalAveragePooling2D";
inline constexpr char global_max_pooling2d_name[] = "GlobalMaxPooling2D";
}  // namespace detail

/// @brief keras.layers.GlobalAveragePooling2D().
struct GlobalAveragePooling2D {
  /// @brief The rank of its input (the batch axis included) and Keras's words for it.
  static constexpr std::size_t input_rank = 4;
  static constexpr const char* input_form = "[batch, height, width, channels] with static channels";
  CTFLOW_KERAS_LAYER_SPEC("GlobalAveragePooling2D");
  /// @brief Keras's get_config: data_format and keepdims (false).
  void get_config(config_dict& c) const { detail::global_pooling2d<false, detail::global_average_pooling2d_name>::get_config(c); }
  template <class T, ShapeType In, class D = cpu> using built = typename detail::global_pooling2d<false, detail::global_average_pooling2d_name>::template built<T, In, D>;
};

/// @brief keras.layers.GlobalMaxPooling2D().
struct GlobalMaxPooling2D {
  /// @brief The rank of its input (the batch axis included) and Keras's words for it.
  static constexpr std::size_t input_rank = 4;
  static constexpr const char* input_form = "[batch, height, width, channels] with static channels";
  CTFLOW_KERAS_LAYER_SPEC("GlobalMaxPooling2D");
  /// @brief Keras's get_config: data_format and keepdims (false).
  void get_config(config_dict& c) const { detail::global_pooling2d<true, detail::global_max_pooling2d_name>::get_config(c); }
  template <class T, ShapeType In, class D = cpu> using built = typename detail::global_pooling2d<true, detail::global_max_pooling2d_name>::template built<T, In, D>;
};

}  // namespace ctflow::keras::layers
