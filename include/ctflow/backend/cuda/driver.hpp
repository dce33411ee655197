#pragma once
/// @file
/// @brief The CUDA driver, loaded on first use (libcuda.so.1, never linked), and the GPUs it
/// shows this process (CUDA_VISIBLE_DEVICES applies, as the driver reads it).
///
/// The driver's C interface is declared here, as its ABI is (ints and pointers), so that the
/// backend builds without the toolkit's headers; each entry point is the versioned symbol the
/// toolkit's cuda.h names (cuDeviceTotalMem is cuDeviceTotalMem_v2).

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <ctflow/backend/cuda/library.hpp>

namespace ctflow::backend::cuda {

/// @brief The entry points of the driver that ctflow calls.
struct driver_api {
  using result = int;  // CUresult: 0 is CUDA_SUCCESS
  result (*cuInit)(unsigned flags);
  result (*cuDeviceGetCount)(int* count);
  result (*cuDeviceGet)(int* device, int ordinal);
  result (*cuDeviceGetName)(char* name, int length, int device);
  result (*cuDeviceGetAttribute)(int* value, int attribute, int device);
  result (*cuDeviceTotalMem)(std::size_t* bytes, int device);
  result (*cuGetErrorString)(result error, const char** text);
  // The device's use of a GPU (runtime.hpp): its context, memory, copies, modules and launches.
  // CUdeviceptr is an unsigned long long; contexts, modules, functions and streams are pointers.
  result (*cuDevicePrimaryCtxRetain)(void** context, int device);
  result (*cuDevicePrimaryCtxRelease)(int device);
  result (*cuCtxSetCurrent)(void* context);
  result (*cuCtxSynchronize)();
  result (*cuMemGetInfo)(std::size_t* free, std::size_t* total);
  result (*cuMemAlloc)(unsigned long long* p, std::size_t bytes);
  result (*cuMemFree)(unsigned long long p);
  result (*cuMemAllocHost)(void** p, std::size_t bytes);  // pinned host memory
  result (*cuMemFreeHost)(void* p);
  result (*cuStreamCreate)(void** stream, unsigned flags);
  result (*cuStreamDestroy)(void* stream);
  result (*cuStreamSynchronize)(void* stream);
  result (*cuEventCreate)(void** event, unsigned flags);
  result (*cuEventRecord)(void* event, void* stream);
  result (*cuEventSynchronize)(void* event);
  result (*cuEventDestroy)(void* event);
  result (*cuMemcpyHtoDAsync)(unsigned long long dst, const void* src, std::size_t bytes, void* stream);
  result (*cuMemcpyDtoHAsync)(void* dst, unsigned long long src, std::size_t bytes, void* stream);
  result (*cuMemcpyDtoDAsync)(unsigned long long dst, unsigned long long src, std::size_t bytes, void* stream);
  result (*cuMemsetD8Async)(unsigned long long p, unsigned char value, std::size_t count, void* stream);
  result (*cuModuleLoadData)(void** module, const void* image);
  result (*cuModuleUnload)(void* module);
  result (*cuModuleGetFunction)(void** function, void* module, const char* name);
  result (*cuModuleGetGlobal)(unsigned long long* p, std::size_t* bytes, void* module, const char* name);
  result (*cuLaunchKernel)(void* function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x, unsigned block_y,
                           unsigned block_z, unsigned shared_bytes, void* stream, void** params, void** extra);
  static constexpr int compute_capability_major = 75, compute_capability_minor = 76;  // CUdevice_attribute
  static constexpr int multiprocessor_count = 16;                                     // CUdevice_attribute
  static constexpr unsigned stream_non_blocking = 1, event_disable_timing = 2;        // CUstream_flags, CUevent_flags
  static constexpr result out_of_memory = 2;                                          // CUDA_ERROR_OUT_OF_MEMORY
  static constexpr result no_device = 100;                                            // CUDA_ERROR_NO_DEVICE

