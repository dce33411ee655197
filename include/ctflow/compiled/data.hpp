#pragma once
/// @file
/// @brief The compiled part of ctflow::data (the readers and writers of files: gzip, IDX, CSV,
/// TFRecord, tf.train.Example, PNG and JPEG): include it in exactly one source file of a program
/// built with CTFLOW_SEPARATE_COMPILATION (CMake: `ctflow_add_compiled_library(... COMPONENTS
/// data)`; see detail/linkage.hpp).

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#error "ctflow/compiled/data.hpp belongs to a program built with CTFLOW_SEPARATE_COMPILATION"
#endif

#include <ctflow/data.hpp>
#include <ctflow/data/impl/example.ipp>
#include <ctflow/data/impl/idx.ipp>
#include <ctflow/data/impl/image.ipp>
#include <ctflow/data/impl/tfrecord.ipp>
#include <ctflow/detail/impl/file.ipp>
#include <ctflow/detail/impl/zip.ipp>
