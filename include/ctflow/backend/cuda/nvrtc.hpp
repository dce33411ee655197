#pragma once
/// @file
/// @brief NVRTC, CUDA's run-time compiler, loaded on first use (libnvrtc.so from the loader's
/// path or the toolkit's lib64): CUDA C++ source to a cubin for one GPU architecture ("sm_90")
/// or to PTX for a virtual one ("compute_90"). It needs no GPU and no driver.

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ctflow/backend/cuda/library.hpp>

namespace ctflow::backend::cuda {

/// @brief The entry points of NVRTC that ctflow calls (declared as its ABI is: ints and pointers).
struct nvrtc_api {
  using result = int;  // nvrtcResult: 0 is NVRTC_SUCCESS
  using program = struct nvrtc_program*;
  const char* (*nvrtcGetErrorString)(result r);
  result (*nvrtcVersion)(int* major, int* minor);
  result (*nvrtcCreateProgram)(program* p, const char* source, const char* name, int headers, const char* const* header_sources,
                               const char* const* header_names);
  result (*nvrtcDestroyProgram)(program* p);
  result (*nvrtcCompileProgram)(program p, int options, const char* const* option_texts);
  result (*nvrtcGetProgramLogSize)(program p, std::size_t* size);
  result (*nvrtcGetProgramLog)(program p, char* log);
  result (*nvrtcGetPTXSize)(program p, std::size_t* size);
  result (*nvrtcGetPTX)(program p, char* ptx);
  result (*nvrtcGetCUBINSize)(program p, std::size_t* size);
  result (*nvrtcGetCUBIN)(program p, char* cubin);
  int major = 0, minor = 0;

  /// @brief Throws device_error naming `call` and NVRTC's message where r is not success.
  void check(result r, const char* call) const {
    if (r != 0) throw device_error(std::string("ctflow::cuda: ") + call + " failed (" + nvrtcGetErrorString(r) + ")");
  }
  /// @brief Its version as the kernel cache keys it ("13.0").
  std::string version() const { return std::to_string(major) + "." + std::to_string(minor); }
};

/// @brief NVRTC, loaded on first use (or why it could not be).
inline const lazy_api<nvrtc_api>& nvrtc_library() {
  static const lazy_api<nvrtc_api> n([](std::optional<shared_library>& library, nvrtc_api& api) {
    library.emplace("NVRTC", std::initializer_list<const char*>{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}, toolkit_library_dirs());
    const shared_library& l = *library;
    api.nvrtcGetErrorString = l.function<decltype(api.nvrtcGetErrorString)>("nvrtcGetErrorString");
    api.nvrtcVersion = l.function<decltype(api.nvrtcVersion)>("nvrtcVersion");
    api.nvrtcCreateProgram = l.function<decltype(api.nvrtcCreateProgram)>("nvrtcCreateProgram");
    api.nvrtcDestroyProgram = l.function<decltype(api.nvrtcDestroyProgram)>("nvrtcDestroyProgram");
    api.nvrtcCompileProgram = l.function<decltype(api.nvrtcCompileProgram)>("nvrtcCompileProgram");
    api.nvrtcGetProgramLogSize = l.function<decltype(api.nvrtcGetProgramLogSize)>("nvrtcGetProgramLogSize");
    api.nvrtcGetProgramLog = l.function<decltype(api.nvrtcGetProgramLog)>("nvrtcGetProgramLog");
    api.nvrtcGetPTXSize = l.function<decltype(api.nvrtcGetPTXSize)>("nvrtcGetPTXSize");
    api.nvrtcGetPTX = l.function<decltype(api.nvrtcGetPTX)>("nvrtcGetPTX");
    api.nvrtcGetCUBINSize = l.function<decltype(api.nvrtcGetCUBINSize)>("nvrtcGetCUBINSize");
    api.nvrtcGetCUBIN = l.function<decltype(api.nvrtcGetCUBIN)>("nvrtcGetCUBIN");
    api.check(api.nvrtcVersion(&api.major, &api.minor), "nvrtcVersion");
  });
  return n;
}

/// @brief Whether NVRTC loads.
inline bool nvrtc_available() { return nvrtc_library().available(); }

/// @brief NVRTC's entry points; device_error (the reason kept from the first attempt) where it is
/// missing.
inline const nvrtc_api& nvrtc() { return nvrtc_library().get(); }

/// @brief What NVRTC made of a source: a cubin ("sm_XY") or PTX text ("compute_XY"), and its log
/// (warnings; with `--ptxas-options=-v`, each kernel's registers and spills).
struct compiled_program {
  std::vector<char> binary;
  std::string log;
};

/// @brief The options every compilation starts with (the architecture's follows them).
inline const std::vector<std::string>& default_options() {
  static const std::vector<std::string> o{"-std=c++17"};
  return o;
}

/// @brief Compiles CUDA C++ `source` (named `name` in messages) for `arch`, with `options` after
/// default_options() and the architecture; device_error with NVRTC's log where it does not
/// compile.
inline compiled_program compile(const std::string& source, const std::string& name, const std::string& arch, const std::vector<std::string>& options = {}) {
  const nvrtc_api& n = nvrtc();
  const bool cubin = arch.rfind("sm_", 0) == 0;
  if (!cubin && arch.rfind("compute_", 0) != 0)
    throw value_error("ctflow::cuda::compile: architecture \"" + arch + "\" is neither a GPU's (sm_90) nor a virtual one (compute_90)");
  nvrtc_api::program p = nullptr;
  n.check(n.nvrtcCreateProgram(&p, source.c_str(), name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  struct release {
    const nvrtc_api& n;
    nvrtc_api::program& p;
    ~release() { n.nvrtcDestroyProgram(&p); }
  } owner{n, p};
  std::vector<std::string> all = default_options();
  all.push_back("--gpu-architecture=" + arch);
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> texts;
  for (const auto& o : all) texts.push_back(o.c_str());
  const auto r = n.nvrtcCompileProgram(p, int(texts.size()), texts.data());
  compiled_program out;
  std::size_t log_size = 0;
  n.check(n.nvrtcGetProgramLogSize(p, &log_size), "nvrtcGetProgramLogSize");
  out.log.assign(log_size, '\0');
  if (log_size) n.check(n.nvrtcGetProgramLog(p, out.log.data()), "nvrtcGetProgramLog");
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (r != 0)
    throw device_error("ctflow::cuda: " + name + " does not compile for " + arch + " (NVRTC " + n.version() + ": " + n.nvrtcGetErrorString(r) + ")" +
                       (out.log.empty() ? std::string() : ":\n" + out.log));
  std::size_t size = 0;
  n.check(cubin ? n.nvrtcGetCUBINSize(p, &size) : n.nvrtcGetPTXSize(p, &size), cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize");
  out.binary.resize(size);
  if (size) n.check(cubin ? n.nvrtcGetCUBIN(p, out.binary.data()) : n.nvrtcGetPTX(p, out.binary.data()), cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX");
  return out;
}

}  // namespace ctflow::backend::cuda
