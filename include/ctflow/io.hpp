#pragma once
/// @file
/// @brief Keeping and watching training (target ctflow::io): safetensors files, checkpoints,
/// TensorBoard summaries and profiler traces.

#include <ctflow/backend/cpu/cpu.hpp>
#include <ctflow/io/checkpoint.hpp>
#include <ctflow/io/hdf5.hpp>
#include <ctflow/io/safetensors.hpp>
#include <ctflow/io/summary.hpp>
#include <ctflow/io/trace.hpp>
