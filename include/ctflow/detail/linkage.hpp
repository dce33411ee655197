#pragma once
// CTFLOW_OUTLINE marks a function that every expression shares and that is compiled once and
// called: the bookkeeping of a fused loop's rows, the thread pool's dispatch, the block cache,
// the profiler's records. Inlined or cloned at each call site, such code costs compile time and
// code size in every translation unit for no speed (it runs once per loop, not per element).

#if defined(__clang__)
#define CTFLOW_OUTLINE __attribute__((noinline))
#else
#define CTFLOW_OUTLINE __attribute__((noinline, noclone))
#endif
