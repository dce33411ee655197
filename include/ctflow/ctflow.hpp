#pragma once
/// @file
/// @brief ctflow: TensorFlow 2 for C++ as compile-time expression templates. Include this one
/// header for everything.

// errors.hpp first: a compile error names it directly, not through a chain of includes.
#include <ctflow/core/errors.hpp>

#include <ctflow/autodiff/grad.hpp>
#include <ctflow/autodiff/recording.hpp>
#include <ctflow/backend/cpu/cpu.hpp>
#include <ctflow/backend/reference/reference.hpp>
#include <ctflow/config.hpp>
#include <ctflow/core/concepts.hpp>
#include <ctflow/core/dtype.hpp>
#include <ctflow/core/errors.hpp>
#include <ctflow/core/shape.hpp>
#include <ctflow/core/tensor.hpp>
#include <ctflow/core/variable.hpp>
#include <ctflow/ops/array.hpp>
#include <ctflow/ops/debugging.hpp>
#include <ctflow/ops/image.hpp>
#include <ctflow/ops/linalg.hpp>
#include <ctflow/ops/math.hpp>
#include <ctflow/ops/nn/conv.hpp>
#include <ctflow/ops/nn/depthwise.hpp>
#include <ctflow/ops/nn/layout.hpp>
#include <ctflow/ops/nn/losses.hpp>
#include <ctflow/ops/nn/normalization.hpp>
#include <ctflow/ops/nn/pool.hpp>
#include <ctflow/ops/random.hpp>
#include <ctflow/ops/reduction.hpp>

// The backends' compiled kernel instances (float32 and float64), which <ctflow/compiled/core.hpp>
// compiles: this umbrella, which includes the backends, names their file; the compiled part
// names no backend.
#define CTFLOW_BACKEND_INSTANCES <ctflow/backend/cpu/impl/instances.ipp>
