#pragma once
/// @file
/// @brief Process-wide settings (tf.config): the number of CPU threads, the cache of freed
/// memory, and the devices: those the process sees, which of them a device runs on, a memory
/// limit, memory growth, and what a device's memory holds.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

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

/// @brief A device of the machine, as tf.config.list_physical_devices gives it
/// (`{"/physical_device:GPU:0", "GPU"}`).
struct physical_device {
  std::string name;
  std::string device_type;
  bool operator==(const physical_device&) const = default;
};

/// @brief tf.config.LogicalDeviceConfiguration: the memory a device may hold, in MiB (0: all
/// it has).
struct logical_device_configuration {
  std::size_t memory_limit = 0;
};

/// @brief tf.config.experimental.get_memory_info's answer: the bytes a device's tensors hold now
/// and the most they held since the start or the last reset_memory_stats.
struct memory_info {
  std::size_t current = 0;
  std::size_t peak = 0;
};

/// @brief tf.config.experimental.get_device_details's answer.
struct device_details {
  std::string device_name;                // "NVIDIA H100 80GB HBM3"
  std::pair<int, int> compute_capability;  // (9, 0)
};

/// @brief How device type Device answers tf.config: physical_devices() for every device; the
/// devices with memory of their own (cuda, in its backend) answer the rest.
template <class Device> struct device_config {};
template <> struct device_config<cpu> {
  static std::vector<physical_device> physical_devices() { return {{"/physical_device:CPU:0", "CPU"}}; }
};

/// @brief tf.config.list_physical_devices: the devices of type Device the process sees (none
/// for `cuda` where there is no driver or GPU, as TensorFlow lists no GPU there).
template <class Device = cpu> std::vector<physical_device> list_physical_devices() { return device_config<Device>::physical_devices(); }

/// @brief tf.config.set_visible_devices: the devices Device may run on (it runs on the first);
/// before Device's first use (after it, a device_error).
template <class Device> void set_visible_devices(const std::vector<physical_device>& devices) {
  device_config<Device>::set_visible_devices(devices);
}
/// @brief tf.config.get_visible_devices.
template <class Device> std::vector<physical_device> get_visible_devices() { return device_config<Device>::visible_devices(); }

/// @brief tf.config.set_logical_device_configuration: one logical device on `device`, its memory
/// limited (ctflow does not split a device into several); before the device's first use.
template <class Device> void set_logical_device_configuration(const physical_device& device, const std::vector<logical_device_configuration>& logical) {
  device_config<Device>::set_logical_device_configuration(device, logical);
}

namespace experimental {

/// @brief tf.config.experimental.set_memory_growth: with growth, device memory is taken as
/// tensors need it (ctflow's default); without, nearly all of it at the device's first use, and
/// every tensor is cut from that (TensorFlow's default). Before the device's first use.
template <class Device> void set_memory_growth(const physical_device& device, bool enable) { device_config<Device>::set_memory_growth(device, enable); }
/// @brief tf.config.experimental.get_memory_growth.
template <class Device> bool get_memory_growth(const physical_device& device) { return device_config<Device>::memory_growth(device); }
/// @brief tf.config.experimental.get_memory_info of the device Device runs on.
template <class Device> memory_info get_memory_info() { return device_config<Device>::memory(); }
/// @brief tf.config.experimental.reset_memory_stats: the peak starts again from what is held now.
template <class Device> void reset_memory_stats() { device_config<Device>::reset_memory_stats(); }
/// @brief tf.config.experimental.get_device_details.
template <class Device> device_details get_device_details(const physical_device& device) { return device_config<Device>::details(device); }

}  // namespace experimental

}  // namespace ctflow::config
