#pragma once
// What ctflow needs of the platform that not every target has, for the targets that lack it (a
// microcontroller's bare-metal C library has no threads, no system calls, no mapped memory): a
// mutex where there are threads (elsewhere a lock with nothing to exclude), the id of the
// calling thread, and whether the system gives huge pages.

#include <cstdint>
#include <mutex>

#if __has_include(<sys/syscall.h>) && __has_include(<unistd.h>)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if __has_include(<sys/mman.h>)
#include <sys/mman.h>
#endif

namespace ctflow::detail {

#if defined(_GLIBCXX_HAS_GTHREADS) || defined(_LIBCPP_HAS_THREAD_API_PTHREAD) || defined(_WIN32)
using mutex = std::mutex;
inline constexpr bool has_threads = true;
#else
/// A target without threads: nothing to exclude.
struct mutex {
  void lock() {}
  void unlock() {}
  bool try_lock() { return true; }
};
inline constexpr bool has_threads = false;
#endif

/// The calling thread's id as the system numbers it (Linux's tid), 0 where there is none.
inline std::int64_t thread_id() {
#if defined(SYS_gettid)
  static thread_local const std::int64_t id = std::int64_t(::syscall(SYS_gettid));
  return id;
#else
  return 0;
#endif
}

/// Asks the system for transparent huge pages over [p, p + bytes), where it gives them.
inline void advise_huge_pages([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes) {
#ifdef MADV_HUGEPAGE
  ::madvise(p, bytes, MADV_HUGEPAGE);
#endif
}

}  // namespace ctflow::detail
