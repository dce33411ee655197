// A bare-metal start for QEMU's MPS2 Cortex-M boards, for programs that run an exported network:
// the vector table, a reset handler (the FPU enabled, bss zeroed, the stack painted so that its
// peak can be read, static constructors, main, the exit), output and exit through semihosting
// (QEMU's -semihosting), and the C library's system calls, where a heap allocation is counted.
#include <cstddef>
#include <cstdint>

#include "../target.hpp"

extern "C" {
extern std::uint32_t __bss_start, __bss_end, __stack_limit, __stack_top, __data_start, __data_end, __flash_end;
extern void (*__init_array_start[])();
extern void (*__init_array_end[])();
int main();
}

namespace target {

namespace {
constexpr std::uint32_t paint = 0x5ca1ab1e;
unsigned long heap_calls = 0;
volatile std::uint32_t systick_wraps = 0;

// SysTick's registers: control and status, reload value, current value.
volatile std::uint32_t& syst_csr = *reinterpret_cast<volatile std::uint32_t*>(0xE000E010);
volatile std::uint32_t& syst_rvr = *reinterpret_cast<volatile std::uint32_t*>(0xE000E014);
volatile std::uint32_t& syst_cvr = *reinterpret_cast<volatile std::uint32_t*>(0xE000E018);

int semihost(int op, const void* arg) {
  register int r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}
}  // namespace

void write(const char* text) { semihost(0x04, text); }  // SYS_WRITE0

[[noreturn]] void finish(bool ok) {
  // SYS_EXIT with ADP_Stopped_ApplicationExit (QEMU exits 0) or ADP_Stopped_RunTimeErrorUnknown (1).
  semihost(0x18, reinterpret_cast<const void*>(ok ? 0x20026 : 0x20023));
  for (;;) {}
}

unsigned long heap_allocations() { return heap_calls; }

unsigned long long ticks() {
  std::uint32_t wraps, value;
  do {
    wraps = systick_wraps;
    value = syst_cvr;
  } while (wraps != systick_wraps);
  return (static_cast<unsigned long long>(wraps) << 24) + (0xFFFFFFu - value);
}
unsigned long long tick_hz() { return 25000000; }  // the MPS2 boards' system clock

std::size_t peak_stack() {
  const std::uint32_t* p = &__stack_limit;
  while (p < &__stack_top && *p == paint) ++p;
  return std::size_t(reinterpret_cast<const char*>(&__stack_top) - reinterpret_cast<const char*>(p));
}

std::size_t flash_bytes() {
  return std::size_t(reinterpret_cast<const char*>(&__flash_end) - reinterpret_cast<const char*>(0)) +
         std::size_t(reinterpret_cast<const char*>(&__data_end) - reinterpret_cast<const char*>(&__data_start));
}
std::size_t static_ram_bytes() { return std::size_t(reinterpret_cast<const char*>(&__bss_end) - reinterpret_cast<const char*>(&__data_start)); }

}  // namespace target

extern "C" {

[[noreturn]] void reset_handler() {
  // CPACR: full access to the coprocessors CP10 and CP11 (the FPU), before any floating-point code.
  *reinterpret_cast<volatile std::uint32_t*>(0xE000ED88) |= 0xFu << 20;
  __asm__ volatile("dsb\n isb");
  for (std::uint32_t* p = &__bss_start; p < &__bss_end; ++p) *p = 0;
  std::uint32_t* sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  for (std::uint32_t* p = &__stack_limit; p < sp - 16; ++p) *p = target::paint;
  for (auto f = __init_array_start; f != __init_array_end; ++f) (*f)();
  // SysTick counting down from 2^24 - 1 at the processor clock, each wrap counted.
  target::syst_rvr = 0xFFFFFF;
  target::syst_cvr = 0;
  target::syst_csr = 7;
  while (target::syst_cvr == 0) {}  // the first reload
  target::finish(main() == 0);
}

void systick_handler() { target::systick_wraps = target::systick_wraps + 1; }

void fault_handler() {
  target::write("fault\n");
  target::finish(false);
}

__attribute__((section(".vectors"), used)) void (*const vectors[16])() = {
    reinterpret_cast<void (*)()>(&__stack_top), reset_handler, fault_handler, fault_handler, fault_handler, fault_handler, fault_handler,
    nullptr, nullptr, nullptr, nullptr, fault_handler, fault_handler, nullptr, fault_handler, systick_handler};

// The C library's system calls: no files, no heap (a call is counted and refused).
void* _sbrk(int) {
  ++target::heap_calls;
  return reinterpret_cast<void*>(-1);
}
int posix_memalign(void** p, std::size_t, std::size_t) {
  ++target::heap_calls;
  *p = nullptr;
  return 12;  // ENOMEM
}
int _write(int, const char* p, int n) {
  for (int i = 0; i < n; ++i) {
    const char c[2] = {p[i], 0};
    target::write(c);
  }
  return n;
}
[[noreturn]] void _exit(int code) { target::finish(code == 0); }
int _kill(int, int) { return -1; }
int _getpid() { return 1; }
int _close(int) { return -1; }
int _lseek(int, int, int) { return -1; }
int _read(int, char*, int) { return -1; }
int _fstat(int, void*) { return -1; }
int _isatty(int) { return 1; }
}
