#pragma once
// A small thread pool with fixed work partitioning: task i of n always covers the same range, so
// results never depend on thread timing. Workers spin briefly before sleeping (waking a thread
// costs 3-50 us here), and the caller takes any task a sleeping worker has not claimed yet.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include <ctflow/detail/buffer.hpp>
#include <ctflow/detail/float_environment.hpp>
#include <ctflow/detail/linkage.hpp>

namespace ctflow::backend::cpu {

/// A non-owning reference to a callable of signature R(A...): passing work to code compiled
/// once (the pool, the bookkeeping of loops) allocates nothing and instantiates nothing per callable.
template <class Sig> class function_ref;
template <class R, class... A> class function_ref<R(A...)> {
 public:
  function_ref() = default;
  template <class F> requires(!std::is_same_v<std::remove_cvref_t<F>, function_ref>)
  function_ref(const F& f) : obj_(&f), call_([](const void* o, A... a) -> R { return (*static_cast<const F*>(o))(a...); }) {}
  R operator()(A... a) const { return call_(obj_, a...); }

 private:
  const void* obj_ = nullptr;
  R (*call_)(const void*, A...) = nullptr;
};

/// A spinning thread's hint to the core that it waits (x86's pause, aarch64's yield).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

class thread_pool {
 public:
  explicit thread_pool(int threads) { resize(threads); }
  ~thread_pool() { stop(); }
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  void resize(int threads) {
    stop();
    threads = std::clamp(threads, 1, max_threads);
    quit_ = false;
    owner_ = std::vector<slot>(std::size_t(threads));
    // New workers wait for the next call, never for one that has already returned.
    const std::uint64_t now = call_.load(std::memory_order_acquire);
    for (int i = 1; i < threads; ++i)
      workers_.emplace_back([this, i, now] {
        ctflow::detail::kernel_float_environment::set_for_this_thread();  // TensorFlow's, as every evaluation's
        work(i, now);
      });
  }

  /// Runs fn(t) for t in [0, tasks) with tasks <= size(), and rethrows the first exception a
  /// task threw. Task t runs on thread t (the caller is thread 0) unless that thread is late:
  /// a thread that is done with its own task takes any task not started yet, so a worker still
  /// asleep delays nothing. Which thread runs task t may vary; what it computes does not.
  void run(int tasks, function_ref<void(int)> fn) {
    tasks = std::min(tasks, size());
    if (tasks <= 1 || in_task_) { for (int t = 0; t < tasks; ++t) fn(t); return; }
    std::lock_guard call(call_mutex_);
    fn_ = fn;
    error_ = nullptr;
    pending_.store(tasks, std::memory_order_relaxed);
    const std::uint64_t id = ((call_.load(std::memory_order_relaxed) >> 16) + 1) << 16 | std::uint64_t(tasks);
    {
      // Published under m_, so that a worker going to sleep either sees this call or is woken.
      std::lock_guard lk(m_);
      call_.store(id, std::memory_order_release);
    }
    cv_.notify_all();
    take(id, 0);
    for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin)
      if (spin < 1000) cpu_relax();
      else std::this_thread::yield();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static constexpr int max_threads = 1 << 15;
  /// The call that claimed a task: call ids only grow, so a claim never undoes a later one.
  struct alignas(64) slot {
    std::atomic<std::uint64_t> claimed{0};
  };

