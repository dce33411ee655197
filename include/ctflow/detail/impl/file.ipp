#pragma once
// Definitions of detail/file.hpp (compiled with ctflow::data's part; see detail/linkage.hpp).

#include <ctflow/detail/file.hpp>

namespace ctflow::detail {

CTFLOW_DECL compression parse_compression(const std::string& what, const std::string& type) {
  if (type.empty()) return compression::none;
  if (type == "GZIP") return compression::gzip;
  throw value_error(what + ": compression_type must be \"\" or \"GZIP\", got \"" + type + "\"");
}

CTFLOW_DECL std::string parent_directory(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

CTFLOW_DECL std::string host_name() {
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  return host;
}

CTFLOW_DECL double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

CTFLOW_DECL void throw_io(const std::string& what, const std::string& name, std::uint64_t offset, const std::string& why) {
  throw io_error(what + ": " + name + " at offset " + std::to_string(offset) + ": " + why);
}

CTFLOW_DECL int open_for_reading(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) throw io_error(what + ": cannot open " + path + ": the file does not exist");
    throw io_error(what + ": cannot open " + path + ": " + std::strerror(e));
  }
  struct stat st{};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw io_error(what + ": cannot read " + path + ": it is a directory, not a file");
  }
  return fd;
}

// ---- input_file

CTFLOW_DECL input_file::input_file(std::string path, compression c, std::string what) : path_(std::move(path)), what_(std::move(what)) {
  if (c == compression::gzip) {
    const int fd = open_for_reading(path_, what_);
    gz_ = gzdopen(fd, "rb");
    if (!gz_) {
      ::close(fd);
      throw io_error(what_ + ": cannot open " + path_ + ": " + std::strerror(errno));
    }
    gzbuffer(gz_, 1 << 18);
  } else {
    fd_ = open_for_reading(path_, what_);
    buf_.resize(1 << 20);
  }
}

CTFLOW_DECL input_file::~input_file() {
  if (gz_) gzclose(gz_);
  if (fd_ >= 0) ::close(fd_);
}

CTFLOW_DECL std::size_t input_file::read(void* dst, std::size_t n) {
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

CTFLOW_DECL std::size_t input_file::raw_read(std::uint8_t* dst, std::size_t n) {
  for (;;) {
    const ssize_t got = ::read(fd_, dst, n);
    if (got >= 0) return std::size_t(got);
    if (errno != EINTR) throw_io(what_, path_, offset_, std::strerror(errno));
  }
}

// ---- gunzip

CTFLOW_DECL std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> in, const std::string& what, const std::string& name) {
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

CTFLOW_DECL std::vector<std::uint8_t> inflate_exact(std::span<const std::uint8_t> in, int window_bits, std::uint64_t size, const std::string& what,
                                                    const std::string& name, std::uint64_t offset, const std::string& context) {
  std::vector<std::uint8_t> out(std::size_t(std::min<std::uint64_t>(size, std::uint64_t(1) << 20)));
  z_stream z{};
  if (inflateInit2(&z, window_bits) != Z_OK) throw_io(what, name, offset, "cannot start zlib");
  std::unique_ptr<z_stream, void (*)(z_stream*)> guard(&z, [](z_stream* s) { inflateEnd(s); });
  std::uint64_t consumed = 0, produced = 0;
  const auto step = [&](std::uint8_t* dst, std::uint64_t room) {
    z.next_in = const_cast<Bytef*>(in.data() + consumed);
    z.avail_in = uInt(std::min<std::uint64_t>(in.size() - consumed, 1u << 30));
    z.next_out = dst;
    z.avail_out = uInt(std::min<std::uint64_t>(room, 1u << 30));
    const uInt in_before = z.avail_in, out_before = z.avail_out;
    const int rc = inflate(&z, Z_NO_FLUSH);
    consumed += in_before - z.avail_in;
    return std::pair{rc, std::uint64_t(out_before - z.avail_out)};
  };
  for (;;) {
    if (produced == out.size()) {
      if (produced == size) {
        // Full: the stream must end here, or it holds more than it should.
        std::uint8_t probe;
        const auto [rc, got] = step(&probe, 1);
        if (rc == Z_STREAM_END && got == 0) break;
        throw_io(what, name, offset + consumed, context + " holds more than its " + std::to_string(size) + " bytes");
      }
      out.resize(std::size_t(std::min<std::uint64_t>(size, std::uint64_t(out.size()) * 2)));
    }
    const auto [rc, got] = step(out.data() + produced, out.size() - produced);
    produced += got;
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && z.avail_out != 0)
      throw_io(what, name, offset + consumed, context + " ends early (" + std::to_string(produced) + " of " + std::to_string(size) + " bytes)");
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      throw_io(what, name, offset + consumed, context + ": corrupt deflate data" + (z.msg ? std::string(": ") + z.msg : std::string()));
  }
  if (produced != size)
    throw_io(what, name, offset, context + " holds " + std::to_string(produced) + " bytes, " + std::to_string(size) + " were expected");
  out.resize(std::size_t(produced));
  return out;
}

// ---- mapped_file

CTFLOW_DECL mapped_file::mapped_file(const std::string& path, const std::string& what) {
  const int fd = open_for_reading(path, what);
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

CTFLOW_DECL mapped_file::~mapped_file() {
  if (data_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

// ---- atomic_output

CTFLOW_DECL atomic_output::atomic_output(std::string path, compression c, std::string what)
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

CTFLOW_DECL atomic_output::~atomic_output() {
  if (fd_ >= 0) discard();
}

CTFLOW_DECL void atomic_output::write(const void* data, std::size_t n) {
  if (!gzip_) { raw_write(static_cast<const std::uint8_t*>(data), n); return; }
  deflate_some(static_cast<const std::uint8_t*>(data), n, Z_NO_FLUSH);
}

CTFLOW_DECL void atomic_output::flush() {
  if (gzip_) deflate_some(nullptr, 0, Z_SYNC_FLUSH);
}

CTFLOW_DECL void atomic_output::commit() {
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

CTFLOW_DECL void atomic_output::deflate_some(const std::uint8_t* data, std::size_t n, int flush) {
  z_.next_in = const_cast<Bytef*>(data);
  z_.avail_in = uInt(n);
  do {
    z_.next_out = zout_.data();
    z_.avail_out = uInt(zout_.size());
    if (deflate(&z_, flush) == Z_STREAM_ERROR) fail("gzip");
    raw_write(zout_.data(), zout_.size() - z_.avail_out);
  } while (z_.avail_out == 0 || z_.avail_in != 0);
}

CTFLOW_DECL void atomic_output::raw_write(const std::uint8_t* p, std::size_t n) {
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

CTFLOW_DECL void atomic_output::fail(const char* op) {
  const int e = errno;
  discard();
  throw io_error(what_ + ": " + op + " of " + path_ + " failed: " + std::strerror(e));
}

CTFLOW_DECL void atomic_output::discard() {
  if (gzip_) { deflateEnd(&z_); gzip_ = false; }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
}

}  // namespace ctflow::detail
