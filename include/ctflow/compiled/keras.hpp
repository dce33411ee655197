#pragma once
/// @file
/// @brief The compiled part of ctflow::keras (its training's numerics and its files: HDF5, the
/// .keras archive, safetensors, ONNX; its summaries): include it, with <ctflow/compiled/data.hpp>
/// and <ctflow/compiled/io.hpp>, in exactly one source file of a program built with
/// CTFLOW_SEPARATE_COMPILATION (CMake: `ctflow_add_compiled_library(... COMPONENTS keras)`, which
/// builds its two halves as units of their own; see detail/linkage.hpp).

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#error "ctflow/compiled/keras.hpp belongs to a program built with CTFLOW_SEPARATE_COMPILATION"
#endif

#include <ctflow/compiled/keras_training.hpp>
#include <ctflow/compiled/keras_files.hpp>
