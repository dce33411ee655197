#pragma once
/// @file
/// @brief The compiled part of ctflow's core: include it in exactly one source file of a program
/// built with CTFLOW_SEPARATE_COMPILATION (CMake: `ctflow_add_compiled_library`; see
/// detail/linkage.hpp). The program's other translation units then neither parse nor compile
/// what it defines.

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#error "ctflow/compiled/core.hpp belongs to a program built with CTFLOW_SEPARATE_COMPILATION"
#endif

#include <ctflow/ctflow.hpp>

// The float32 and float64 instances of the CPU kernels' entry points (their headers declare them
// `extern template` in this mode).
namespace ctflow::backend::cpu::gemm {
CTFLOW_GEMM_INSTANCES(template, float)
CTFLOW_GEMM_INSTANCES(template, double)
}  // namespace ctflow::backend::cpu::gemm
namespace ctflow::backend::cpu::conv {
CTFLOW_CONV_INSTANCES(template, float)
CTFLOW_CONV_INSTANCES(template, double)
}  // namespace ctflow::backend::cpu::conv
namespace ctflow::backend::cpu::winograd {
CTFLOW_WINOGRAD_INSTANCES(template, float)
CTFLOW_WINOGRAD_INSTANCES(template, double)
}  // namespace ctflow::backend::cpu::winograd
namespace ctflow::backend::cpu {
CTFLOW_REDUCE_INSTANCES(template, float)
CTFLOW_REDUCE_INSTANCES(template, double)
CTFLOW_POOL_INSTANCES(template, float)
CTFLOW_POOL_INSTANCES(template, double)
}  // namespace ctflow::backend::cpu
