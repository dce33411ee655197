#pragma once
// Definitions of io/trace.hpp (ctflow::io's compiled part; see detail/linkage.hpp).

#include <nlohmann/json.hpp>

#include <ctflow/io/trace.hpp>

namespace ctflow::profiler {

CTFLOW_DECL std::vector<OpStats> ProfileResult::op_stats() const {
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
  // The longest first, ties by name (std::sort: libstdc++ 12's std::stable_sort draws clang 19's
  // deprecation warning for get_temporary_buffer into the caller's unit).
  std::sort(v.begin(), v.end(), [](const OpStats& a, const OpStats& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return v;
}

CTFLOW_DECL std::string ProfileResult::summary(std::size_t top) const {
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

CTFLOW_DECL void start(const std::string& logdir) {
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

CTFLOW_DECL std::string chrome_trace(const std::vector<ctflow::detail::profile::event>& events) {
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

CTFLOW_DECL ProfileResult stop() {
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

CTFLOW_DECL Trace::~Trace() {
  if (!detail::profile::on(detail::profile::profiling)) return;
  const std::int64_t end = detail::profile::now_ns();
  try {
    detail::profile::record({name_, "trace", step_ ? std::to_string(*step_) : std::string(), "", begin_, end - begin_, 0, 0});
  } catch (...) {  // out of memory while recording: the span is dropped, the program goes on
  }
}

}  // namespace ctflow::profiler
