// A model Keras saved, compiled in by the build step ctflow_import (the installed ctflow-import):
// Keras's BatchNormalization test network, run on its test inputs against Keras's outputs.
#include <cmath>
#include <cstdio>

#include "net.hpp"

int main() {
  using M = net::model;
  float y[M::output_shape::static_size];
  double worst = 0;
  for (std::size_t t = 0; t < net::test_count; ++t) {
    net::predict(net::test_inputs + t * M::input_shape::static_size, y);
    for (std::size_t i = 0; i < M::output_shape::static_size; ++i)
      worst = std::fmax(worst, std::fabs(double(y[i]) - double(net::test_outputs[t * M::output_shape::static_size + i])));
  }
  std::printf("embedded %zu %s\n", net::test_count, worst < 1e-4 ? "ok" : "differs");
}
