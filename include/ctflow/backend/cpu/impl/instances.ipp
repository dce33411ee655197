#pragma once
// The CPU backend's part of ctflow's compiled core (compiled/core.hpp includes it, as ctflow.hpp's
// CTFLOW_BACKEND_INSTANCES): the float32 and float64 instances of the CPU kernels' entry points,
// which their headers declare `extern template` in a program built with
// CTFLOW_SEPARATE_COMPILATION.

#include <ctflow/backend/cpu/cpu.hpp>

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
