// keras::applications::MobileNetV2: Keras's parameter counts (the compiler's and the weights'
// own, the moving statistics apart), and a 224x224 image classified into probabilities.
#include "network_counts.hpp"

#include <ctflow/keras/applications/mobilenet_v2.hpp>

using namespace ctflow;

TEST_CASE("MobileNetV2 has Keras's parameter counts") {
  static_assert(keras::applications::MobileNetV2<>::count_params() == 3538984);
  keras_check::check_counts<keras::applications::MobileNetV2<>>("mobilenet_v2");
}

TEST_CASE("MobileNetV2 classifies an image: probabilities over 1000 classes") {
  keras::backend::clear_session();
  auto mobilenet = std::make_unique<keras::applications::MobileNetV2<>>();
  const auto image = random_uniform<float, Shape<dyn, 224, 224, 3>>(3, 0, 1, {1, 224, 224, 3});
  const Tensor<float, Shape<dyn, 1000>> p = (*mobilenet)(image);
  CHECK(float(reduce_sum(p)) == Approx(1.0).epsilon(1e-4));
  CHECK(float(reduce_min(p)) >= 0.f);
}
