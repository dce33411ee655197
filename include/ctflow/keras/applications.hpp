#pragma once
/// @file
/// @brief keras.applications: ready networks as compile-time definitions, with Keras's
/// parameter counts (LeNet-5, a VGG-style CIFAR net, ResNet-20, ResNet-18, MobileNetV2).

#include <ctflow/keras/applications/lenet.hpp>
#include <ctflow/keras/applications/mobilenet_v2.hpp>
#include <ctflow/keras/applications/resnet.hpp>
#include <ctflow/keras/applications/vgg.hpp>
