// Files for tests: fresh temporary directories, removed when the test's process ends, and
// whole-file reads and writes.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace test_files {

/// path (a file or a directory) removed, whole, when the process ends (its static objects'
/// destruction, after main returns or exit), so that a test run leaves nothing behind; with
/// CTFLOW_KEEP_TEST_FILES set in the environment it stays, for a look.
inline void remove_at_exit(const std::string& path) {
  struct registry {
    std::mutex m;
    std::vector<std::string> paths;
    ~registry() {
      if (std::getenv("CTFLOW_KEEP_TEST_FILES")) return;
      for (const auto& p : paths) {
        std::error_code ec;
        std::filesystem::remove_all(p, ec);
      }
    }
  };
  static registry r;
  const std::lock_guard lock(r.m);
  r.paths.push_back(path);
}

/// A new empty directory /tmp/<prefix>_XXXXXX, removed when the process ends (remove_at_exit).
inline std::string temp_dir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + "_XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
  remove_at_exit(tmpl);
  return tmpl;
}
inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
inline void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

}  // namespace test_files
