// The ready networks of keras::applications: LeNet-5, the VGG CIFAR net and the residual
// networks have Keras's parameter counts (the compiler's and the weights' own); LeNet-5 and the
// VGG net run. MobileNetV2 has its own unit (mobilenet_v2_test.cpp): each network's layers are
// types of their own, and one unit for all of them is over the suite's compile budget.
#include "network_counts.hpp"

#include <ctflow/keras/applications/lenet.hpp>
#include <ctflow/keras/applications/resnet.hpp>
#include <ctflow/keras/applications/vgg.hpp>

using namespace ctflow;
using keras_check::check_counts;

TEST_CASE("ready networks: LeNet-5, the VGG CIFAR net, ResNet-20 and ResNet-18 have Keras's parameter counts") {
  static_assert(keras::applications::LeNet5<>::count_params() == 61706);
  static_assert(keras::applications::ResNet20<>::count_params() == 274442);
  check_counts<keras::applications::LeNet5<>>("lenet5");
  check_counts<keras::applications::VGGCifar<>>("vgg_cifar");
  check_counts<keras::applications::ResNet20<>>("resnet20");
  check_counts<keras::applications::ResNet18<>>("resnet18");
}

TEST_CASE("ready networks run: LeNet-5 and the VGG net give probabilities") {
  keras::backend::clear_session();
  keras::applications::LeNet5<> lenet;
  const auto x = random_uniform<float, Shape<dyn, 32, 32, 1>>(1, 0, 1, {3, 32, 32, 1});
  const Tensor<float, Shape<dyn>> sums = reduce_sum<1>(lenet(x));
  for (std::size_t i = 0; i < 3; ++i) CHECK(sums.data()[i] == Approx(1.0).epsilon(1e-5));
  auto vgg = std::make_unique<keras::applications::VGGCifar<>>();
  const auto images = random_uniform<float, Shape<dyn, 32, 32, 3>>(2, 0, 1, {2, 32, 32, 3});
  const Tensor<float, Shape<dyn>> vsums = reduce_sum<1>((*vgg)(images));
  CHECK(vsums.data()[0] == Approx(1.0).epsilon(1e-5));
}
