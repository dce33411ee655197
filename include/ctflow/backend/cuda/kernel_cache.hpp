#pragma once
/// @file
/// @brief Compiled kernels, each compiled once per source, architecture, NVRTC version and
/// options: kept in the process, and on disk where a directory is set (`CTFLOW_KERNEL_CACHE`, or
/// set_directory()), as PyTorch's jiterator and CuPy keep theirs. A disk entry is one file per key,
/// written atomically, and checked when read: it holds its key (architecture, NVRTC version,
/// options and source), which must equal the one asked for, and checksums of key and binary; a
/// damaged or foreign file is compiled again and replaced.

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <ctflow/backend/cuda/nvrtc.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/detail/record.hpp>

namespace ctflow::backend::cuda {

class kernel_cache {
 public:
  /// @brief How each request was answered since the cache was made.
  struct counts {
    std::size_t memory = 0, disk = 0, compiled = 0;
    std::size_t unwritten = 0;  // compiled entries the directory did not take (kept in memory)
  };

  /// @brief The process's cache, on disk in $CTFLOW_KERNEL_CACHE when it is set.
  static kernel_cache& instance() {
    static kernel_cache c([] {
      const char* d = std::getenv("CTFLOW_KERNEL_CACHE");
      return std::string(d ? d : "");
    }());
    return c;
  }
  /// @brief A cache in `directory` (created if missing; empty: in memory only).
  explicit kernel_cache(std::string directory = {}) { set_directory(std::move(directory)); }

  /// @brief Keeps entries on disk in `directory` from now on (empty: in memory only).
  void set_directory(std::string directory) {
    const std::lock_guard lock(m_);
    if (!directory.empty()) ::mkdir(directory.c_str(), 0755);  // an existing one is fine; a failure shows when written
    directory_ = std::move(directory);
  }

  /// @brief The binary of `source` compiled for `arch` with `options` (see compile()): from the
  /// process's entries, else from disk, else compiled now (and kept in both). The reference stays
  /// valid as long as the cache (entries are never dropped). One compilation at a time.
  const std::vector<char>& binary(const std::string& source, const std::string& name, const std::string& arch, const std::vector<std::string>& options = {}) {
    const std::lock_guard lock(m_);
    const std::string key = key_of(source, arch, options);
    if (auto it = entries_.find(key); it != entries_.end()) {
      ++counts_.memory;
      return it->second;
    }
    const std::string file = path_of(key, arch);
    std::vector<char> binary;
    if (!file.empty() && read(file, key, binary)) {
      ++counts_.disk;
    } else {
      binary = compile(source, name, arch, options).binary;
      ++counts_.compiled;
      if (!file.empty()) {
        try {
          write(file, key, binary);
        } catch (const io_error&) {
          ++counts_.unwritten;  // a read-only or full directory: the kernel is compiled all the same
        }
      }
    }
    return entries_.emplace(key, std::move(binary)).first->second;
  }

  /// @brief The file that holds (or would hold) an entry; empty where there is no directory.
  std::string file_of(const std::string& source, const std::string& arch, const std::vector<std::string>& options = {}) const {
    const std::lock_guard lock(m_);
    return path_of(key_of(source, arch, options), arch);
  }
  counts stats() const {
    const std::lock_guard lock(m_);
    return counts_;
  }

 private:
  static constexpr char magic[8] = {'c', 't', 'f', 'l', 'o', 'w', 'K', '1'};

  /// An entry's key: the architecture, NVRTC's version, the default and given options and the
  /// source, each with its length (no two keys read the same).
  static std::string key_of(const std::string& source, const std::string& arch, const std::vector<std::string>& options) {
    std::string key;
    auto add = [&](const std::string& part) { key += std::to_string(part.size()) + ":" + part + "\n"; };
    add(arch);
    add(nvrtc().version());
    for (const auto& o : default_options()) add(o);
    key += "|\n";
    for (const auto& o : options) add(o);
    add(source);
    return key;
  }
  /// The file of the entry of `key` (its FNV-1a hash; empty where there is no directory).
  std::string path_of(const std::string& key, const std::string& arch) const {
    if (directory_.empty()) return {};
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return directory_ + "/" + hex + "-" + arch + "-nvrtc" + nvrtc().version() + ".ctk";
  }

  // Layout: magic, key bytes (u64), binary bytes (u64), crc32c of each (u32, u32), the key, the
  // binary (integers in this host's byte order).
  static bool read(const std::string& file, const std::string& key, std::vector<char>& binary) {
    try {
      const ctflow::detail::mapped_file f(file, "ctflow::cuda: kernel cache");
      const auto b = f.bytes();
      constexpr std::size_t head = sizeof magic + 8 + 8 + 4 + 4;
      if (b.size() < head || std::memcmp(b.data(), magic, sizeof magic) != 0) return false;
      std::uint64_t ns = 0, nb = 0;
      std::uint32_t cs = 0, cb = 0;
      std::memcpy(&ns, b.data() + 8, 8);
      std::memcpy(&nb, b.data() + 16, 8);
      std::memcpy(&cs, b.data() + 24, 4);
      std::memcpy(&cb, b.data() + 28, 4);
      if (ns != key.size() || ns > b.size() - head || b.size() - head - ns != nb) return false;
      const auto* s = b.data() + head;
      if (std::memcmp(s, key.data(), ns) != 0 || ctflow::io::crc32c(s, ns) != cs || ctflow::io::crc32c(s + ns, nb) != cb) return false;
      binary.assign(reinterpret_cast<const char*>(s + ns), reinterpret_cast<const char*>(s + ns + nb));
      return true;
    } catch (const io_error&) {
      return false;  // absent or unreadable: compiled again
    }
  }
  static void write(const std::string& file, const std::string& key, const std::vector<char>& binary) {
    ctflow::detail::atomic_output out(file, ctflow::detail::compression::none, "ctflow::cuda: kernel cache");
    const std::uint64_t ns = key.size(), nb = binary.size();
    const std::uint32_t cs = ctflow::io::crc32c(key.data(), key.size()), cb = ctflow::io::crc32c(binary.data(), binary.size());
    out.write(magic, sizeof magic);
    out.write(&ns, 8);
    out.write(&nb, 8);
    out.write(&cs, 4);
    out.write(&cb, 4);
    out.write(key.data(), key.size());
    out.write(binary.data(), binary.size());
    out.commit();
  }

  mutable std::mutex m_;
  std::string directory_;
  std::map<std::string, std::vector<char>> entries_;  // by key_of
  counts counts_;
};

}  // namespace ctflow::backend::cuda
