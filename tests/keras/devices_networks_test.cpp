// The ready networks on the reference device against the cpu device, forward and backward. This
// unit builds with resnet20_test.cpp (one unity group): ResNet-20 on cpu is compiled once for both.
#include "devices_check.hpp"

#include <ctflow/keras/applications.hpp>

using namespace ctflow;
using devices_check::same_on_both;

namespace {
template <class D> using ResNet = keras::applications::ResNet20<10, D>;
// MobileNetV2's inverted residual blocks, each form once: the expansion with the residual added,
// and neither (stride 2), in a network small enough to compile quickly on two devices.
template <class D>
using MobileNetBlocks = keras::Sequential<keras::Input<float, Shape<8, 8, 4>, dyn, D>, keras::applications::InvertedResidual<4, 1, 6>,
                                          keras::applications::InvertedResidual<8, 2, 1>, keras::layers::GlobalAveragePooling2D, keras::layers::Dense<2>>;
template <class D> using LeNet = keras::applications::LeNet5<10, Shape<32, 32, 1>, D>;
}  // namespace

TEST_CASE("the ready networks run on the reference device: ResNet-20, LeNet-5 and MobileNetV2's blocks equal the cpu device's, forward and backward") {
  static_assert(std::is_same_v<ResNet<cpu>, keras::applications::ResNet20<>>);  // resnet20_test's network
  same_on_both<LeNet>(random_uniform<float, Shape<dyn, 32, 32, 1>>(31, 0, 1, {2, 32, 32, 1}), 1e-4);
  // Twenty training-mode BatchNormalizations over a batch of 2 magnify each device's order of
  // summation: gradients differ by up to a few 1e-3 of their scale, with some initial weights.
  same_on_both<ResNet>(random_uniform<float, Shape<dyn, 32, 32, 3>>(32, 0, 1, {2, 32, 32, 3}), 1e-2);
  same_on_both<MobileNetBlocks>(random_uniform<float, Shape<dyn, 8, 8, 4>>(33, 0, 1, {2, 8, 8, 4}), 1e-3);
}
