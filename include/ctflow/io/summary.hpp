#pragma once
/// @brief tf.summary for TensorBoard: `summary::create_file_writer(logdir)` and the scalar,
/// histogram, image and text summaries, written as TensorFlow 2 writes them.
///
///     auto writer = summary::create_file_writer("logs/train");
///     {
///       auto scope = writer.as_default();
///       summary::scalar("loss", loss, step);          // or writer.scalar(...)
///       summary::histogram("weights", w, step);
///     }
///
/// The file is `events.out.tfevents.<time>.<host>.<pid>.<n>.v2`: TFRecord-framed `Event`
/// protobufs, the first carrying `file_version: "brain.Event:2"`. Every summary is a tensor with
/// its plugin's metadata (scalars: float32 []; histograms: float64 [buckets, 3] of left edge,
/// right edge, count; images: strings [2 + n] of width, height and PNGs; text: string []).
/// Events are queued and written when max_queue are waiting, when flush_millis have passed since
/// the last write, on flush() and on close(); close() also fsyncs. Nothing is ever rewritten, so
/// the file only grows by whole events.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ctflow/core/tensor.hpp>
#include <ctflow/data/image.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/detail/protobuf.hpp>
#include <ctflow/detail/linkage.hpp>
#include <ctflow/detail/record.hpp>

namespace ctflow::summary {

namespace detail {

namespace pb = ctflow::detail::pb;

/// tensorflow.DataType values and SummaryMetadata's DataClass.
enum : std::uint64_t { dt_float = 1, dt_double = 2, dt_string = 7 };
enum : std::uint64_t { data_class_scalar = 1, data_class_tensor = 2, data_class_blob_sequence = 3 };

/// A TensorProto: dtype, shape, and either little-endian content or strings.
struct tensor_proto {
  std::uint64_t dtype;
  std::vector<std::uint64_t> shape;
  std::string content;
  std::vector<std::string> strings;
  void encode(pb::writer& w) const;
};

/// An Event holding one Summary.Value (tag, metadata for plugin, tensor).
CTFLOW_DECL std::string summary_event(double wall_time, std::int64_t step, std::string_view tag, std::string_view plugin,
                                 std::uint64_t data_class, std::string_view description, const tensor_proto& t);

template <class T> std::string le_bytes(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

/// TensorBoard's histogram buckets: `buckets` equal-width buckets from min to max as rows of
/// (left edge, right edge, count); all values equal: every edge is that value and the last bucket
/// holds them; no data: zeros.
CTFLOW_DECL std::vector<double> histogram_buckets(const std::vector<double>& x, std::size_t buckets);

}  // namespace detail

class SummaryWriter;

namespace detail {
inline thread_local SummaryWriter* default_writer = nullptr;
inline thread_local std::optional<std::int64_t> default_step;
}  // namespace detail

namespace experimental {
/// @brief tf.summary.experimental.set_step: the step summaries without one use (this thread).
inline void set_step(std::optional<std::int64_t> step) { detail::default_step = step; }
inline std::optional<std::int64_t> get_step() { return detail::default_step; }
}  // namespace experimental

/// @brief A TensorBoard event file writer (tf.summary.SummaryWriter). Safe to use from several
/// threads.
class SummaryWriter {
 public:
  SummaryWriter(const std::string& logdir, int max_queue = 10, int flush_millis = 120000, const std::string& filename_suffix = ".v2");
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;
  /// @brief Closes the file; an error here is reported on stderr (a destructor cannot throw).
  ~SummaryWriter();

  /// @brief The event file's path.
  const std::string& path() const { return path_; }

  /// @brief tf.summary.scalar: a float32 scalar.
  void scalar(std::string_view name, double value, std::int64_t step, std::string_view description = {});
  template <Expression E> requires(rank_v<E> == 0)
  void scalar(std::string_view name, const E& value, std::int64_t step, std::string_view description = {}) {
    const auto t = eval(value);
    scalar(name, double(compute_t<value_t<E>>(t.data()[0])), step, description);
  }

  /// @brief tf.summary.histogram: TensorBoard's buckets (default 30) of the values of data.
  template <Expression E>
  void histogram(std::string_view name, const E& data, std::int64_t step, int buckets = 30, std::string_view description = {}) {
    static_assert(!std::is_same_v<value_t<E>, bool>, "ctflow::summary::histogram: needs numbers, got bool");
    const auto t = eval(data);
    std::vector<double> x(t.size());
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = double(compute_t<value_t<E>>(t.data()[i]));
    const std::size_t k = std::size_t(std::max(0, buckets));
    detail::tensor_proto p{detail::dt_double, {k, 3}, detail::le_bytes(detail::histogram_buckets(x, k)), {}};
    add(detail::summary_event(ctflow::detail::wall_seconds(), step, name, "histograms", detail::data_class_tensor, description, p));
  }

