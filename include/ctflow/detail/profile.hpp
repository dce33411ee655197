#pragma once
// What the evaluator reports about each node it runs, when someone listens: the profiler's event
// record and the check-numerics switch. Both cost one relaxed atomic load per node when off.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <ctflow/detail/platform.hpp>

namespace ctflow::detail::profile {

enum : unsigned { profiling = 1, checking_numerics = 2 };

/// Whether the target can have observers: a bare-metal one (no threads) has neither the
/// profiler's clock nor a file to write its trace to, and its programs keep none of this code.
inline constexpr bool observable = has_threads;

/// Which observers are on (bits above).
inline std::atomic<unsigned> observers{0};
inline bool on() { return observable && observers.load(std::memory_order_relaxed) != 0; }
inline bool on(unsigned what) { return observable && (observers.load(std::memory_order_relaxed) & what) != 0; }

/// One evaluated node (or a user annotation: category "trace").
struct event {
  std::string name, category, shapes, device;
  std::int64_t begin_ns = 0, duration_ns = 0;
  std::uint64_t bytes = 0;
  std::int64_t tid = 0;
};

struct recorder {
  detail::mutex m;
  std::vector<event> events;
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
};
inline recorder& record_sink() {
  static recorder r;
  return r;
}

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - record_sink().origin).count();
}
inline void record(event e) {
  e.tid = detail::thread_id();
  recorder& r = record_sink();
  std::lock_guard lk(r.m);
  r.events.push_back(std::move(e));
}

}  // namespace ctflow::detail::profile
