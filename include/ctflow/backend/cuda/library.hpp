#pragma once
/// @file
/// @brief Shared libraries opened at run time. The CUDA driver and NVRTC are loaded when first
/// used (never linked: `-lcuda` would make a program unloadable where there is no driver), so a
/// program built with the cuda backend starts, and runs its CPU work, on any machine; using the
/// GPU where a library is missing is a `device_error` that says which and why.

#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <ctflow/core/errors.hpp>

namespace ctflow::backend::cuda {

/// @brief Directories of the CUDA toolkit's libraries, in the order they are tried after the
/// loader's own search: $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64.
inline std::vector<std::string> toolkit_library_dirs() {
  std::vector<std::string> dirs;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* root = std::getenv(variable); root && *root) dirs.push_back(std::string(root) + "/lib64");
  dirs.emplace_back("/usr/local/cuda/lib64");
  return dirs;
}

/// @brief A shared library opened with dlopen, kept open for the process's life (its functions
/// may run until exit).
class shared_library {
 public:
  /// @brief Opens the first of `names` that loads: each by the loader's search (LD_LIBRARY_PATH,
  /// the system's directories), then in each of `dirs`. Throws device_error naming `what` and
  /// every attempt's reason.
  shared_library(std::string what, std::initializer_list<const char*> names, const std::vector<std::string>& dirs = {}) : what_(std::move(what)) {
    std::string reasons;
    auto attempt = [&](const std::string& file) {
      dlerror();
      handle_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle_) {
        path_ = file;
        return true;
      }
      const char* why = dlerror();
      reasons += "; " + std::string(why ? why : file + ": not loaded");
      return false;
    };
    for (const char* name : names) {
      if (attempt(name)) return;
      for (const auto& dir : dirs)
        if (attempt(dir + "/" + name)) return;
    }
    throw device_error("ctflow::cuda: " + what_ + " is not available (" + (reasons.empty() ? std::string("no file named") : reasons.substr(2)) + ")");
  }
  shared_library(const shared_library&) = delete;
  shared_library& operator=(const shared_library&) = delete;

  /// @brief The function `name` of the library, as a pointer of type F; device_error where the
  /// library has no such symbol (a version older than the one ctflow needs).
  template <class F> F function(const char* name) const {
    dlerror();
    void* p = dlsym(handle_, name);
    if (!p) {
      const char* why = dlerror();
      throw device_error("ctflow::cuda: " + what_ + " (" + path_ + ") has no " + name + (why ? std::string(": ") + why : std::string()));
    }
    return reinterpret_cast<F>(p);
  }
  /// @brief The file the loader opened (as it was asked for).
  const std::string& path() const { return path_; }

 private:
  std::string what_, path_;
  void* handle_ = nullptr;
};

/// @brief A library's entry points (a struct of function pointers, Api), loaded on first use by
/// `load(library, api)`; a failure (a device_error) is kept, and each use gives the same error.
template <class Api> class lazy_api {
 public:
  template <class Load> explicit lazy_api(Load load) {
    try {
      load(library_, api_);
    } catch (const device_error& e) {
      failure_ = e.what();
    }
  }
  bool available() const { return failure_.empty(); }
  /// @brief The entry points; device_error where the library did not load.
  const Api& get() const {
    if (!failure_.empty()) throw device_error(failure_);
    return api_;
  }

 private:
  std::optional<shared_library> library_;
  Api api_{};
  std::string failure_;
};

}  // namespace ctflow::backend::cuda
