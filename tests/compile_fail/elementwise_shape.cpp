// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message in tests/CMakeLists.txt).
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<2, 3>> a; Tensor<float, Shape<4, 3>> b;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto e = a + b; (void)e;
#else
  auto e = a + a; (void)e;
#endif
}
