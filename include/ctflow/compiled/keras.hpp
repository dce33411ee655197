#pragma once
/// @file
/// @brief The compiled part of ctflow::keras (its weight files: HDF5, the .keras archive,
/// safetensors; its summaries): include it, with <ctflow/compiled/data.hpp> and <ctflow/compiled/io.hpp>, in
/// exactly one source file of a program built with CTFLOW_SEPARATE_COMPILATION (CMake:
/// `ctflow_add_compiled_library(... COMPONENTS keras)`; see detail/linkage.hpp).

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#error "ctflow/compiled/keras.hpp belongs to a program built with CTFLOW_SEPARATE_COMPILATION"
#endif

#include <ctflow/keras.hpp>
#include <ctflow/keras/export.hpp>
#include <ctflow/keras/import.hpp>
#include <ctflow/keras/quantize.hpp>
#include <ctflow/keras/impl/embedded_header.ipp>
#include <ctflow/keras/impl/import.ipp>
#include <ctflow/keras/impl/onnx.ipp>
#include <ctflow/keras/impl/pytorch.ipp>
#include <ctflow/keras/impl/quantize.ipp>
#include <ctflow/keras/impl/saving.ipp>
#include <ctflow/keras/impl/saving_h5.ipp>
#include <ctflow/keras/impl/summary.ipp>

CTFLOW_KERAS_INSTANCES(template, float)
CTFLOW_KERAS_INSTANCES(template, double)
CTFLOW_KERAS_LABEL_INSTANCES(template)
CTFLOW_KERAS_OPTIMIZERS_INSTANCES(template, float)
