// Replaces the global operator new of a test executable with one that counts calls, for tests
// asserting that warm code allocates nothing. Include it in exactly one translation unit.
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>

namespace counting_new {
inline std::atomic<std::size_t> calls{0};
}  // namespace counting_new

// All out of line: inlined, GCC 12 sees malloc's pointers reach operator delete, or free() take
// operator new's, and warns (-Wmismatched-new-delete), though they pair correctly.
[[gnu::noinline]] void* operator new(std::size_t n) {
  counting_new::calls.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
