#pragma once
/// @file
/// @brief The CPU device: its evaluators and executor, the math layer lowered to xsimd, the
/// thread pool, and a kernel for every op (kernels/<family>.hpp).

#include <ctflow/backend/cpu/evaluator.hpp>
#include <ctflow/backend/cpu/kernels/array.hpp>
#include <ctflow/backend/cpu/kernels/conv.hpp>
#include <ctflow/backend/cpu/kernels/depthwise.hpp>
#include <ctflow/backend/cpu/kernels/image.hpp>
#include <ctflow/backend/cpu/kernels/int8.hpp>
#include <ctflow/backend/cpu/kernels/linalg.hpp>
#include <ctflow/backend/cpu/kernels/losses.hpp>
#include <ctflow/backend/cpu/kernels/normalization.hpp>
#include <ctflow/backend/cpu/kernels/pool.hpp>
#include <ctflow/backend/cpu/kernels/reduction.hpp>
#include <ctflow/backend/cpu/math.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>
