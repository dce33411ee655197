#pragma once
/// @file
/// @brief The file half of ctflow::keras's compiled part: its weight files (HDF5, the .keras
/// archive, safetensors, PyTorch's), ONNX and Keras import, the embedded header's writer and the
/// summaries: parsing, copying and formatting, which -O1 compiles in half of -O3's time
/// (`ctflow_add_compiled_library` builds it so in Release). <ctflow/compiled/keras.hpp> includes it
/// with <ctflow/compiled/keras_training.hpp>.

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#error "ctflow/compiled/keras_files.hpp belongs to a program built with CTFLOW_SEPARATE_COMPILATION"
#endif

#include <ctflow/keras.hpp>
#include <ctflow/keras/export.hpp>
#include <ctflow/keras/import.hpp>
#include <ctflow/keras/impl/embedded_header.ipp>
#include <ctflow/keras/impl/import.ipp>
#include <ctflow/keras/impl/onnx.ipp>
#include <ctflow/keras/impl/pytorch.ipp>
#include <ctflow/keras/impl/saving.ipp>
#include <ctflow/keras/impl/saving_h5.ipp>
#include <ctflow/keras/impl/summary.ipp>
