#pragma once
// A small thread pool with fixed work partitioning: task i of n always covers the same range, so
// results never depend on thread timing. Workers spin briefly before sleeping (waking a thread
// costs 3-50 us here).

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ctflow::backend::cpu {

/// A non-owning reference to a callable `void(int)`: dispatching a parallel loop allocates nothing.
class task_ref {
 public:
  template <class F> task_ref(const F& f) : obj_(&f), call_([](const void* o, int t) { (*static_cast<const F*>(o))(t); }) {}
  void operator()(int t) const { call_(obj_, t); }

 private:
  const void* obj_;
  void (*call_)(const void*, int);
};

class thread_pool {
 public:
  explicit thread_pool(int threads) { resize(threads); }
  ~thread_pool() { stop(); }
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  void resize(int threads) {
    stop();
    threads = std::max(threads, 1);
    quit_ = false;
    tasks_ = 0;
    // New workers wait for the next generation, never for a call that has already returned.
    const unsigned now = generation_.load(std::memory_order_acquire);
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i, now] { work(i, now); });
  }

  /// Runs fn(t) for t in [0, tasks) with tasks <= size(); the caller runs task 0. Rethrows the
  /// first exception a task threw.
  void run(int tasks, task_ref fn) {
    tasks = std::min(tasks, size());
    if (tasks <= 1 || in_task_) { for (int t = 0; t < tasks; ++t) fn(t); return; }
    std::lock_guard call(call_mutex_);
    fn_ = &fn;
    tasks_ = tasks;
    error_ = nullptr;
    pending_.store(tasks - 1, std::memory_order_relaxed);
    {
      std::lock_guard lk(m_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    invoke(0);
    while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void invoke(int t) {
    in_task_ = true;
    try { (*fn_)(t); } catch (...) {
      std::lock_guard lk(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    in_task_ = false;
  }
  void work(int id, unsigned seen) {
    for (;;) {
      // Spin a little: most parallel loops follow each other closely.
      for (int spin = 0; spin < 20000 && generation_.load(std::memory_order_acquire) == seen && !quit_; ++spin)
        __builtin_ia32_pause();
      {
        std::unique_lock lk(m_);
        cv_.wait(lk, [&] { return quit_ || generation_.load(std::memory_order_acquire) != seen; });
        if (quit_) return;
        seen = generation_.load(std::memory_order_acquire);
      }
      if (id < tasks_) {
        invoke(id);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
      }
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
  std::mutex m_, call_mutex_, error_mutex_;
  std::condition_variable cv_;
  std::atomic<unsigned> generation_{0};
  std::atomic<int> pending_{0};
  const task_ref* fn_ = nullptr;
  int tasks_ = 0;
  bool quit_ = false;
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

/// Splits [0, n) into at most size() equal chunks (multiples of `align`), fewer when each
/// would hold less than `grain`; calls f(begin, end) for each.
template <class F> void parallel_for(std::size_t n, std::size_t grain, std::size_t align, F&& f) {
  if (n == 0) return;
  std::size_t chunks = std::min<std::size_t>(std::size_t(pool().size()), std::max<std::size_t>(1, n / std::max<std::size_t>(grain, 1)));
  if (chunks <= 1) { f(std::size_t(0), n); return; }
  std::size_t per = (n + chunks - 1) / chunks;
  per = (per + align - 1) / align * align;
  chunks = (n + per - 1) / per;
  pool().run(int(chunks), [&](int t) {
    const std::size_t b = std::size_t(t) * per, e = std::min(n, b + per);
    if (b < e) f(b, e);
  });
}

}  // namespace ctflow::backend::cpu
