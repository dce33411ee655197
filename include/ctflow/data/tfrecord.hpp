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

#include <ctflow/detail/file.hpp>
#include <ctflow/detail/linkage.hpp>
#include <ctflow/detail/record.hpp>
#include <ctflow/data/dataset.hpp>

namespace ctflow::io {

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
  ~TFRecordWriter();
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  /// @brief Appends one record (tf.io.TFRecordWriter.write); value_error after close.
  void write(std::string_view record);
  /// @brief Pushes buffered bytes to the temporary file (the file appears only on close).
  void flush() { out_.flush(); }
  /// @brief Completes the file: fsync'ed and renamed into place. Later writes are errors.
  void close();

 private:
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
  [[noreturn]] void fail(std::uint64_t at, const std::string& why) {
    ctflow::detail::throw_io("ctflow::data::TFRecordDataset", src_.name(), at, why);
  }
  Source& src_;
};

}  // namespace detail

/// @brief Every record of TFRecord bytes held in memory (tests, fuzzing, embedded data).
CTFLOW_DECL std::vector<std::string> read_tfrecords(std::span<const std::uint8_t> bytes, const std::string& name = "<memory>");

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

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/data/impl/tfrecord.ipp>
#endif
