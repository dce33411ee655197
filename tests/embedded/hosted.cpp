// The target of a program that runs an exported network on Linux (x86-64, or aarch64 under
// qemu-aarch64): text to stdout with write(2), and every heap allocation counted: the C library's
// allocators are wrapped (linked statically with -Wl,--wrap=malloc,..., so that operator new's
// calls to malloc are wrapped too).
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "target.hpp"

namespace {
unsigned long allocations = 0;
}  // namespace

extern "C" {
void* __real_malloc(std::size_t);
void* __real_calloc(std::size_t, std::size_t);
void* __real_realloc(void*, std::size_t);
void* __real_aligned_alloc(std::size_t, std::size_t);
int __real_posix_memalign(void**, std::size_t, std::size_t);
void* __wrap_malloc(std::size_t n) { ++allocations; return __real_malloc(n); }
void* __wrap_calloc(std::size_t n, std::size_t s) { ++allocations; return __real_calloc(n, s); }
void* __wrap_realloc(void* p, std::size_t n) { ++allocations; return __real_realloc(p, n); }
void* __wrap_aligned_alloc(std::size_t a, std::size_t n) { ++allocations; return __real_aligned_alloc(a, n); }
int __wrap_posix_memalign(void** p, std::size_t a, std::size_t n) { ++allocations; return __real_posix_memalign(p, a, n); }
}

namespace target {

void write(const char* text) {
  for (std::size_t n = std::strlen(text); n > 0;) {
    const ssize_t w = ::write(1, text, n);
    if (w <= 0) return;
    text += w;
    n -= std::size_t(w);
  }
}

unsigned long heap_allocations() { return allocations; }
std::size_t peak_stack() { return 0; }
std::size_t flash_bytes() { return 0; }
std::size_t static_ram_bytes() { return 0; }
unsigned long long ticks() { return 0; }
unsigned long long tick_hz() { return 0; }

}  // namespace target