  /// @brief The driver's name for error r ("CUDA_ERROR_NO_DEVICE: no CUDA-capable device is
  /// detected").
  std::string message(result r) const {
    const char* text = nullptr;
    if (cuGetErrorString && cuGetErrorString(r, &text) == 0 && text) return "error " + std::to_string(r) + ": " + text;
    return "error " + std::to_string(r);
  }
  /// @brief Throws device_error naming `call` and the driver's message where r is not success.
  void check(result r, const char* call) const {
    if (r != 0) throw device_error(std::string("ctflow::cuda: ") + call + " failed (" + message(r) + ")");
  }
};

/// @brief Every entry point of api from the driver library l (device_error naming one it lacks),
/// then the driver started (device_error where cuInit fails).
inline void load_driver(const shared_library& l, driver_api& api) {
  api.cuGetErrorString = l.function<decltype(api.cuGetErrorString)>("cuGetErrorString");
  api.cuInit = l.function<decltype(api.cuInit)>("cuInit");
  api.cuDeviceGetCount = l.function<decltype(api.cuDeviceGetCount)>("cuDeviceGetCount");
  api.cuDeviceGet = l.function<decltype(api.cuDeviceGet)>("cuDeviceGet");
  api.cuDeviceGetName = l.function<decltype(api.cuDeviceGetName)>("cuDeviceGetName");
  api.cuDeviceGetAttribute = l.function<decltype(api.cuDeviceGetAttribute)>("cuDeviceGetAttribute");
  api.cuDeviceTotalMem = l.function<decltype(api.cuDeviceTotalMem)>("cuDeviceTotalMem_v2");
  api.cuDevicePrimaryCtxRetain = l.function<decltype(api.cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
  api.cuDevicePrimaryCtxRelease = l.function<decltype(api.cuDevicePrimaryCtxRelease)>("cuDevicePrimaryCtxRelease_v2");
  api.cuCtxSetCurrent = l.function<decltype(api.cuCtxSetCurrent)>("cuCtxSetCurrent");
  api.cuCtxSynchronize = l.function<decltype(api.cuCtxSynchronize)>("cuCtxSynchronize");
  api.cuMemGetInfo = l.function<decltype(api.cuMemGetInfo)>("cuMemGetInfo_v2");
  api.cuMemAlloc = l.function<decltype(api.cuMemAlloc)>("cuMemAlloc_v2");
  api.cuMemFree = l.function<decltype(api.cuMemFree)>("cuMemFree_v2");
  api.cuMemAllocHost = l.function<decltype(api.cuMemAllocHost)>("cuMemAllocHost_v2");
  api.cuMemFreeHost = l.function<decltype(api.cuMemFreeHost)>("cuMemFreeHost");
  api.cuStreamCreate = l.function<decltype(api.cuStreamCreate)>("cuStreamCreate");
  api.cuStreamDestroy = l.function<decltype(api.cuStreamDestroy)>("cuStreamDestroy_v2");
  api.cuStreamSynchronize = l.function<decltype(api.cuStreamSynchronize)>("cuStreamSynchronize");
  api.cuEventCreate = l.function<decltype(api.cuEventCreate)>("cuEventCreate");
  api.cuEventRecord = l.function<decltype(api.cuEventRecord)>("cuEventRecord");
  api.cuEventSynchronize = l.function<decltype(api.cuEventSynchronize)>("cuEventSynchronize");
  api.cuEventDestroy = l.function<decltype(api.cuEventDestroy)>("cuEventDestroy_v2");
  api.cuMemcpyHtoDAsync = l.function<decltype(api.cuMemcpyHtoDAsync)>("cuMemcpyHtoDAsync_v2");
  api.cuMemcpyDtoHAsync = l.function<decltype(api.cuMemcpyDtoHAsync)>("cuMemcpyDtoHAsync_v2");
  api.cuMemcpyDtoDAsync = l.function<decltype(api.cuMemcpyDtoDAsync)>("cuMemcpyDtoDAsync_v2");
  api.cuMemsetD8Async = l.function<decltype(api.cuMemsetD8Async)>("cuMemsetD8Async");
  api.cuModuleLoadData = l.function<decltype(api.cuModuleLoadData)>("cuModuleLoadData");
  api.cuModuleUnload = l.function<decltype(api.cuModuleUnload)>("cuModuleUnload");
  api.cuModuleGetFunction = l.function<decltype(api.cuModuleGetFunction)>("cuModuleGetFunction");
  api.cuModuleGetGlobal = l.function<decltype(api.cuModuleGetGlobal)>("cuModuleGetGlobal_v2");
  api.cuLaunchKernel = l.function<decltype(api.cuLaunchKernel)>("cuLaunchKernel");
  if (const auto r = api.cuInit(0); r != 0)
    throw device_error("ctflow::cuda: the CUDA driver (" + l.path() + ") does not start (cuInit: " + api.message(r) +
                       (r == driver_api::no_device ? "; CUDA_VISIBLE_DEVICES may hide every GPU" : "") + ")");
}

/// @brief The driver, loaded and initialised on first use (or why it could not be).
inline const lazy_api<driver_api>& driver_library() {
  static const lazy_api<driver_api> d([](std::optional<shared_library>& library, driver_api& api) {
    library.emplace("the CUDA driver", std::initializer_list<const char*>{"libcuda.so.1"});
    load_driver(*library, api);
  });
  return d;
}

/// @brief Whether the driver loads and starts (a GPU may still be absent: see devices()).
inline bool driver_available() { return driver_library().available(); }

/// @brief The driver's entry points; device_error (the reason kept from the first attempt) where
/// there is none or it does not start.
inline const driver_api& driver() { return driver_library().get(); }

/// @brief A GPU as the driver describes it.
struct device_properties {
  int ordinal = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  std::size_t total_memory = 0;
  /// @brief Its architecture as NVRTC names a cubin's ("sm_90").
  std::string arch() const { return "sm_" + std::to_string(major * 10 + minor); }
};

/// @brief The GPUs this process sees, in the driver's order: none where there is no driver.
inline std::vector<device_properties> devices() {
  std::vector<device_properties> out;
  if (!driver_available()) return out;
  const driver_api& d = driver();
  int count = 0;
  d.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  for (int i = 0; i < count; ++i) {
    device_properties p;
    int handle = 0;
    d.check(d.cuDeviceGet(&handle, i), "cuDeviceGet");
    char name[256] = {};
    d.check(d.cuDeviceGetName(name, int(sizeof name) - 1, handle), "cuDeviceGetName");
    p.ordinal = i;
    p.name = name;
    d.check(d.cuDeviceGetAttribute(&p.major, driver_api::compute_capability_major, handle), "cuDeviceGetAttribute");
    d.check(d.cuDeviceGetAttribute(&p.minor, driver_api::compute_capability_minor, handle), "cuDeviceGetAttribute");
    d.check(d.cuDeviceTotalMem(&p.total_memory, handle), "cuDeviceTotalMem");
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace ctflow::backend::cuda
