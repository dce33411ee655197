// expect: ctflow::embedded::Dense: its kernel has 8 values; the layer takes [4,3]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above): an embedded Dense whose kernel array has the wrong length.
#include <ctflow/backend/reference/reference.hpp>
#include <ctflow/embedded.hpp>

using namespace ctflow;

#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
alignas(64) inline constexpr float kernel[8] = {};
#else
alignas(64) inline constexpr float kernel[12] = {};
#endif
alignas(64) inline constexpr float bias[3] = {};

int main() {
  using Net = embedded::Sequential<embedded::Input<float, Shape<1, 4>>, embedded::Dense<3, keras::activations::relu, kernel, bias>>;
  const float x[4] = {1, 2, 3, 4};
  float y[3];
  Net::predict(x, y);
}
