#pragma once
/// @file
/// @brief ctflow's data pipeline and file formats (tf.data and tf.io): Dataset and its
/// transformations, IDX / CSV / TFRecord readers, tf.train.Example, PNG and JPEG codecs, and
/// the MNIST-format dataset loaders. Link the CMake target ctflow::data (zlib, libpng, libjpeg).

#include "data/csv.hpp"
#include "data/dataset.hpp"
#include "data/example.hpp"
#include "data/idx.hpp"
#include "data/image.hpp"
#include "data/tfrecord.hpp"
#include "ops/image.hpp"
