// The convolution and pooling layers against Keras 3 itself: given the same weights, the same
// output, and the same gradients of sum(y * dy) with respect to the input and the weights
// (tests/keras/generate.py recorded them with tf.GradientTape). The other layers are in
// layers_test.cpp: one unit for all of them is over the suite's compile budget.
#include "keras_check.hpp"

using namespace ctflow;
using keras_check::check_layer;
namespace layers = keras::layers;
namespace activations = keras::activations;

TEST_CASE("Conv2D: VALID, SAME with strides and a rectangular kernel, dilation") {
  check_layer<float, Shape<dyn, 7, 7, 3>>("conv2d", layers::Conv2D<4, 3, activations::relu>{}, false, true);
  check_layer<float, Shape<dyn, 8, 7, 3>>("conv2d_same_strides", layers::Conv2D<4, layers::size<3, 2>, layers::same, layers::strides<2>>{}, false, true);
  check_layer<float, Shape<dyn, 9, 9, 2>>("conv2d_dilated", layers::Conv2D<3, 3, activations::tanh, layers::dilation_rate<2>>{}, false, true);
}

TEST_CASE("Conv1D, DepthwiseConv2D, SeparableConv2D, Conv2DTranspose (SAME with strides, VALID)") {
  check_layer<float, Shape<dyn, 9, 3>>("conv1d", layers::Conv1D<4, 3, layers::same>{}, false, true);
  check_layer<float, Shape<dyn, 6, 6, 3>>("depthwise_conv2d", layers::DepthwiseConv2D<3, layers::depth_multiplier<2>>{}, false, true);
  check_layer<float, Shape<dyn, 6, 6, 3>>("separable_conv2d", layers::SeparableConv2D<5, 3, layers::same>{}, false, true);
  check_layer<float, Shape<dyn, 4, 4, 3>>("conv2d_transpose", layers::Conv2DTranspose<4, 3, layers::strides<2>, layers::same>{}, false, true);
  check_layer<float, Shape<dyn, 4, 5, 3>>("conv2d_transpose_valid", layers::Conv2DTranspose<2, 3>{}, false, true);
}

TEST_CASE("pooling: max and average, VALID and SAME, global") {
  check_layer<float, Shape<dyn, 6, 6, 3>>("max_pooling2d", layers::MaxPooling2D<>{}, false, true);
  check_layer<float, Shape<dyn, 7, 7, 2>>("max_pooling2d_same", layers::MaxPooling2D<3, layers::strides<2>, layers::same>{}, false, true);
  check_layer<float, Shape<dyn, 6, 6, 3>>("average_pooling2d", layers::AveragePooling2D<2>{}, false, true);
  check_layer<float, Shape<dyn, 7, 7, 2>>("average_pooling2d_same", layers::AveragePooling2D<3, layers::strides<2>, layers::same>{}, false, true);
  check_layer<float, Shape<dyn, 5, 4, 3>>("global_average_pooling2d", layers::GlobalAveragePooling2D{}, false, true);
  check_layer<float, Shape<dyn, 5, 4, 3>>("global_max_pooling2d", layers::GlobalMaxPooling2D{}, false, true);
}
