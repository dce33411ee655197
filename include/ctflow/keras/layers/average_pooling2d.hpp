#pragma once
/// @file
/// @brief keras.layers.AveragePooling2D(pool_size, strides=pool_size, padding="valid"); with
/// SAME, each window averages the elements inside the image only, as Keras.
///
///     layers::AveragePooling2D<2>

#include <ctflow/keras/layers/pooling2d.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.AveragePooling2D: the mean of each window (pool_size is required, as in Keras 3).
template <auto PoolSize, auto... Options> struct AveragePooling2D {
  /// @brief The rank of its input (the batch axis included) and Keras's words for it.
  static constexpr std::size_t input_rank = 4;
  static constexpr const char* input_form = "[batch, height, width, channels]";
  static_assert((detail::allowed<Options, nn::padding, strides_t> && ...),
                "ctflow::keras::AveragePooling2D: options are layers::same / valid and layers::strides<...>");
  CTFLOW_KERAS_LAYER_SPEC("AveragePooling2D");
  /// @brief Keras's get_config: pool_size, padding, strides and data_format.
  void get_config(config_dict& c) const { detail::pooling2d<false, PoolSize, detail::average_pooling2d_name, Options...>::get_config(c); }
  template <class T, ShapeType In, class D = cpu> using built =
      typename detail::pooling2d<false, PoolSize, detail::average_pooling2d_name, Options...>::template built<T, In, D>;
};

}  // namespace ctflow::keras::layers
