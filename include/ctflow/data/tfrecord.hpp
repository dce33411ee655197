#pragma once
/// @brief TFRecord files: `io::TFRecordWriter` writes them and `data::TFRecordDataset` reads
/// them (elements are the records, as std::string: TensorFlow's scalar string). Each record is
/// framed as TensorFlow frames it: uint64 length, masked CRC32C of the length, the bytes, masked
/// CRC32C of the bytes (little-endian). Both CRCs are checked on every read; a damaged or
/// truncated file gives io_error naming the file, the offset and the reason. GZIP files are
/// read and written with compression_type "GZIP".

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../detail/file.hpp"
#include "dataset.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#endif

namespace ctflow::io {

namespace detail {

/// CRC32C (Castagnoli) tables for the slicing-by-8 fallback.
inline const std::array<std::array<std::uint32_t, 256>, 8>& crc32c_tables() {
  static const auto t = [] {
    std::array<std::array<std::uint32_t, 256>, 8> r{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
      r[0][i] = c;
    }
    for (int k = 1; k < 8; ++k)
      for (std::uint32_t i = 0; i < 256; ++i) r[std::size_t(k)][i] = (r[std::size_t(k) - 1][i] >> 8) ^ r[0][r[std::size_t(k) - 1][i] & 0xFF];
    return r;
  }();
  return t;
}

inline std::uint32_t crc32c_portable(std::uint32_t crc, const std::uint8_t* p, std::size_t n) {
  const auto& t = crc32c_tables();
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    w ^= crc;
    crc = t[7][w & 0xFF] ^ t[6][(w >> 8) & 0xFF] ^ t[5][(w >> 16) & 0xFF] ^ t[4][(w >> 24) & 0xFF] ^ t[3][(w >> 32) & 0xFF] ^
          t[2][(w >> 40) & 0xFF] ^ t[1][(w >> 48) & 0xFF] ^ t[0][w >> 56];
  }
  for (; n > 0; --n, ++p) crc = (crc >> 8) ^ t[0][(crc ^ *p) & 0xFF];
  return crc;
}

#if defined(__x86_64__)
/// The SSE4.2 crc32 instruction, 8 bytes a step (chosen at run time: builds need no -msse4.2).
__attribute__((target("sse4.2"))) inline std::uint32_t crc32c_sse42(std::uint32_t crc, const std::uint8_t* p, std::size_t n) {
  std::uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
  }
  crc = std::uint32_t(c);
  for (; n > 0; --n, ++p) crc = _mm_crc32_u8(crc, *p);
  return crc;
}
#endif

}  // namespace detail