  /// @brief tf.summary.image: the first max_outputs images of a [k, h, w, c] batch (c = 1, 3 or 4),
  /// uint8 or floating in [0, 1] (scaled as tf.image.convert_image_dtype does), as PNG.
  template <Expression E>
  void image(std::string_view name, const E& data, std::int64_t step, int max_outputs = 3, std::string_view description = {}) {
    static_assert(rank_v<E> == 4, "ctflow::summary::image: images must be [k, height, width, channels]");
    using T = value_t<E>;
    static_assert(std::is_same_v<T, std::uint8_t> || is_floating_v<T>, "ctflow::summary::image: images must be uint8 or floating");
    const auto t = eval(data);
    const auto d = t.dims();
    if (d[3] != 1 && d[3] != 3 && d[3] != 4)
      throw shape_error("ctflow::summary::image: images need 1, 3 or 4 channels, got shape " + format_dims(d));
    const std::size_t n = std::min<std::size_t>(d[0], std::size_t(std::max(0, max_outputs)));
    detail::tensor_proto p{detail::dt_string, {n + 2}, {}, {std::to_string(d[2]), std::to_string(d[1])}};
    const std::size_t per = d[1] * d[2] * d[3];
    for (std::size_t i = 0; i < n; ++i) {
      Tensor<std::uint8_t, Shape<dyn, dyn, dyn>> img({d[1], d[2], d[3]});
      for (std::size_t j = 0; j < per; ++j) {
        if constexpr (std::is_same_v<T, std::uint8_t>) img.data()[j] = t.data()[i * per + j];
        else {
          const double v = double(compute_t<T>(t.data()[i * per + j])) * 255.5;  // saturating, as convert_image_dtype
          img.data()[j] = std::uint8_t(std::isnan(v) ? 0.0 : std::clamp(v, 0.0, 255.0));
        }
      }
      p.strings.push_back(io::encode_png(img));
    }
    add(detail::summary_event(ctflow::detail::wall_seconds(), step, name, "images", detail::data_class_blob_sequence, description, p));
  }

  /// @brief tf.summary.text: a string (Markdown in TensorBoard).
  void text(std::string_view name, std::string_view data, std::int64_t step, std::string_view description = {});

  /// @brief Writes the queued events to the file.
  void flush();
  /// @brief Flushes, fsyncs and closes the file; later summaries are errors.
  void close();

  /// @brief Makes this the writer of the free functions (summary::scalar, ...) on this thread
  /// until the returned scope ends (tf's `with writer.as_default():`).
  class default_scope {
   public:
    explicit default_scope(SummaryWriter* w) : previous_(std::exchange(detail::default_writer, w)) {}
    default_scope(const default_scope&) = delete;
    default_scope& operator=(const default_scope&) = delete;
    ~default_scope() { detail::default_writer = previous_; }

   private:
    SummaryWriter* previous_;
  };
  /// @brief tf's `with writer.as_default():`: keep the returned scope alive while the free
  /// functions should write here.
  [[nodiscard]] default_scope as_default() { return default_scope(this); }

 private:
  void add(std::string event);
  /// Frames the queued events and writes them in one system call (caller holds m_).
  void write_queue();

  std::mutex m_;
  std::string path_;
  int fd_ = -1;
  std::size_t max_queue_;
  int flush_millis_;
  std::vector<std::string> queue_;
  std::string framed_;
  std::chrono::steady_clock::time_point last_write_ = std::chrono::steady_clock::now();
};

/// @brief tf.summary.create_file_writer: a writer of a new event file in logdir (created if needed).
inline SummaryWriter create_file_writer(const std::string& logdir, int max_queue = 10, int flush_millis = 120000,
                                        const std::string& filename_suffix = ".v2") {
  return SummaryWriter(logdir, max_queue, flush_millis, filename_suffix);
}

namespace detail {
CTFLOW_DECL std::int64_t step_or_default(std::optional<std::int64_t> step, const char* op);
}  // namespace detail

/// @brief tf.summary.scalar on the default writer; false when there is none.
template <class X> bool scalar(std::string_view name, const X& data, std::optional<std::int64_t> step = std::nullopt) {
  if (!detail::default_writer) return false;
  detail::default_writer->scalar(name, data, detail::step_or_default(step, "ctflow::summary::scalar"));
  return true;
}
/// @brief tf.summary.histogram on the default writer; false when there is none.
template <Expression E> bool histogram(std::string_view name, const E& data, std::optional<std::int64_t> step = std::nullopt, int buckets = 30) {
  if (!detail::default_writer) return false;
  detail::default_writer->histogram(name, data, detail::step_or_default(step, "ctflow::summary::histogram"), buckets);
  return true;
}
/// @brief tf.summary.image on the default writer; false when there is none.
template <Expression E> bool image(std::string_view name, const E& data, std::optional<std::int64_t> step = std::nullopt, int max_outputs = 3) {
  if (!detail::default_writer) return false;
  detail::default_writer->image(name, data, detail::step_or_default(step, "ctflow::summary::image"), max_outputs);
  return true;
}
/// @brief tf.summary.text on the default writer; false when there is none.
CTFLOW_DECL bool text(std::string_view name, std::string_view data, std::optional<std::int64_t> step = std::nullopt);
/// @brief Flushes the default writer (tf.summary.flush).
CTFLOW_DECL void flush();

}  // namespace ctflow::summary

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/io/impl/summary.ipp>
#endif
