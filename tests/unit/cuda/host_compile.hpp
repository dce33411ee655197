// Generated kernels built by the host's compiler against host_shim.hpp and loaded: how the tests
// run the cuda backend's source without a GPU.
#pragma once

#include <ctflow/backend/cuda/codegen.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace host_compile {

/// `<entry>_host(args, grid, block)`: runs a kernel's entry point, returns the status it set.
using entry_fn = int (*)(const void*, unsigned, unsigned);

/// The kernels compiled into one shared library and loaded: one translation unit, each source in
/// a namespace of its own (their entry points are extern "C" and named apart). Throws with the
/// compiler's output where they do not compile.
inline void* build(const std::vector<const ctflow::backend::cuda::generated_kernel*>& kernels) {
  char dir[] = "/tmp/ctflow_host_kernels_XXXXXX";
  if (!::mkdtemp(dir)) throw std::runtime_error("host_compile: no temporary directory");
  {
    std::ofstream all(std::string(dir) + "/kernels.cpp");
    for (std::size_t i = 0; i < kernels.size(); ++i) all << "namespace k" << i << " {\n" << kernels[i]->source << "\n}\n";
  }
  const std::string command = std::string("cd ") + dir + " && " CTFLOW_HOST_CXX
                              " -std=c++17 -O0 -ffp-contract=off -fPIC -shared -w -include " CTFLOW_HOST_SHIM
                              " kernels.cpp -o kernels.so > log.txt 2>&1";
  const int rc = std::system(command.c_str());
  std::stringstream log;
  log << std::ifstream(std::string(dir) + "/log.txt").rdbuf();
  void* library = rc == 0 ? ::dlopen((std::string(dir) + "/kernels.so").c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
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