/// @brief CRC32C (Castagnoli) of the bytes, as TensorFlow's crc32c::Value.
inline std::uint32_t crc32c(const void* data, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(data);
#if defined(__x86_64__)
  static const bool hw = __builtin_cpu_supports("sse4.2");
  return ~(hw ? detail::crc32c_sse42(~0u, p, n) : detail::crc32c_portable(~0u, p, n));
#else
  return ~detail::crc32c_portable(~0u, p, n);
#endif
}
/// @brief TensorFlow's masked CRC (a CRC stored beside the data it covers stays checkable).
inline std::uint32_t mask_crc(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline std::uint32_t unmask_crc(std::uint32_t masked) {
  const std::uint32_t r = masked - 0xa282ead8u;
  return (r >> 17) | (r << 15);
}

/// @brief tf.io.TFRecordOptions.
struct TFRecordOptions {
  std::string compression_type;  ///< "" or "GZIP"
};

/// @brief tf.io.TFRecordWriter. The file appears (complete, fsync'ed) when the writer is
/// closed or destroyed normally; if it is destroyed by an exception, nothing is left behind.
class TFRecordWriter {
 public:
  explicit TFRecordWriter(const std::string& path, const TFRecordOptions& options = {})
      : out_(path, ctflow::detail::parse_compression("ctflow::io::TFRecordWriter", options.compression_type), "ctflow::io::TFRecordWriter"),
        exceptions_(std::uncaught_exceptions()) {}
  TFRecordWriter(const std::string& path, const std::string& compression_type)
      : TFRecordWriter(path, TFRecordOptions{compression_type}) {}
  ~TFRecordWriter() {
    if (!closed_ && std::uncaught_exceptions() == exceptions_) {
      try { close(); } catch (...) {}
    }
  }
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  void write(std::string_view record) {
    if (closed_) throw value_error("ctflow::io::TFRecordWriter: write after close");
    std::uint8_t header[12];
    const std::uint64_t n = record.size();
    for (int i = 0; i < 8; ++i) header[i] = std::uint8_t(n >> (8 * i));
    put32(header + 8, mask_crc(crc32c(header, 8)));
    std::uint8_t footer[4];
    put32(footer, mask_crc(crc32c(record.data(), record.size())));
    out_.write(header, 12);
    out_.write(record.data(), record.size());
    out_.write(footer, 4);
  }
  void flush() { out_.flush(); }
  void close() {
    if (closed_) return;
    closed_ = true;
    out_.commit();
  }

 private:
  static void put32(std::uint8_t* p, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = std::uint8_t(v >> (8 * i));
  }
  ctflow::detail::atomic_output out_;
  int exceptions_;
  bool closed_ = false;
};

namespace detail {

/// Reads the records of one byte source (a file or memory), checking both CRCs of each.
template <class Source> class record_reader {
 public:
  explicit record_reader(Source& src) : src_(src) {}

  bool next(std::string& out) {
    const std::uint64_t at = src_.offset();
    std::uint8_t header[12];
    const std::size_t got = src_.read(header, 12);
    if (got == 0) return false;
    if (got < 12) fail(at, "truncated record header (" + std::to_string(got) + " of 12 bytes)");
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= std::uint64_t(header[i]) << (8 * i);
    if (crc32c(header, 8) != unmask_crc(get32(header + 8))) fail(at, "corrupted record: length CRC mismatch");
    // The length is only trusted as far as bytes arrive: grow in steps, never by the claim.
    out.clear();
    for (std::uint64_t have = 0; have < n;) {
      const std::size_t step = std::size_t(std::min<std::uint64_t>(n - have, std::uint64_t(1) << 26));
      out.resize(std::size_t(have) + step);
      const std::size_t k = src_.read(out.data() + have, step);
      if (k < step) fail(at, "truncated record: " + std::to_string(have + k) + " of " + std::to_string(n) + " bytes");
      have += k;
    }
    std::uint8_t footer[4];
    if (src_.read(footer, 4) < 4) fail(at, "truncated record: missing data CRC");
    if (crc32c(out.data(), out.size()) != unmask_crc(get32(footer))) fail(at, "corrupted record: data CRC mismatch");
    return true;
  }

 private:
  static std::uint32_t get32(const std::uint8_t* p) {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
  }
  [[noreturn]] void fail(std::uint64_t at, const std::string& why) {
    ctflow::detail::throw_io("ctflow::data::TFRecordDataset", src_.name(), at, why);
  }
  Source& src_;
};

}  // namespace detail

/// @brief Every record of TFRecord bytes held in memory (tests, fuzzing, embedded data).
inline std::vector<std::string> read_tfrecords(std::span<const std::uint8_t> bytes, const std::string& name = "<memory>") {
  ctflow::detail::input_memory src(bytes, name);
  detail::record_reader reader(src);
  std::vector<std::string> records;
  for (std::string r; reader.next(r);) records.push_back(r);
  return records;
}

}  // namespace ctflow::io

namespace ctflow::data {
namespace detail {

struct tfrecord_source {
  using element_type = std::string;
  std::vector<std::string> files;
  ctflow::detail::compression comp;
  std::int64_t cardinality() const { return unknown_cardinality; }
  struct iterator {
    std::vector<std::string> files;
    ctflow::detail::compression comp;
    std::size_t file = 0;
    std::unique_ptr<ctflow::detail::input_file> in{};
    std::unique_ptr<io::detail::record_reader<ctflow::detail::input_file>> reader{};
    bool next(std::string& out) {
      for (;;) {
        if (!reader) {
          if (file == files.size()) return false;
          in = std::make_unique<ctflow::detail::input_file>(files[file++], comp, "ctflow::data::TFRecordDataset");
          reader = std::make_unique<io::detail::record_reader<ctflow::detail::input_file>>(*in);
        }
        if (reader->next(out)) return true;
        reader.reset();
        in.reset();
      }
    }
  };
  iterator iter() const { return {files, comp}; }
};

}  // namespace detail

/// @brief tf.data.TFRecordDataset: the records of the files, in order, as std::string.
inline auto TFRecordDataset(std::vector<std::string> filenames, const std::string& compression_type = "") {
  return Dataset(detail::tfrecord_source{std::move(filenames),
                                         ctflow::detail::parse_compression("ctflow::data::TFRecordDataset", compression_type)});
}
template <class S> requires std::convertible_to<const S&, std::string_view>
auto TFRecordDataset(const S& filename, const std::string& compression_type = "") {
  return TFRecordDataset(std::vector<std::string>{std::string(std::string_view(filename))}, compression_type);
}

}  // namespace ctflow::data
