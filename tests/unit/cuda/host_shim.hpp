// The CUDA names generated kernels use, for host C++: the same source compiled with the host's
// compiler runs on the CPU, so the tests prove its index arithmetic, broadcasting, tails and
// reductions without a GPU. Included before the source (`-include`). Each kernel gets
// `<entry>_host(args, grid, block)`, which runs it and returns the status the kernel set: the
// grid's blocks one after the other, each block's threads as fibers (ucontext) taking turns, one
// turn from a __syncthreads to the next, so every thread reaches a barrier before any passes it;
// __shared__ memory is static, one copy the running block's threads share.
#include <math.h>
#include <string.h>
#include <ucontext.h>

struct ctflow_uint3 {
  unsigned x, y, z;
};
static ctflow_uint3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static

static inline unsigned __float_as_uint(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static inline float __uint_as_float(unsigned u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

namespace ctflow_shim {
struct fiber {
  ucontext_t context;
  char stack[1 << 16];
  bool done = false;
};
static ucontext_t scheduler;
static fiber* current;
static void (*body)(const void*);
static const void* arguments;

static void start() {
  body(arguments);
  current->done = true;  // returns to the scheduler (uc_link)
}
static void sync() { swapcontext(&current->context, &scheduler); }

static void run_grid(unsigned grid, unsigned block, void (*kernel)(const void*), const void* args) {
  gridDim = {grid, 1, 1};
  blockDim = {block, 1, 1};
  body = kernel;
  arguments = args;
  for (unsigned b = 0; b < grid; ++b) {
    blockIdx = {b, 0, 0};
    fiber* fibers = new fiber[block];  // (no standard header: each kernel builds in a blink)
    for (unsigned t = 0; t < block; ++t) {
      fiber& f = fibers[t];
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = f.stack;
      f.context.uc_stack.ss_size = sizeof f.stack;
      f.context.uc_link = &scheduler;
      makecontext(&f.context, start, 0);
    }
    for (bool running = true; running;) {
      running = false;
      for (unsigned t = 0; t < block; ++t) {
        if (fibers[t].done) continue;
        threadIdx = {t, 0, 0};
        current = &fibers[t];
        swapcontext(&scheduler, &fibers[t].context);
        running = true;
      }
    }
    delete[] fibers;
  }
}
}  // namespace ctflow_shim

#define __syncthreads() ctflow_shim::sync()

#define CTFLOW_ENTRY(kernel)                                                                      \
  extern "C" int kernel##_host(const void* args, unsigned grid, unsigned block) {                 \
    CTFLOW_STATUS = 0;                                                                            \
    ctflow_shim::run_grid(grid, block, [](const void* a) { kernel(*static_cast<const ctflow_args*>(a)); }, args); \
    return CTFLOW_STATUS;                                                                         \
  }
