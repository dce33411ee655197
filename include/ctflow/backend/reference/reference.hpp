#pragma once
/// @file
/// @brief The reference device: plain serial loops, no threads, no SIMD, no cache; its
/// evaluators and executor (evaluator.hpp) and a kernel for every op (kernels/<family>.hpp).

#include <ctflow/backend/reference/evaluator.hpp>
#include <ctflow/backend/reference/kernels.hpp>
