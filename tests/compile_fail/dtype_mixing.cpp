// expect: ctflow::multiply: dtypes differ: float32 vs float64
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above).
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<3>> a; Tensor<double, Shape<3>> b;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto e = a * b; (void)e;
#else
  auto e = a * cast<float>(b); (void)e;
#endif
}
