#pragma once
// How ctflow's functions are compiled and linked.
//
// CTFLOW_DECL declares a function of a compiled part (the readers and writers of ctflow::data
// and ctflow::io, ctflow's common float32 and float64 kernels). By default it is `inline`, and
// the headers define it: ctflow is header-only. A program built with
// CTFLOW_SEPARATE_COMPILATION (CMake: ctflow_add_compiled_library) declares them only and
// compiles their definitions once, in one source file that includes <ctflow/compiled/...>: its
// other translation units then neither parse nor compile them.
//
// CTFLOW_OUTLINE marks a function that every expression shares and that is compiled once and
// called: the bookkeeping of a fused loop's rows, the thread pool's dispatch, the block cache,
// the profiler's records. Inlined or cloned at each call site, such code costs compile time and
// code size in every translation unit for no speed (it runs once per loop, not per element).

#if defined(__clang__)
#define CTFLOW_OUTLINE __attribute__((noinline))
#else
#define CTFLOW_OUTLINE __attribute__((noinline, noclone))
#endif

#if defined(CTFLOW_SEPARATE_COMPILATION)
#define CTFLOW_DECL
#else
#define CTFLOW_DECL inline
#endif
