// expect: ctflow::add: operands on different devices: cpu x reference; copy one with ctflow::to<Device>
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above).
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<2, 3>> a; Tensor<float, Shape<2, 3>, reference> b;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto e = a + b; (void)e;
#else
  auto e = a + to<cpu>(b); (void)e;
#endif
}
