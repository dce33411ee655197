#pragma once
// Definitions of io/summary.hpp (ctflow::io's compiled part; see detail/linkage.hpp).

#include <ctflow/io/summary.hpp>

namespace ctflow::summary::detail {

CTFLOW_DECL void tensor_proto::encode(pb::writer& w) const {
  w.uint64(1, dtype);
  w.message(2, [&](pb::writer& s) {
    for (auto d : shape) s.message(2, [&](pb::writer& dim) { if (d) dim.uint64(1, d); });
  });
  if (!content.empty()) w.bytes(4, content);
  for (const auto& s : strings) w.bytes(8, s);
}

CTFLOW_DECL std::string summary_event(double wall_time, std::int64_t step, std::string_view tag, std::string_view plugin,
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

CTFLOW_DECL std::vector<double> histogram_buckets(const std::vector<double>& x, std::size_t buckets) {
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

}  // namespace ctflow::summary::detail

namespace ctflow::summary {

CTFLOW_DECL SummaryWriter::SummaryWriter(const std::string& logdir, int max_queue, int flush_millis, const std::string& filename_suffix)
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

CTFLOW_DECL SummaryWriter::~SummaryWriter() {
  if (detail::default_writer == this) detail::default_writer = nullptr;
  try {
    close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
}

CTFLOW_DECL void SummaryWriter::scalar(std::string_view name, double value, std::int64_t step, std::string_view description) {
  const float f = float(value);
  detail::tensor_proto t{detail::dt_float, {}, std::string(reinterpret_cast<const char*>(&f), 4), {}};
  add(detail::summary_event(ctflow::detail::wall_seconds(), step, name, "scalars", detail::data_class_scalar, description, t));
}

CTFLOW_DECL void SummaryWriter::text(std::string_view name, std::string_view data, std::int64_t step, std::string_view description) {
  detail::tensor_proto p{detail::dt_string, {}, {}, {std::string(data)}};
  add(detail::summary_event(ctflow::detail::wall_seconds(), step, name, "text", detail::data_class_tensor, description, p));
}

CTFLOW_DECL void SummaryWriter::flush() {
  std::lock_guard lk(m_);
  write_queue();
}

CTFLOW_DECL void SummaryWriter::close() {
  std::lock_guard lk(m_);
  if (fd_ < 0) return;
  write_queue();
  const int fd = std::exchange(fd_, -1);
  if (::fsync(fd) != 0 || ::close(fd) != 0) throw io_error("ctflow::summary: closing " + path_ + " failed: " + std::strerror(errno));
}

CTFLOW_DECL void SummaryWriter::add(std::string event) {
  std::lock_guard lk(m_);
  if (fd_ < 0) throw value_error("ctflow::summary: " + path_ + " is closed");
  queue_.push_back(std::move(event));
  const auto now = std::chrono::steady_clock::now();
  if (queue_.size() >= max_queue_ || now - last_write_ >= std::chrono::milliseconds(flush_millis_)) write_queue();
}

CTFLOW_DECL void SummaryWriter::write_queue() {
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

}  // namespace ctflow::summary

namespace ctflow::summary::detail {

CTFLOW_DECL std::int64_t step_or_default(std::optional<std::int64_t> step, const char* op) {
  if (step) return *step;
  if (default_step) return *default_step;
  throw value_error(std::string(op) + ": no step given and none set with summary::experimental::set_step");
}

}  // namespace ctflow::summary::detail

namespace ctflow::summary {

CTFLOW_DECL bool text(std::string_view name, std::string_view data, std::optional<std::int64_t> step) {
  if (!detail::default_writer) return false;
  detail::default_writer->text(name, data, detail::step_or_default(step, "ctflow::summary::text"));
  return true;
}

CTFLOW_DECL void flush() {
  if (detail::default_writer) detail::default_writer->flush();
}

}  // namespace ctflow::summary
