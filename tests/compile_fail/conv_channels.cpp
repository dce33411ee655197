// expect: ctflow::nn::conv2d: input channels differ from the filter channels: [8,28,28,3] x [3,3,1,32]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above).
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<8, 28, 28, 3>> x; Tensor<float, Shape<3, 3, 1, 32>> wrong; Tensor<float, Shape<3, 3, 3, 32>> right;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto y = nn::conv2d<nn::SAME>(x, wrong); (void)y;
#else
  auto y = nn::conv2d<nn::SAME>(x, right); (void)y; (void)wrong;
#endif
}
