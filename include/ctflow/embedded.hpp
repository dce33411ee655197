#pragma once
/// @file
/// @brief Networks compiled into the program for inference, with no heap, no exceptions, no
/// RTTI, no threads and no file system (embedded::Sequential, embedded::Model and their layers; see
/// embedded/network.hpp). A program includes this and the backend of the device it runs on
/// (`<ctflow/backend/reference/reference.hpp>`: plain loops, for any target); a header that
/// keras::export_header wrote includes both.

#include <ctflow/core/errors.hpp>

#include <ctflow/embedded/layers/conv2d.hpp>
#include <ctflow/embedded/layers/dense.hpp>
#include <ctflow/embedded/layers/elementwise.hpp>
#include <ctflow/embedded/layers/merge.hpp>
#include <ctflow/embedded/layers/pooling.hpp>
#include <ctflow/embedded/layers/quantized.hpp>
#include <ctflow/embedded/layers/recurrent.hpp>
#include <ctflow/embedded/layers/reshaping.hpp>
#include <ctflow/embedded/network.hpp>
