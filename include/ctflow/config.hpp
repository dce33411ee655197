#pragma once
/// @file
/// @brief Process-wide settings: the number of CPU threads, the cache of freed memory.

#include <ctflow/core/device.hpp>
#include <ctflow/detail/buffer.hpp>

namespace ctflow::config {

/// @brief Sets the threads CPU kernels use (TensorFlow's set_intra_op_parallelism_threads).
/// Results do not depend on it: work partitioning and summation order are fixed. The device's
/// executor holds its threads.
template <class Device = cpu> void set_num_threads(int n) { executor<Device>::set_num_threads(n); }
/// @brief The threads CPU kernels use.
template <class Device = cpu> int get_num_threads() { return executor<Device>::num_threads(); }

/// @brief Bytes of freed tensor memory kept for reuse (default 1 GiB; 0 gives every block back
/// at once). Reuse is what makes a warm training step free of system allocations.
inline void set_memory_cache_limit(std::size_t bytes) { detail::block_cache::instance().set_limit(bytes); }
inline std::size_t get_memory_cache_limit() { return detail::block_cache::instance().limit(); }

}  // namespace ctflow::config
