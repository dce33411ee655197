// expect: ctflow::matmul: inner dimensions differ: [4,5] x [6,7]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above).
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<4, 5>> a; Tensor<float, Shape<6, 7>> b; Tensor<float, Shape<5, 7>> c;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto e = matmul(a, b); (void)e;
#else
  auto e = matmul(a, c); (void)e;
#endif
}
