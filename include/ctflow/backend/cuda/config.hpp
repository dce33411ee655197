#pragma once
/// @file
/// @brief tf.config for the cuda device: the GPUs the driver shows, which of them the device runs
/// on, a memory limit, memory growth, and the memory info of its allocator.

#include <cstddef>
#include <string>
#include <vector>

#include <ctflow/backend/cuda/driver.hpp>
#include <ctflow/backend/cuda/runtime.hpp>
#include <ctflow/config.hpp>
#include <ctflow/core/device.hpp>
#include <ctflow/core/errors.hpp>

namespace ctflow::backend::cuda {

/// @brief The ordinal of a GPU that list_physical_devices<cuda>() gives; value_error for anything
/// else, naming it.
inline int ordinal_of(const config::physical_device& d, const char* caller) {
  const std::string prefix = "/physical_device:GPU:";
  const auto gpus = devices();
  if (d.device_type == "GPU" && d.name.rfind(prefix, 0) == 0 && d.name.size() > prefix.size() &&
      d.name.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
    const std::size_t n = std::stoul(d.name.substr(prefix.size()));
    if (n < gpus.size()) return int(n);
  }
  throw value_error(std::string("ctflow::config::") + caller + ": " + d.name + " (" + d.device_type + ") is not one of the " +
                    std::to_string(gpus.size()) + " GPU(s) list_physical_devices<cuda>() gives");
}

}  // namespace ctflow::backend::cuda

namespace ctflow::config {

template <> struct device_config<cuda> {
  static std::vector<physical_device> physical_devices() {
    std::vector<physical_device> out;
    for (const auto& g : backend::cuda::devices()) out.push_back({"/physical_device:GPU:" + std::to_string(g.ordinal), "GPU"});
    return out;
  }
  static void set_visible_devices(const std::vector<physical_device>& devices) {
    std::vector<int> ordinals;
    for (const auto& d : devices) ordinals.push_back(backend::cuda::ordinal_of(d, "set_visible_devices"));
    const bool all = devices == physical_devices();  // the default again
    state().configure("set_visible_devices", [&](backend::cuda::gpu_settings& s) {
      if (all) s.visible.reset();
      else s.visible = ordinals;
    });
  }
  static std::vector<physical_device> visible_devices() {
    const auto all = physical_devices();
    const auto s = state().settings();
    if (!s.visible) return all;
    std::vector<physical_device> out;
    for (const int o : *s.visible) out.push_back(all[std::size_t(o)]);
    return out;
  }
  static void set_logical_device_configuration(const physical_device& d, const std::vector<logical_device_configuration>& logical) {
    const int o = backend::cuda::ordinal_of(d, "set_logical_device_configuration");
    if (logical.size() > 1)
      throw value_error("ctflow::config::set_logical_device_configuration: " + std::to_string(logical.size()) +
                        " logical devices asked of " + d.name + "; ctflow runs one device per GPU (give one configuration, with its memory_limit)");
    state().configure("set_logical_device_configuration", [&](backend::cuda::gpu_settings& s) {
      if (logical.empty() || logical.front().memory_limit == 0) s.limit.erase(o);
      else s.limit[o] = logical.front().memory_limit << 20;
    });
  }
  static void set_memory_growth(const physical_device& d, bool enable) {
    const int o = backend::cuda::ordinal_of(d, "set_memory_growth");
    state().configure("set_memory_growth", [&](backend::cuda::gpu_settings& s) { s.growth[o] = enable; });
  }
  static bool memory_growth(const physical_device& d) {
    const int o = backend::cuda::ordinal_of(d, "get_memory_growth");
    const auto s = state().settings();
    const auto it = s.growth.find(o);
    return it == s.growth.end() || it->second;
  }
  static memory_info memory() {
    const auto m = state().allocator().info();
    return {m.current, m.peak};
  }
  static void reset_memory_stats() { state().allocator().reset_peak(); }
  static device_details details(const physical_device& d) {
    const auto g = backend::cuda::devices()[std::size_t(backend::cuda::ordinal_of(d, "get_device_details"))];
    return {g.name, {g.major, g.minor}};
  }

 private:
  static backend::cuda::device_state& state() { return backend::cuda::device_state::instance(); }
};

}  // namespace ctflow::config
