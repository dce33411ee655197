#pragma once
// Byte sources and sinks for the readers and writers: buffered plain or gzip files, memory, and
// atomic whole-file writes (temporary file, fsync, rename). Every failure is an io_error naming
// the file, the offset and the reason.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/detail/linkage.hpp>

namespace ctflow::detail {

/// TensorFlow's compression_type: "" (none) or "GZIP".
enum class compression { none, gzip };

CTFLOW_DECL compression parse_compression(const std::string& what, const std::string& type);

/// The directory of a path ("." for a bare name).
CTFLOW_DECL std::string parent_directory(const std::string& path);

/// This machine's name, as files written for TensorBoard and the profiler carry it.
CTFLOW_DECL std::string host_name();

/// Seconds since the Unix epoch, as event files and the checkpoint index record times.
CTFLOW_DECL double wall_seconds();

[[noreturn]] CTFLOW_DECL void throw_io(const std::string& what, const std::string& name, std::uint64_t offset, const std::string& why);

/// Opens path for reading, or throws an io_error that tells a missing file ("does not exist"), an
/// unreadable one (the system's reason) and a directory apart.
CTFLOW_DECL int open_for_reading(const std::string& path, const std::string& what);

/// Reads a plain or gzip file in large blocks.
class input_file {
 public:
  input_file(std::string path, compression c, std::string what);
  input_file(const input_file&) = delete;
  input_file& operator=(const input_file&) = delete;
  ~input_file();

  /// Reads up to n bytes; fewer only at the end of the file.
  std::size_t read(void* dst, std::size_t n);
  std::uint64_t offset() const { return offset_; }
  const std::string& name() const { return path_; }

 private:
  std::size_t raw_read(std::uint8_t* dst, std::size_t n);
  std::string path_, what_;
  int fd_ = -1;
  gzFile gz_ = nullptr;
  std::vector<std::uint8_t> buf_;
  std::size_t at_ = 0, end_ = 0;
  std::uint64_t offset_ = 0;
};

/// The same interface over bytes in memory (tests and fuzzing).
class input_memory {
 public:
  input_memory(std::span<const std::uint8_t> bytes, std::string name) : bytes_(bytes), name_(std::move(name)) {}
  std::size_t read(void* dst, std::size_t n) {
    const std::size_t k = std::min<std::size_t>(n, bytes_.size() - at_);
    if (k) std::memcpy(dst, bytes_.data() + at_, k);
    at_ += k;
    return k;
  }
  std::uint64_t offset() const { return at_; }
  const std::string& name() const { return name_; }

 private:
  std::span<const std::uint8_t> bytes_;
  std::string name_;
  std::size_t at_ = 0;
};

/// Inflates a gzip stream (several members allowed) held in memory.
CTFLOW_DECL std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> in, const std::string& what, const std::string& name);

/// Inflates deflate data `in` (zlib-wrapped with window_bits 15, raw with -15) that must hold
/// exactly `size` bytes: memory grows with what the stream really produces, never past `size`.
/// Errors name the file, the offset of the data plus what was consumed, and `context`.
CTFLOW_DECL std::vector<std::uint8_t> inflate_exact(std::span<const std::uint8_t> in, int window_bits, std::uint64_t size, const std::string& what,
                                                    const std::string& name, std::uint64_t offset, const std::string& context);

/// A whole file mapped read-only (files of any size: offsets are 64-bit).
class mapped_file {
 public:
  mapped_file() = default;
  mapped_file(const std::string& path, const std::string& what);
  mapped_file(mapped_file&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  mapped_file& operator=(mapped_file&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  ~mapped_file();
  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }

 private:
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Writes a file that appears whole or not at all: a temporary file beside it, fsync, rename,
/// then fsync of the directory. Destroyed without commit(), the temporary file is removed.
class atomic_output {
 public:
  atomic_output(std::string path, compression c, std::string what);
  atomic_output(const atomic_output&) = delete;
  atomic_output& operator=(const atomic_output&) = delete;
  ~atomic_output();

  void write(const void* data, std::size_t n);
  /// Flushes buffered compressed data (the file becomes readable up to here after commit).
  void flush();
  /// Finishes the file, makes it durable and gives it its name.
  void commit();
  std::uint64_t written() const { return written_; }

 private:
  void deflate_some(const std::uint8_t* data, std::size_t n, int flush);
  void raw_write(const std::uint8_t* p, std::size_t n);
  [[noreturn]] void fail(const char* op);
  void discard();
  std::string path_, tmp_, what_;
  int fd_ = -1;
  bool gzip_;
  z_stream z_{};
  std::vector<std::uint8_t> zout_;
  std::uint64_t written_ = 0;
};

}  // namespace ctflow::detail

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/detail/impl/file.ipp>
#endif
