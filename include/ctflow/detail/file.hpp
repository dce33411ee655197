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

namespace ctflow::detail {

/// TensorFlow's compression_type: "" (none) or "GZIP".
enum class compression { none, gzip };

inline compression parse_compression(const std::string& what, const std::string& type) {
  if (type.empty()) return compression::none;
  if (type == "GZIP") return compression::gzip;
  throw value_error(what + ": compression_type must be \"\" or \"GZIP\", got \"" + type + "\"");
}

/// The directory of a path ("." for a bare name).
inline std::string parent_directory(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

/// This machine's name, as files written for TensorBoard and the profiler carry it.
inline std::string host_name() {
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  return host;
}

/// Seconds since the Unix epoch, as event files and the checkpoint index record times.
inline double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

[[noreturn]] inline void throw_io(const std::string& what, const std::string& name, std::uint64_t offset, const std::string& why) {
  throw io_error(what + ": " + name + " at offset " + std::to_string(offset) + ": " + why);
}

/// Reads a plain or gzip file in large blocks.
class input_file {
 public:
  input_file(std::string path, compression c, std::string what) : path_(std::move(path)), what_(std::move(what)) {
    if (c == compression::gzip) {
      gz_ = gzopen(path_.c_str(), "rb");
      if (!gz_) throw io_error(what_ + ": cannot open " + path_ + ": " + std::strerror(errno));
      gzbuffer(gz_, 1 << 18);
    } else {
      fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) throw io_error(what_ + ": cannot open " + path_ + ": " + std::strerror(errno));
      buf_.resize(1 << 20);
    }
  }
  input_file(const input_file&) = delete;
  input_file& operator=(const input_file&) = delete;
  ~input_file() {
    if (gz_) gzclose(gz_);
    if (fd_ >= 0) ::close(fd_);
  }

  /// Reads up to n bytes; fewer only at the end of the file.
  std::size_t read(void* dst, std::size_t n) {
    auto* out = static_cast<std::uint8_t*>(dst);
    std::size_t done = 0;
    if (gz_) {
      while (done < n) {
        const unsigned chunk = unsigned(std::min<std::size_t>(n - done, 1u << 30));
        const int got = gzread(gz_, out + done, chunk);
        if (got < 0) {
          int code = 0;
          const char* msg = gzerror(gz_, &code);
          throw_io(what_, path_, offset_ + done, std::string("gzip: ") + msg);
        }
        if (offset_ == 0 && done == 0 && gzdirect(gz_)) throw_io(what_, path_, 0, "not GZIP data (compression_type \"GZIP\")");
        if (got == 0) break;
        done += std::size_t(got);
      }
    } else {
      while (done < n) {
        if (at_ == end_) {
          // Large reads go straight to the destination; small ones through the buffer.
          if (n - done >= buf_.size()) {
            const std::size_t got = raw_read(out + done, n - done);
            if (got == 0) break;
            done += got;
            continue;
          }
          at_ = 0;
          end_ = raw_read(buf_.data(), buf_.size());
          if (end_ == 0) break;
        }
        const std::size_t k = std::min(n - done, end_ - at_);
        std::memcpy(out + done, buf_.data() + at_, k);
        at_ += k;
        done += k;
      }
    }
    offset_ += done;
    return done;
  }
  std::uint64_t offset() const { return offset_; }
  const std::string& name() const { return path_; }

 private:
  std::size_t raw_read(std::uint8_t* dst, std::size_t n) {
    for (;;) {
      const ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) return std::size_t(got);
      if (errno != EINTR) throw_io(what_, path_, offset_, std::strerror(errno));
    }
  }
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
inline std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> in, const std::string& what, const std::string& name) {
  std::vector<std::uint8_t> out(std::max<std::size_t>(in.size() * 4, 1 << 16));
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) throw io_error(what + ": " + name + ": cannot start zlib");
  std::unique_ptr<z_stream, void (*)(z_stream*)> guard(&z, [](z_stream* s) { inflateEnd(s); });
  z.next_in = const_cast<Bytef*>(in.data());
  std::size_t produced = 0;
  for (;;) {
    if (produced == out.size()) out.resize(out.size() * 2);
    z.avail_in = uInt(std::min<std::size_t>(in.size() - std::size_t(z.next_in - in.data()), 1u << 30));
    z.next_out = out.data() + produced;
    z.avail_out = uInt(std::min<std::size_t>(out.size() - produced, 1u << 30));
    const uInt before = z.avail_out;
    const int rc = inflate(&z, Z_NO_FLUSH);
    produced += before - z.avail_out;
    const std::size_t consumed = std::size_t(z.next_in - in.data());
    if (rc == Z_STREAM_END) {
      if (consumed == in.size()) break;
      inflateReset(&z);  // the next gzip member
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      throw_io(what, name, consumed, std::string("corrupt gzip data") + (z.msg ? std::string(": ") + z.msg : ""));
    if (rc == Z_BUF_ERROR && z.avail_out != 0) throw_io(what, name, consumed, "truncated gzip data");
  }
  out.resize(produced);
  return out;
}

