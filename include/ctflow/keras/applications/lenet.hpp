#pragma once
/// @file
/// @brief LeNet-5 (LeCun et al., 1998) on 32x32 grey images, as Keras writes it: two tanh
/// convolutions with average pooling, then Dense 120, 84 and the classes (softmax). 61,706
/// parameters for 10 classes, as Keras counts them.
///
///     keras::applications::LeNet5<> model;
///     auto probabilities = model(images);          // images [n, 32, 32, 1]

#include <ctflow/keras/layers/average_pooling2d.hpp>
#include <ctflow/keras/layers/conv2d.hpp>
#include <ctflow/keras/layers/dense.hpp>
#include <ctflow/keras/layers/flatten.hpp>
#include <ctflow/keras/sequential.hpp>

namespace ctflow::keras::applications {

/// @brief LeNet-5 for Classes classes on images of shape Image ([32, 32, 1] by default), on
/// device D.
template <std::size_t Classes = 10, ShapeType Image = Shape<32, 32, 1>, class D = cpu>
using LeNet5 = Sequential<Input<float, Image, dyn, D>, layers::Conv2D<6, 5, activations::tanh>, layers::AveragePooling2D<2>,
                          layers::Conv2D<16, 5, activations::tanh>, layers::AveragePooling2D<2>, layers::Flatten,
                          layers::Dense<120, activations::tanh>, layers::Dense<84, activations::tanh>, layers::Dense<Classes, activations::softmax>>;

}  // namespace ctflow::keras::applications
