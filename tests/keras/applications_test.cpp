// The ready networks of keras::applications: their parameter counts are Keras's (as the
// generator's Keras definitions count them: data/networks.json), the compiler's and the
// weights' own; LeNet-5, the VGG net and MobileNetV2 run.
#include "keras_check.hpp"

#include <ctflow/keras/applications.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace ctflow;
using keras_check::data;

namespace {

nlohmann::json counts(const std::string& network) {
  std::ifstream in(data("networks.json"));
  return nlohmann::json::parse(in).at(network);
}

/// The model's weights as its variables count them, against Keras's counts of the network.
template <class Net> void check_counts(const std::string& network) {
  INFO(network);
  const auto expected = counts(network);
  CHECK(Net::count_params() == expected.at("total").get<std::size_t>());
  keras::backend::clear_session();
  auto model = std::make_unique<Net>();
  std::size_t trainable = 0, other = 0;
  for (const auto& v : model->trainable_variables()) trainable += v.values.size();
  for (const auto& v : model->non_trainable_variables()) other += v.values.size();
  CHECK(trainable == expected.at("trainable").get<std::size_t>());
  CHECK(other == expected.at("non_trainable").get<std::size_t>());
}

}  // namespace

TEST_CASE("ready networks: LeNet-5, the VGG CIFAR net, ResNet-20, ResNet-18 and MobileNetV2 have Keras's parameter counts") {
  static_assert(keras::applications::LeNet5<>::count_params() == 61706);
  static_assert(keras::applications::ResNet20<>::count_params() == 274442);
  check_counts<keras::applications::LeNet5<>>("lenet5");
  check_counts<keras::applications::VGGCifar<>>("vgg_cifar");
  check_counts<keras::applications::ResNet20<>>("resnet20");
  check_counts<keras::applications::ResNet18<>>("resnet18");
  check_counts<keras::applications::MobileNetV2<>>("mobilenet_v2");
}

TEST_CASE("ready networks run: LeNet-5 and the VGG net give probabilities, MobileNetV2 classifies an image") {
  keras::backend::clear_session();
  keras::applications::LeNet5<> lenet;
  const auto x = random_uniform<float, Shape<dyn, 32, 32, 1>>(1, 0, 1, {3, 32, 32, 1});
  const Tensor<float, Shape<dyn>> sums = reduce_sum<1>(lenet(x));
  for (std::size_t i = 0; i < 3; ++i) CHECK(sums.data()[i] == Approx(1.0).epsilon(1e-5));
  auto vgg = std::make_unique<keras::applications::VGGCifar<>>();
  const auto images = random_uniform<float, Shape<dyn, 32, 32, 3>>(2, 0, 1, {2, 32, 32, 3});
  const Tensor<float, Shape<dyn>> vsums = reduce_sum<1>((*vgg)(images));
  CHECK(vsums.data()[0] == Approx(1.0).epsilon(1e-5));
  auto mobilenet = std::make_unique<keras::applications::MobileNetV2<>>();
  const auto image = random_uniform<float, Shape<dyn, 224, 224, 3>>(3, 0, 1, {1, 224, 224, 3});
  const Tensor<float, Shape<dyn, 1000>> p = (*mobilenet)(image);
  CHECK(float(reduce_sum(p)) == Approx(1.0).epsilon(1e-4));
  CHECK(float(reduce_min(p)) >= 0.f);
}
