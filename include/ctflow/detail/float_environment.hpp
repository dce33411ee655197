#pragma once
// The floating-point environment of TensorFlow's CPU kernels: denormal operands read as zero and
// denormal results flushed to zero (x86: MXCSR's DAZ and FTZ bits; aarch64: FPCR's FZ bit; 32-bit
// Arm: FPSCR's FZ bit), rounding to nearest. TensorFlow sets it around each op on the calling
// thread and for good in its thread pools (ScopedFlushDenormal, ScopedSetRound), so
// tf.exp(-103.0) is 0 there; ctflow's devices set it the same way. Beside TensorFlow's results,
// it spares x86 cores the microcode assist each denormal costs (tens of cycles an operation):
// gradients and optimizer slots that decay into denormals made a training epoch 10-20 % slower.

#include <cstdint>

#if defined(__x86_64__) || defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace ctflow::detail {

/// Sets TensorFlow's environment on this thread while it lives (restoring the caller's after); a
/// nested one, or one on a thread already set, changes nothing.
class kernel_float_environment {
 public:
  kernel_float_environment() : saved_(read()) {
    if (const state s = kernel_mode(saved_); s != saved_) {
      write(s);
      changed_ = true;
    }
  }
  ~kernel_float_environment() {
    if (changed_) write(saved_);
  }
  kernel_float_environment(const kernel_float_environment&) = delete;
  kernel_float_environment& operator=(const kernel_float_environment&) = delete;

  /// Sets it on this thread for good (a device's own worker threads).
  static void set_for_this_thread() { write(kernel_mode(read())); }

 private:
#if defined(__x86_64__) || defined(__SSE__)
  using state = unsigned;
  static state read() { return _mm_getcsr(); }
  static void write(state s) { _mm_setcsr(s); }
  static state kernel_mode(state s) { return (s & ~0x6000u) | 0x8040u; }  // rounding to nearest; FTZ and DAZ
#elif defined(__aarch64__)
  using state = std::uint64_t;
  static state read() {
    state s;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(s));
    return s;
  }
  static void write(state s) { __asm__ __volatile__("msr fpcr, %0" : : "r"(s)); }
  static state kernel_mode(state s) { return (s & ~(state(3) << 22)) | (state(1) << 24); }  // RMode nearest; FZ
#elif defined(__ARM_FP) && defined(__ARM_ARCH_ISA_THUMB)
  // 32-bit Arm with a floating-point unit (a Cortex-M4F or M7): FPSCR's FZ bit, RMode nearest.
  using state = std::uint32_t;
  static state read() {
    state s;
    __asm__ __volatile__("vmrs %0, fpscr" : "=r"(s));
    return s;
  }
  static void write(state s) { __asm__ __volatile__("vmsr fpscr, %0" : : "r"(s)); }
  static state kernel_mode(state s) { return (s & ~(state(3) << 22)) | (state(1) << 24); }
#else
  using state = int;  // a target without these controls keeps its IEEE default
  static state read() { return 0; }
  static void write(state) {}
  static state kernel_mode(state s) { return s; }
#endif
  state saved_;
  bool changed_ = false;
};

}  // namespace ctflow::detail
