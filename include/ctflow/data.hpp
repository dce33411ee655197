#pragma once
/// @file
/// @brief ctflow's data pipeline and file formats (tf.data and tf.io): Dataset and its
/// transformations, IDX / CSV / TFRecord readers, tf.train.Example, PNG and JPEG codecs, and
/// the MNIST-format dataset loaders. Link the CMake target ctflow::data (zlib, libpng, libjpeg).

#include <ctflow/data/csv.hpp>
#include <ctflow/data/dataset.hpp>
#include <ctflow/data/example.hpp>
#include <ctflow/data/idx.hpp>
#include <ctflow/data/image.hpp>
#include <ctflow/data/tfrecord.hpp>
#include <ctflow/backend/cpu/cpu.hpp>
#include <ctflow/ops/image.hpp>
