#pragma once
/// @file
/// @brief The cuda device (under way): include this header to compute on an NVIDIA GPU with
/// `Tensor<T, S, cuda>`. Element-wise expressions, views and reductions run as kernels generated
/// from the expression's type and compiled by NVRTC (kept in memory and, with
/// `CTFLOW_KERNEL_CACHE`, on disk); device memory comes from a caching allocator; `to<cuda>(x)`
/// and `to<cpu>(y)` copy across. The driver is loaded on first use: a program built with this
/// header runs its CPU work where there is no GPU, and using `cuda` there is a device_error.
/// `ctflow::config` lists the GPUs, chooses the one the device runs on, and sets its memory
/// limit and growth (config.hpp).

#include <ctflow/backend/cuda/allocator.hpp>
#include <ctflow/backend/cuda/codegen.hpp>
#include <ctflow/backend/cuda/config.hpp>
#include <ctflow/backend/cuda/driver.hpp>
#include <ctflow/backend/cuda/executor.hpp>
#include <ctflow/backend/cuda/kernel_cache.hpp>
#include <ctflow/backend/cuda/nvrtc.hpp>
#include <ctflow/backend/cuda/runtime.hpp>
