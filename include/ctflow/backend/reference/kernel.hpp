#pragma once
// How the reference device computes an op: kernel<Op>, a specialisation per op descriptor
// (kernels/<family>.hpp). It derives from the descriptor, is built from it (`kernel<Op>{op}`) and
// has `run(out, operands...)` (an op that saves a by-product for its gradient also has
// `run(out, saved, operands...)`); operands come contiguous and row-major.
#include <ctflow/expr/computed.hpp>
#include <ctflow/expr/strided.hpp>
namespace ctflow::backend::reference {
template <class Op> struct kernel;
/// An op that runs itself (expr/computed.hpp's `runs_itself`) is its own kernel.
template <class Op> requires expr::runs_itself<Op> struct kernel<Op> : Op {};
}  // namespace ctflow::backend::reference
