// expect: ctflow::nn::pool2d: the window is larger than the input with its padding: [1,2,6,2]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above).
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<1, 2, 6, 2>> x;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto y = nn::max_pool2d<3, 3>(x); (void)y;
#else
  auto y = nn::max_pool2d<3, 3, 2, 2, nn::SAME>(x); (void)y;
#endif
}
