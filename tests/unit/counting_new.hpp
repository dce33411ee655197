// Replaces the global operator new of a test executable with one that counts calls, for tests
// asserting that warm code allocates nothing. Include it in exactly one translation unit.
// Every form is replaced (plain, nothrow, aligned and aligned nothrow, single and array, and every
// operator delete), all on malloc or aligned_alloc and free, so that no allocation made by one
// implementation is released by the other (AddressSanitizer reports that as a mismatch).
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>

namespace counting_new {
inline std::atomic<std::size_t> calls{0};

// A counted allocation of n bytes aligned to `align` (0: malloc's alignment); null on failure.
inline void* allocate(std::size_t n, std::size_t align) noexcept {
  calls.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  if (align == 0) return std::malloc(n);
  return std::aligned_alloc(align, (n + align - 1) / align * align);  // a multiple of the alignment
}
inline void* allocate_or_throw(std::size_t n, std::size_t align) {
  if (void* p = allocate(n, align)) return p;
  throw std::bad_alloc();
}
}  // namespace counting_new

// All out of line: inlined, GCC 12 sees malloc's pointers reach operator delete, or free() take
// operator new's, and warns (-Wmismatched-new-delete), though they pair correctly.
[[gnu::noinline]] void* operator new(std::size_t n) { return counting_new::allocate_or_throw(n, 0); }
[[gnu::noinline]] void* operator new[](std::size_t n) { return counting_new::allocate_or_throw(n, 0); }
[[gnu::noinline]] void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counting_new::allocate(n, 0); }
[[gnu::noinline]] void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counting_new::allocate(n, 0); }
[[gnu::noinline]] void* operator new(std::size_t n, std::align_val_t a) {
  return counting_new::allocate_or_throw(n, static_cast<std::size_t>(a));
}
[[gnu::noinline]] void* operator new[](std::size_t n, std::align_val_t a) {
  return counting_new::allocate_or_throw(n, static_cast<std::size_t>(a));
}
[[gnu::noinline]] void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counting_new::allocate(n, static_cast<std::size_t>(a));
}
[[gnu::noinline]] void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counting_new::allocate(n, static_cast<std::size_t>(a));
}

[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
