#pragma once
/// @file
/// @brief The compiled part of ctflow::io (safetensors, checkpoints, TensorBoard summaries,
/// profiler traces): include it, with <ctflow/compiled/data.hpp>, in exactly one source file of a
/// program built with CTFLOW_SEPARATE_COMPILATION (CMake: `ctflow_add_compiled_library(...
/// COMPONENTS io)`; see detail/linkage.hpp).

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#error "ctflow/compiled/io.hpp belongs to a program built with CTFLOW_SEPARATE_COMPILATION"
#endif

#include <ctflow/io.hpp>
#include <ctflow/io/impl/checkpoint.ipp>
#include <ctflow/io/impl/hdf5.ipp>
#include <ctflow/io/impl/safetensors.ipp>
#include <ctflow/io/impl/summary.ipp>
#include <ctflow/io/impl/trace.ipp>
