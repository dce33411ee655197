#pragma once
/// @file
/// @brief The numerical half of ctflow::keras's compiled part: the initializers' fill, the
/// optimizers' update and build over a model's weight table, a model's bookkeeping of its layers,
/// and int8 quantization. <ctflow/compiled/keras.hpp> includes it with its other half,
/// <ctflow/compiled/keras_files.hpp>; `ctflow_add_compiled_library` compiles the two as units of
/// their own.

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#error "ctflow/compiled/keras_training.hpp belongs to a program built with CTFLOW_SEPARATE_COMPILATION"
#endif

#include <ctflow/keras.hpp>
#include <ctflow/keras/quantize.hpp>
#include <ctflow/keras/impl/quantize.ipp>

CTFLOW_KERAS_INSTANCES(template, float)
CTFLOW_KERAS_INSTANCES(template, double)
CTFLOW_KERAS_LABEL_INSTANCES(template)
CTFLOW_KERAS_OPTIMIZERS_INSTANCES(template, float)
