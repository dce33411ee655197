#pragma once
/// @file
/// @brief ctflow::keras: tf.keras for C++. Layers whose shapes the compiler computes from the
/// layer before them, models (Sequential as a flat list of types; the functional API; subclassed
/// models), summary(), training state and Keras's own weight files. Link the CMake target
/// ctflow::keras (HDF5 for the .h5 files).

#include <ctflow/ctflow.hpp>
#include <ctflow/keras/activations.hpp>
#include <ctflow/keras/initializers.hpp>
#include <ctflow/keras/functional.hpp>
#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/activation.hpp>
#include <ctflow/keras/layers/add.hpp>
#include <ctflow/keras/layers/average_pooling2d.hpp>
#include <ctflow/keras/layers/batch_normalization.hpp>
#include <ctflow/keras/layers/concatenate.hpp>
#include <ctflow/keras/layers/conv1d.hpp>
#include <ctflow/keras/layers/conv2d.hpp>
#include <ctflow/keras/layers/conv2d_transpose.hpp>
#include <ctflow/keras/layers/depthwise_conv2d.hpp>
#include <ctflow/keras/layers/dense.hpp>
#include <ctflow/keras/layers/dropout.hpp>
#include <ctflow/keras/layers/embedding.hpp>
#include <ctflow/keras/layers/flatten.hpp>
#include <ctflow/keras/layers/global_pooling2d.hpp>
#include <ctflow/keras/layers/gru.hpp>
#include <ctflow/keras/layers/input.hpp>
#include <ctflow/keras/layers/layer_normalization.hpp>
#include <ctflow/keras/layers/lstm.hpp>
#include <ctflow/keras/layers/masking.hpp>
#include <ctflow/keras/layers/max_pooling2d.hpp>
#include <ctflow/keras/layers/multiply.hpp>
#include <ctflow/keras/layers/rescaling.hpp>
#include <ctflow/keras/layers/reshape.hpp>
#include <ctflow/keras/layers/up_sampling2d.hpp>
#include <ctflow/keras/layers/zero_padding2d.hpp>
#include <ctflow/keras/losses.hpp>
#include <ctflow/keras/metrics.hpp>
#include <ctflow/keras/model.hpp>
#include <ctflow/keras/optimizers.hpp>
#include <ctflow/keras/regularizers.hpp>
#include <ctflow/keras/saving.hpp>
#include <ctflow/keras/sequential.hpp>
#include <ctflow/keras/summary.hpp>
