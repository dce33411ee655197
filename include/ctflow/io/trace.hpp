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

#include <ctflow/core/errors.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/detail/linkage.hpp>
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
  std::vector<OpStats> op_stats() const;

  /// @brief A table of the `top` ops by total time: calls, total and mean time, share, GB/s.
  std::string summary(std::size_t top = 10) const;
};

/// @brief Starts recording (tf.profiler.experimental.start). One profile at a time.
CTFLOW_DECL void start(const std::string& logdir);

/// @brief The Chrome trace JSON of events ("X" events in microseconds; args: shapes, device, bytes).
CTFLOW_DECL std::string chrome_trace(const std::vector<ctflow::detail::profile::event>& events);

/// @brief Stops recording, writes the trace file (atomically) and returns the profile.
CTFLOW_DECL ProfileResult stop();

/// @brief A named span in the trace (tf.profiler.experimental.Trace), e.g. one training step.
class Trace {
 public:
  explicit Trace(std::string name, std::optional<std::int64_t> step_num = std::nullopt)
      : name_(std::move(name)), step_(step_num), begin_(detail::profile::now_ns()) {}
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;
  ~Trace();

 private:
  std::string name_;
  std::optional<std::int64_t> step_;
  std::int64_t begin_;
};

}  // namespace ctflow::profiler

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/io/impl/trace.ipp>
#endif
