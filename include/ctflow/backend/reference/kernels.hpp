#pragma once
// Every reference kernel: kernel<Op> for each op descriptor a boundary node can hold.

#include <ctflow/backend/reference/kernels/array.hpp>
#include <ctflow/backend/reference/kernels/conv.hpp>
#include <ctflow/backend/reference/kernels/image.hpp>
#include <ctflow/backend/reference/kernels/linalg.hpp>
#include <ctflow/backend/reference/kernels/losses.hpp>
#include <ctflow/backend/reference/kernels/normalization.hpp>
#include <ctflow/backend/reference/kernels/pool.hpp>
#include <ctflow/backend/reference/kernels/reduction.hpp>
