// expect: ctflow::reshape: sizes differ: [4,5] x [3,7]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above).
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<4, 5>> a;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto e = reshape<Shape<3, 7>>(a); (void)e;
#else
  auto e = reshape<Shape<2, 10>>(a); (void)e;
#endif
}
