#pragma once
/// @file
/// @brief keras.layers.MaxPooling2D(pool_size=(2, 2), strides=pool_size, padding="valid").
///
///     layers::MaxPooling2D<>                                  // 2x2 windows, strides 2
///     layers::MaxPooling2D<3, layers::strides<2>, layers::same>

#include <ctflow/keras/layers/pooling2d.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.MaxPooling2D: the maximum of each window (a NaN never wins).
template <auto PoolSize = 2, auto... Options> struct MaxPooling2D {
  /// @brief The rank of its input (the batch axis included) and Keras's words for it.
  static constexpr std::size_t input_rank = 4;
  static constexpr const char* input_form = "[batch, height, width, channels]";
  static_assert((detail::allowed<Options, nn::padding, strides_t> && ...),
                "ctflow::keras::MaxPooling2D: options are layers::same / valid and layers::strides<...>");
  CTFLOW_KERAS_LAYER_SPEC("MaxPooling2D");
  /// @brief Keras's get_config: pool_size, padding, strides and data_format.
  void get_config(config_dict& c) const { detail::pooling2d<true, PoolSize, detail::max_pooling2d_name, Options...>::get_config(c); }
  template <class T, ShapeType In, class D = cpu> using built =
      typename detail::pooling2d<true, PoolSize, detail::max_pooling2d_name, Options...>::template built<T, In, D>;
};

}  // namespace ctflow::keras::layers
