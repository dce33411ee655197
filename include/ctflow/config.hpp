#pragma once
/// @file
/// @brief Process-wide settings: the number of CPU threads.

#include "backend/cpu/thread_pool.hpp"

namespace ctflow::config {

/// @brief Sets the threads CPU kernels use (TensorFlow's set_intra_op_parallelism_threads).
/// Results do not depend on it: work partitioning and summation order are fixed.
inline void set_num_threads(int n) { backend::cpu::pool().resize(n); }
/// @brief The threads CPU kernels use.
inline int get_num_threads() { return backend::cpu::pool().size(); }

}  // namespace ctflow::config
