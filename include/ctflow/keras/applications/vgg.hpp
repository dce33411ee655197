#pragma once
/// @file
/// @brief A VGG-style network for CIFAR-10's 32x32x3 images: three blocks of two 3x3 SAME ReLU
/// convolutions and a 2x2 max pooling (32, 64 and 128 filters), then Dense 128 (ReLU) and the
/// classes (softmax). 550,570 parameters for 10 classes, as Keras counts them.

#include <ctflow/keras/layers/conv2d.hpp>
#include <ctflow/keras/layers/dense.hpp>
#include <ctflow/keras/layers/flatten.hpp>
#include <ctflow/keras/layers/max_pooling2d.hpp>
#include <ctflow/keras/sequential.hpp>

namespace ctflow::keras::applications {

/// @brief The VGG-style CIFAR network for Classes classes, on device D.
template <std::size_t Classes = 10, class D = cpu>
using VGGCifar = Sequential<Input<float, Shape<32, 32, 3>, dyn, D>,                                                        //
                            layers::Conv2D<32, 3, layers::same, activations::relu>, layers::Conv2D<32, 3, layers::same, activations::relu>,
                            layers::MaxPooling2D<2>,                                                               //
                            layers::Conv2D<64, 3, layers::same, activations::relu>, layers::Conv2D<64, 3, layers::same, activations::relu>,
                            layers::MaxPooling2D<2>,                                                               //
                            layers::Conv2D<128, 3, layers::same, activations::relu>, layers::Conv2D<128, 3, layers::same, activations::relu>,
                            layers::MaxPooling2D<2>,                                                               //
                            layers::Flatten, layers::Dense<128, activations::relu>, layers::Dense<Classes, activations::softmax>>;

}  // namespace ctflow::keras::applications
