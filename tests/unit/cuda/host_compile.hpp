// Generated kernels built by the host's compiler against host_shim.hpp and loaded: how the tests
// run the cuda backend's source without a GPU.
#pragma once

#include <ctflow/backend/cuda/codegen.hpp>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace host_compile {

/// `<entry>_host(args, grid, block)`: runs a kernel's entry point, returns the status it set.
using entry_fn = int (*)(const void*, unsigned, unsigned);

/// FNV-1a over text: the cache's key.
inline std::uint64_t fnv1a(const std::string& text, std::uint64_t h = 14695981039346656037ull) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

/// The shim's copy in the kernel cache, beside its precompiled header (built with `options`, in
/// a directory of its own renamed into the cache whole, under the hash of the shim, the compiler
/// and the options); "" where it cannot be built, and the kernels then include the shim itself.
/// The compiler loads the precompiled header in place of the copy's text.
#ifdef CTFLOW_HOST_KERNEL_CACHE
inline std::string shim_in_cache(const std::string& shim, const std::string& options) {
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(fnv1a(shim, fnv1a(CTFLOW_HOST_CXX + options))));
  const std::string kept = std::string(CTFLOW_HOST_KERNEL_CACHE) + "/shim_" + key, header = kept + "/host_shim.hpp";
  if (::access((header + ".gch").c_str(), R_OK) == 0) return header;
  if (::mkdir(CTFLOW_HOST_KERNEL_CACHE, 0755) != 0 && errno != EEXIST) return "";
  char dir[] = "/tmp/ctflow_host_shim_XXXXXX";
  if (!::mkdtemp(dir)) return "";
  std::ofstream(std::string(dir) + "/host_shim.hpp") << shim;
  const std::string command = std::string("cd ") + dir + " && " CTFLOW_HOST_CXX + options + " -x c++-header host_shim.hpp -o host_shim.hpp.gch > log.txt 2>&1";
  const bool built = std::system(command.c_str()) == 0 && std::rename(dir, kept.c_str()) == 0;
  if (!built) std::system((std::string("rm -rf ") + dir).c_str());  // (or another process kept it first)
  return ::access((header + ".gch").c_str(), R_OK) == 0 ? header : "";
}
#endif

/// The kernels compiled into one shared library and loaded: one translation unit, each source in
/// a namespace of its own (their entry points are extern "C" and named apart). Throws with the
/// compiler's output where they do not compile. Where CTFLOW_HOST_KERNEL_CACHE names a directory
/// the library is kept there, under the hash of its source, the shim's and the command's, and the
/// test programs after the first load it from there (each test case runs in a process of its
/// own): it is compiled in a directory of its own and renamed into the cache, whole. There the
/// shim is kept precompiled too (shim_in_cache): its C headers are most of a kernel's build.
inline void* build(const std::vector<const ctflow::backend::cuda::generated_kernel*>& kernels) {
  std::string source;
  for (std::size_t i = 0; i < kernels.size(); ++i) source += "namespace k" + std::to_string(i) + " {\n" + kernels[i]->source + "\n}\n";
  const std::string options = " -std=c++17 -O0 -ffp-contract=off -fPIC -w";
  std::string flags = options + " -shared -include " CTFLOW_HOST_SHIM;
#ifdef CTFLOW_HOST_KERNEL_CACHE
  std::stringstream shim;
  shim << std::ifstream(CTFLOW_HOST_SHIM).rdbuf();
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(fnv1a(source, fnv1a(shim.str(), fnv1a(CTFLOW_HOST_CXX + flags)))));
  const std::string cached = std::string(CTFLOW_HOST_KERNEL_CACHE) + "/" + key + ".so";
  if (::access(cached.c_str(), R_OK) == 0)
    if (void* library = ::dlopen(cached.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
  if (const std::string header = shim_in_cache(shim.str(), options); !header.empty()) flags = options + " -shared -include " + header;
#endif
  char dir[] = "/tmp/ctflow_host_kernels_XXXXXX";
  if (!::mkdtemp(dir)) throw std::runtime_error("host_compile: no temporary directory");
  std::ofstream(std::string(dir) + "/kernels.cpp") << source;
  const std::string command = std::string("cd ") + dir + " && " CTFLOW_HOST_CXX + flags + " kernels.cpp -o kernels.so > log.txt 2>&1";
  const int rc = std::system(command.c_str());
  std::stringstream log;
  log << std::ifstream(std::string(dir) + "/log.txt").rdbuf();
  std::string built = std::string(dir) + "/kernels.so";
#ifdef CTFLOW_HOST_KERNEL_CACHE
  if (rc == 0 && (::mkdir(CTFLOW_HOST_KERNEL_CACHE, 0755) == 0 || errno == EEXIST) && std::rename(built.c_str(), cached.c_str()) == 0)
    built = cached;
#endif
  void* library = rc == 0 ? ::dlopen(built.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (!std::getenv("CTFLOW_KEEP_HOST_KERNELS")) std::system((std::string("rm -rf ") + dir).c_str());
  if (!library) throw std::runtime_error("host_compile: " + command + " failed:\n" + log.str());
  return library;
}

/// Entry point `entry` of a library of build().
inline entry_fn entry(void* library, const std::string& name) {
  auto* f = reinterpret_cast<entry_fn>(::dlsym(library, (name + "_host").c_str()));
  if (!f) throw std::runtime_error("host_compile: no entry point " + name);
  return f;
}

}  // namespace host_compile
