// expect: ctflow::nn::conv2d: the window is larger than the input with its padding: [1,4,4,2] x [5,5,2,8]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above).
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<1, 4, 4, 2>> x; Tensor<float, Shape<5, 5, 2, 8>> f;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto y = nn::conv2d<nn::VALID>(x, f); (void)y;
#else
  auto y = nn::conv2d<nn::SAME>(x, f); (void)y;
#endif
}
