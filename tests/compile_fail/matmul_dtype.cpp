// expect: ctflow::matmul: dtypes differ: float32 vs float64
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above). The batch extent is dyn: it must not show as a huge number.
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<dyn, 784>> x({2, 784}); Tensor<double, Shape<784, 10>> w;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto e = matmul(x, w); (void)e;
#else
  auto e = matmul(x, cast<float>(w)); (void)e;
#endif
}
