#pragma once
// What a program that runs an exported network needs of its target, written once per kind of
// target: hosted.cpp (Linux, x86-64 or aarch64) and cortex_m/startup.cpp (QEMU's MPS2 boards,
// bare metal). Text goes out unformatted (no stdio: its buffers would come from the heap).
#include <cstddef>

namespace target {
void write(const char* text);
inline void write_number(unsigned long long v) {
  char text[24];
  int n = 23;
  text[n] = 0;
  do { text[--n] = char('0' + v % 10); v /= 10; } while (v);
  write(text + n);
}
/// The heap allocations made so far (on the Cortex-M every one is refused).
unsigned long heap_allocations();
/// The deepest the stack has been, in bytes (0 where it is not measured).
std::size_t peak_stack();
/// The program's flash (code, constants and the data's initial values) and its static RAM (data
/// and bss, the stack aside), on a microcontroller; 0 elsewhere.
std::size_t flash_bytes();
std::size_t static_ram_bytes();
/// A clock of the target's own (the Cortex-M's SysTick) and its rate; 0 where there is none.
unsigned long long ticks();
unsigned long long tick_hz();
}  // namespace target