/// A whole file mapped read-only (files of any size: offsets are 64-bit).
class mapped_file {
 public:
  mapped_file() = default;
  mapped_file(const std::string& path, const std::string& what) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw io_error(what + ": cannot open " + path + ": " + std::strerror(errno));
    struct stat st{};
    if (::fstat(fd, &st) != 0) {
      const int e = errno;
      ::close(fd);
      throw io_error(what + ": cannot stat " + path + ": " + std::strerror(e));
    }
    size_ = std::size_t(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        const int e = errno;
        ::close(fd);
        throw io_error(what + ": cannot map " + path + ": " + std::strerror(e));
      }
      data_ = static_cast<const std::uint8_t*>(p);
    }
    ::close(fd);
  }
  mapped_file(mapped_file&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  mapped_file& operator=(mapped_file&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  ~mapped_file() {
    if (data_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
  }
  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }

 private:
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Writes a file that appears whole or not at all: a temporary file beside it, fsync, rename,
/// then fsync of the directory. Destroyed without commit(), the temporary file is removed.
class atomic_output {
 public:
  atomic_output(std::string path, compression c, std::string what)
      : path_(std::move(path)), tmp_(path_ + ".tmp" + std::to_string(::getpid())), what_(std::move(what)), gzip_(c == compression::gzip) {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw io_error(what_ + ": cannot create " + tmp_ + ": " + std::strerror(errno));
    if (gzip_) {
      if (deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        discard();
        throw io_error(what_ + ": " + path_ + ": cannot start zlib");
      }
      zout_.resize(1 << 18);
    }
  }
  atomic_output(const atomic_output&) = delete;
  atomic_output& operator=(const atomic_output&) = delete;
  ~atomic_output() {
    if (fd_ >= 0) discard();
  }

  void write(const void* data, std::size_t n) {
    if (!gzip_) { raw_write(static_cast<const std::uint8_t*>(data), n); return; }
    deflate_some(static_cast<const std::uint8_t*>(data), n, Z_NO_FLUSH);
  }
  /// Flushes buffered compressed data (the file becomes readable up to here after commit).
  void flush() {
    if (gzip_) deflate_some(nullptr, 0, Z_SYNC_FLUSH);
  }
  /// Finishes the file, makes it durable and gives it its name.
  void commit() {
    if (gzip_) {
      deflate_some(nullptr, 0, Z_FINISH);
      deflateEnd(&z_);
      gzip_ = false;
    }
    if (::fsync(fd_) != 0) fail("fsync");
    if (::close(fd_) != 0) { fd_ = -1; fail("close"); }
    fd_ = -1;
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const int e = errno;
      ::unlink(tmp_.c_str());
      throw io_error(what_ + ": cannot rename " + tmp_ + " to " + path_ + ": " + std::strerror(e));
    }
    if (int d = ::open(parent_directory(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); d >= 0) {
      ::fsync(d);
      ::close(d);
    }
  }
  std::uint64_t written() const { return written_; }

 private:
  void deflate_some(const std::uint8_t* data, std::size_t n, int flush) {
    z_.next_in = const_cast<Bytef*>(data);
    z_.avail_in = uInt(n);
    do {
      z_.next_out = zout_.data();
      z_.avail_out = uInt(zout_.size());
      if (deflate(&z_, flush) == Z_STREAM_ERROR) fail("gzip");
      raw_write(zout_.data(), zout_.size() - z_.avail_out);
    } while (z_.avail_out == 0 || z_.avail_in != 0);
  }
  void raw_write(const std::uint8_t* p, std::size_t n) {
    while (n > 0) {
      const ssize_t k = ::write(fd_, p, n);
      if (k < 0) {
        if (errno == EINTR) continue;
        fail("write");
      }
      p += k;
      n -= std::size_t(k);
      written_ += std::uint64_t(k);
    }
  }
  [[noreturn]] void fail(const char* op) {
    const int e = errno;
    discard();
    throw io_error(what_ + ": " + op + " of " + path_ + " failed: " + std::strerror(e));
  }
  void discard() {
    if (gzip_) { deflateEnd(&z_); gzip_ = false; }
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    ::unlink(tmp_.c_str());
  }
  std::string path_, tmp_, what_;
  int fd_ = -1;
  bool gzip_;
  z_stream z_{};
  std::vector<std::uint8_t> zout_;
  std::uint64_t written_ = 0;
};

}  // namespace ctflow::detail
