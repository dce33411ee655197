#pragma once
/// @file
/// @brief ctflow: TensorFlow 2 for C++ as compile-time expression templates. Include this one
/// header for everything.

#include "autodiff/grad.hpp"
#include "config.hpp"
#include "core/concepts.hpp"
#include "core/dtype.hpp"
#include "core/errors.hpp"
#include "core/shape.hpp"
#include "core/tensor.hpp"
#include "core/variable.hpp"
#include "ops/array.hpp"
#include "ops/debugging.hpp"
#include "ops/image.hpp"
#include "ops/linalg.hpp"
#include "ops/math.hpp"
#include "ops/nn/conv.hpp"
#include "ops/nn/depthwise.hpp"
#include "ops/nn/layout.hpp"
#include "ops/nn/losses.hpp"
#include "ops/nn/normalization.hpp"
#include "ops/nn/pool.hpp"
#include "ops/random.hpp"
#include "ops/reduction.hpp"
