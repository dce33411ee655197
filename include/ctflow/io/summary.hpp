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
  void encode(pb::writer& w) const {
    w.uint64(1, dtype);
    w.message(2, [&](pb::writer& s) {
      for (auto d : shape) s.message(2, [&](pb::writer& dim) { if (d) dim.uint64(1, d); });
    });
    if (!content.empty()) w.bytes(4, content);
    for (const auto& s : strings) w.bytes(8, s);
  }
};

/// An Event holding one Summary.Value (tag, metadata for plugin, tensor).
inline std::string summary_event(double wall_time, std::int64_t step, std::string_view tag, std::string_view plugin,
                                 std::uint64_t data_class, std::string_view description, const tensor_proto& t) {
  std::string e;
  pb::writer w{e};
  w.float64(1, wall_time);
  if (step != 0) w.uint64(2, std::uint64_t(step));
  w.message(5, [&](pb::writer& summary) {
    summary.message(1, [&](pb::writer& value) {
      value.bytes(1, tag);
      value.message(8, [&](pb::writer& tensor) { t.encode(tensor); });
      value.message(9, [&](pb::writer& meta) {
        meta.message(1, [&](pb::writer& plugin_data) { plugin_data.bytes(1, plugin); });
        if (!description.empty()) meta.bytes(3, description);
        meta.uint64(4, data_class);
      });
    });
  });
  return e;
}

template <class T> std::string le_bytes(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

/// TensorBoard's histogram buckets: `buckets` equal-width buckets from min to max as rows of
/// (left edge, right edge, count); all values equal: every edge is that value and the last bucket
/// holds them; no data: zeros.
inline std::vector<double> histogram_buckets(const std::vector<double>& x, std::size_t buckets) {
  std::vector<double> out(buckets * 3, 0.0);
  if (x.empty() || buckets == 0) return out;
  const auto [lo_it, hi_it] = std::minmax_element(x.begin(), x.end());
  const double lo = *lo_it, hi = *hi_it, range = hi - lo;
  if (range == 0) {
    for (std::size_t b = 0; b < buckets; ++b) out[3 * b] = out[3 * b + 1] = lo;
    out[3 * (buckets - 1) + 2] = double(x.size());
    return out;
  }
  const double width = range / double(buckets);
  for (double v : x) {
    const double f = std::floor((v - lo) / width);
    const std::size_t b = std::min(buckets - 1, std::size_t(std::max(0.0, f)));
    out[3 * b + 2] += 1;
  }
  for (std::size_t b = 0; b < buckets; ++b) {  // linspace(lo, hi, buckets + 1), the last edge exactly hi
    out[3 * b] = lo + double(b) * width;
    out[3 * b + 1] = b + 1 == buckets ? hi : lo + double(b + 1) * width;
  }
  return out;
}

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
  SummaryWriter(const std::string& logdir, int max_queue = 10, int flush_millis = 120000, const std::string& filename_suffix = ".v2")
      : max_queue_(std::size_t(std::max(1, max_queue))), flush_millis_(flush_millis) {
    std::error_code ec;
    std::filesystem::create_directories(logdir, ec);
    if (ec) throw io_error("ctflow::summary: cannot create " + logdir + ": " + ec.message());
    static std::atomic<int> counter{0};
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, "%010lld", static_cast<long long>(ctflow::detail::wall_seconds()));
    path_ = logdir + "/events.out.tfevents." + stamp + "." + ctflow::detail::host_name() + "." + std::to_string(::getpid()) + "." + std::to_string(counter++) +
            filename_suffix;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw io_error("ctflow::summary: cannot create " + path_ + ": " + std::strerror(errno));
    std::string e;
    detail::pb::writer w{e};
    w.float64(1, ctflow::detail::wall_seconds());
    w.bytes(3, "brain.Event:2");
    std::lock_guard lk(m_);
    queue_.push_back(std::move(e));
    write_queue();
  }
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;
  /// @brief Closes the file; an error here is reported on stderr (a destructor cannot throw).
  ~SummaryWriter() {
    if (detail::default_writer == this) detail::default_writer = nullptr;
    try {
      close();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
  }

  /// @brief The event file's path.
  const std::string& path() const { return path_; }

  /// @brief tf.summary.scalar: a float32 scalar.
  void scalar(std::string_view name, double value, std::int64_t step, std::string_view description = {}) {
    const float f = float(value);
    detail::tensor_proto t{detail::dt_float, {}, std::string(reinterpret_cast<const char*>(&f), 4), {}};
    add(detail::summary_event(ctflow::detail::wall_seconds(), step, name, "scalars", detail::data_class_scalar, description, t));
  }
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
  void text(std::string_view name, std::string_view data, std::int64_t step, std::string_view description = {}) {
    detail::tensor_proto p{detail::dt_string, {}, {}, {std::string(data)}};
    add(detail::summary_event(ctflow::detail::wall_seconds(), step, name, "text", detail::data_class_tensor, description, p));
  }

  /// @brief Writes the queued events to the file.
  void flush() {
    std::lock_guard lk(m_);
    write_queue();
  }
  /// @brief Flushes, fsyncs and closes the file; later summaries are errors.
  void close() {
    std::lock_guard lk(m_);
    if (fd_ < 0) return;
    write_queue();
    const int fd = std::exchange(fd_, -1);
    if (::fsync(fd) != 0 || ::close(fd) != 0) throw io_error("ctflow::summary: closing " + path_ + " failed: " + std::strerror(errno));
  }

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
  void add(std::string event) {
    std::lock_guard lk(m_);
    if (fd_ < 0) throw value_error("ctflow::summary: " + path_ + " is closed");
    queue_.push_back(std::move(event));
    const auto now = std::chrono::steady_clock::now();
    if (queue_.size() >= max_queue_ || now - last_write_ >= std::chrono::milliseconds(flush_millis_)) write_queue();
  }
  /// Frames the queued events and writes them in one system call (caller holds m_).
  void write_queue() {
    if (queue_.empty() || fd_ < 0) return;
    framed_.clear();
    for (const auto& e : queue_)
      io::detail::write_record([&](const void* p, std::size_t n) { framed_.append(static_cast<const char*>(p), n); }, e);
    for (std::size_t done = 0; done < framed_.size();) {
      const ssize_t k = ::write(fd_, framed_.data() + done, framed_.size() - done);
      if (k < 0) {
        if (errno == EINTR) continue;
        throw io_error("ctflow::summary: write of " + path_ + " failed: " + std::strerror(errno));
      }
      done += std::size_t(k);
    }
    queue_.clear();
    last_write_ = std::chrono::steady_clock::now();
  }

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
inline std::int64_t step_or_default(std::optional<std::int64_t> step, const char* op) {
  if (step) return *step;
  if (default_step) return *default_step;
  throw value_error(std::string(op) + ": no step given and none set with summary::experimental::set_step");
}
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
inline bool text(std::string_view name, std::string_view data, std::optional<std::int64_t> step = std::nullopt) {
  if (!detail::default_writer) return false;
  detail::default_writer->text(name, data, detail::step_or_default(step, "ctflow::summary::text"));
  return true;
}
/// @brief Flushes the default writer (tf.summary.flush).
inline void flush() {
  if (detail::default_writer) detail::default_writer->flush();
}

}  // namespace ctflow::summary
