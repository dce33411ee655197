#pragma once
/// @brief The profiler (tf.profiler.experimental): between `profiler::start(logdir)` and
/// `profiler::stop()` every node the evaluator runs is recorded (op, shapes, device, duration,
/// bytes moved), with `profiler::Trace` scopes marking steps or phases. stop() writes Chrome trace
/// JSON (open it in Perfetto or chrome://tracing) to
/// `<logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json` and returns the events
/// with a table of the top ops by total time:
///
///     profiler::start("logs");
///     for (int step = 0; step < 10; ++step) {
///       profiler::Trace t("train", step);
///       train_step();
///     }
///     std::cout << profiler::stop().summary(10);

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctflow/core/errors.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/detail/profile.hpp>

namespace ctflow::profiler {

namespace detail {
namespace profile = ctflow::detail::profile;
inline std::string& logdir() {
  static std::string d;
  return d;
}
}  // namespace detail

/// @brief Totals of one op over a profile.
struct OpStats {
  std::string name;
  std::uint64_t calls = 0;
  std::int64_t total_ns = 0;
  std::uint64_t bytes = 0;
};

/// @brief What stop() returns: the trace file, the recorded events, and per-op totals.
struct ProfileResult {
  std::string trace_file;
  std::vector<ctflow::detail::profile::event> events;

  /// @brief Per-op totals (annotations excluded), by total time, largest first.
  std::vector<OpStats> op_stats() const {
    std::map<std::string, OpStats> by;
    for (const auto& e : events) {
      if (e.category != "op") continue;
      auto& s = by[e.name];
      s.name = e.name;
      ++s.calls;
      s.total_ns += e.duration_ns;
      s.bytes += e.bytes;
    }
    std::vector<OpStats> v;
    for (auto& [k, s] : by) v.push_back(s);
    std::stable_sort(v.begin(), v.end(), [](const OpStats& a, const OpStats& b) { return a.total_ns > b.total_ns; });
    return v;
  }

  /// @brief A table of the `top` ops by total time: calls, total and mean time, share, GB/s.
  std::string summary(std::size_t top = 10) const {
    const auto stats = op_stats();
    std::int64_t all = 0;
    for (const auto& s : stats) all += s.total_ns;
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line, "%-40s %8s %12s %12s %7s %9s\n", "op", "calls", "total ms", "mean us", "share", "GB/s");
    out += line;
    for (std::size_t i = 0; i < stats.size() && i < top; ++i) {
      const auto& s = stats[i];
      const double ms = double(s.total_ns) * 1e-6;
      std::snprintf(line, sizeof line, "%-40.40s %8llu %12.3f %12.2f %6.1f%% %9.2f\n", s.name.c_str(), static_cast<unsigned long long>(s.calls), ms,
                    double(s.total_ns) * 1e-3 / double(s.calls), all ? 100.0 * double(s.total_ns) / double(all) : 0.0,
                    s.total_ns ? double(s.bytes) / double(s.total_ns) : 0.0);
      out += line;
    }
    if (stats.size() > top) out += "(" + std::to_string(stats.size() - top) + " more ops)\n";
    return out;
  }
};

/// @brief Starts recording (tf.profiler.experimental.start). One profile at a time.
inline void start(const std::string& logdir) {
  if (detail::profile::on(detail::profile::profiling)) throw value_error("ctflow::profiler::start: a profile is already running");
  auto& sink = detail::profile::record_sink();
  {
    std::lock_guard lk(sink.m);
    sink.events.clear();
    sink.origin = std::chrono::steady_clock::now();
  }
  detail::logdir() = logdir;
  detail::profile::observers.fetch_or(detail::profile::profiling);
}

/// @brief The Chrome trace JSON of events ("X" events in microseconds; args: shapes, device, bytes).
inline std::string chrome_trace(const std::vector<ctflow::detail::profile::event>& events) {
  nlohmann::json list = nlohmann::json::array();
  list.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", ::getpid()}, {"args", {{"name", "ctflow"}}}});
  for (const auto& e : events) {
    nlohmann::json j = {{"name", e.name}, {"cat", e.category}, {"ph", "X"}, {"pid", ::getpid()}, {"tid", e.tid},
                        {"ts", double(e.begin_ns) * 1e-3}, {"dur", double(e.duration_ns) * 1e-3}};
    if (e.category == "op") j["args"] = {{"shapes", e.shapes}, {"device", e.device}, {"bytes", e.bytes}};
    else if (!e.shapes.empty()) j["args"] = {{"step_num", e.shapes}};
    list.push_back(std::move(j));
  }
  return nlohmann::json({{"traceEvents", list}, {"displayTimeUnit", "ns"}}).dump();
}

/// @brief Stops recording, writes the trace file (atomically) and returns the profile.
inline ProfileResult stop() {
  if (!detail::profile::on(detail::profile::profiling)) throw value_error("ctflow::profiler::stop: no profile is running");
  detail::profile::observers.fetch_and(~unsigned(detail::profile::profiling));
  ProfileResult r;
  {
    auto& sink = detail::profile::record_sink();
    std::lock_guard lk(sink.m);
    r.events.swap(sink.events);
  }
  std::sort(r.events.begin(), r.events.end(), [](const auto& a, const auto& b) { return a.begin_ns < b.begin_ns; });
  char stamp[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  std::strftime(stamp, sizeof stamp, "%Y_%m_%d_%H_%M_%S", &tm);
  const std::string dir = detail::logdir() + "/plugins/profile/" + stamp;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw io_error("ctflow::profiler::stop: cannot create " + dir + ": " + ec.message());
  r.trace_file = dir + "/" + ctflow::detail::host_name() + ".trace.json";
  const std::string text = chrome_trace(r.events);
  ctflow::detail::atomic_output out(r.trace_file, ctflow::detail::compression::none, "ctflow::profiler::stop");
  out.write(text.data(), text.size());
  out.commit();
  return r;
}

/// @brief A named span in the trace (tf.profiler.experimental.Trace), e.g. one training step.
class Trace {
 public:
  explicit Trace(std::string name, std::optional<std::int64_t> step_num = std::nullopt)
      : name_(std::move(name)), step_(step_num), begin_(detail::profile::now_ns()) {}
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;
  ~Trace() {
    if (!detail::profile::on(detail::profile::profiling)) return;
    const std::int64_t end = detail::profile::now_ns();
    try {
      detail::profile::record({name_, "trace", step_ ? std::to_string(*step_) : std::string(), "", begin_, end - begin_, 0, 0});
    } catch (...) {  // out of memory while recording: the span is dropped, the program goes on
    }
  }

 private:
  std::string name_;
  std::optional<std::int64_t> step_;
  std::int64_t begin_;
};

}  // namespace ctflow::profiler