  /// Claims task t of call `id` (a call number in bits 16-63, its task count below).
  bool claim(std::uint64_t id, int t) {
    std::uint64_t was = owner_[std::size_t(t)].claimed.load(std::memory_order_relaxed);
    while (was < id)
      if (owner_[std::size_t(t)].claimed.compare_exchange_weak(was, id, std::memory_order_acq_rel, std::memory_order_relaxed)) return true;
    return false;
  }
  void execute(int t) {
    in_task_ = true;
    try { fn_(t); } catch (...) {
      std::lock_guard lk(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    in_task_ = false;
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
  /// Thread `self`'s share of call `id`: its own task, then any other not claimed yet. Every task
  /// of a call is claimed before it returns, so a late worker claims nothing of a call that is over.
  void take(std::uint64_t id, int self) {
    const int tasks = int(id & 0xFFFF);
    if (self >= tasks) return;
    if (claim(id, self)) execute(self);
    for (int t = 0; t < tasks; ++t)
      if (t != self && claim(id, t)) execute(t);
  }
  void work(int self, std::uint64_t seen) {
    const auto called = [&] { return call_.load(std::memory_order_acquire) != seen; };
    for (;;) {
      // Spin a little, without the mutex: most parallel loops follow each other closely.
      for (int spin = 0; spin < 20000 && !called() && !quit_.load(std::memory_order_relaxed); ++spin) cpu_relax();
      if (!called()) {
        std::unique_lock lk(m_);
        cv_.wait(lk, [&] { return quit_ || called(); });
      }
      if (quit_) return;
      seen = call_.load(std::memory_order_acquire);
      take(seen, self);
    }
  }
  void stop() {
    {
      std::lock_guard lk(m_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::vector<slot> owner_;
  std::mutex m_, call_mutex_, error_mutex_;
  std::condition_variable cv_;
  // A call's id and task in one cache line (a worker fetches both at once), the count of
  // unfinished tasks that the caller waits on in another.
  alignas(64) std::atomic<std::uint64_t> call_{0};
  function_ref<void(int)> fn_;
  alignas(64) std::atomic<int> pending_{0};
  std::atomic<bool> quit_{false};
  std::exception_ptr error_;
  static inline thread_local bool in_task_ = false;
};

inline int default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : int(n);
}

inline thread_pool& pool() {
  static thread_pool p(default_threads());
  return p;
}

/// The least work, in elements read or written, worth a task of its own: handing a task to another
/// thread costs a microsecond or more (tens when it sleeps), the time of about this much work.
/// Below it a loop stays on the calling thread, so small work never runs slower on more threads.
inline constexpr std::size_t task_work = std::size_t(1) << 16;

/// The grain of a loop whose items each touch `work` elements: task_work's worth of them.
constexpr std::size_t grain_for(std::size_t work) { return std::max<std::size_t>(1, task_work / std::max<std::size_t>(work, 1)); }

/// How parallel_for cuts [0, n): `count` ranges of `per` elements (the last may be shorter), at
/// most one per thread, none holding less than `grain` unless it is the only one, multiples of
/// `align`. Fixed by n, grain, align and the pool's size, not by how threads meet the ranges.
struct ranges {
  std::size_t count = 1, per = 0;
  /// The index of the range that starts at `begin`.
  std::size_t index(std::size_t begin) const { return per ? begin / per : 0; }
};
inline ranges split_ranges(std::size_t n, std::size_t grain, std::size_t align) {
  std::size_t chunks = std::min<std::size_t>(std::size_t(pool().size()), std::max<std::size_t>(1, n / std::max<std::size_t>(grain, 1)));
  if (chunks <= 1) return {1, n};
  std::size_t per = (n + chunks - 1) / chunks;
  per = (per + align - 1) / align * align;
  return {(n + per - 1) / per, per};
}

/// parallel_for's work, compiled once rather than for every loop body.
CTFLOW_OUTLINE inline void parallel_ranges(std::size_t n, std::size_t grain, std::size_t align, function_ref<void(std::size_t, std::size_t)> f) {
  if (n == 0) return;
  const ranges r = split_ranges(n, grain, align);
  if (r.count <= 1) { f(std::size_t(0), n); return; }
  pool().run(int(r.count), [&](int t) {
    const std::size_t b = std::size_t(t) * r.per, e = std::min(n, b + r.per);
    if (b < e) f(b, e);
  });
}

/// Splits [0, n) into at most size() equal chunks (multiples of `align`), fewer when each
/// would hold less than `grain`; calls f(begin, end) for each.
template <class F> void parallel_for(std::size_t n, std::size_t grain, std::size_t align, F&& f) {
  parallel_ranges(n, grain, align, function_ref<void(std::size_t, std::size_t)>(f));
}

/// parallel_for whose ranges each get `elems` elements of T of their own: f(begin, end, scratch).
/// The scratch of all ranges is one block taken before they run, so a call takes the same memory
/// however its ranges meet on threads (a block per range taken inside f would take one or two
/// blocks as the ranges happen to overlap, and a warm step could still find the cache short).
template <class T, class F> void parallel_for_scratch(std::size_t n, std::size_t grain, std::size_t align, std::size_t elems, F&& f) {
  if (n == 0) return;
  const ranges r = split_ranges(n, grain, align);
  // Each range's part starts on a cache line of its own.
  const std::size_t stride = (elems * sizeof(T) + ctflow::detail::alignment - 1) / ctflow::detail::alignment * ctflow::detail::alignment / sizeof(T);
  ctflow::detail::buffer<T> scratch(r.count * stride, false);
  parallel_for(n, grain, align, [&](std::size_t b, std::size_t e) { f(b, e, scratch.data() + r.index(b) * stride); });
}

}  // namespace ctflow::backend::cpu
