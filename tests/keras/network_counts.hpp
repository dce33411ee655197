// The parameter counts of a ready network against Keras's (as the generator's Keras definitions
// count them: data/networks.json): the compiler's count and the weights' own, trainable and not.
#pragma once

#include "keras_check.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>

namespace keras_check {

inline nlohmann::json network_counts(const std::string& network) {
  std::ifstream in(data_file("networks.json"));
  return nlohmann::json::parse(in).at(network);
}

/// The model's weights as its variables count them, against Keras's counts of the network.
template <class Net> void check_counts(const std::string& network) {
  INFO(network);
  const auto expected = network_counts(network);
  CHECK(Net::count_params() == expected.at("total").get<std::size_t>());
  ctflow::keras::backend::clear_session();
  auto model = std::make_unique<Net>();
  std::size_t trainable = 0, other = 0;
  for (const auto& v : model->trainable_variables()) trainable += v.values.size();
  for (const auto& v : model->non_trainable_variables()) other += v.values.size();
  CHECK(trainable == expected.at("trainable").get<std::size_t>());
  CHECK(other == expected.at("non_trainable").get<std::size_t>());
}

}  // namespace keras_check
