// expect: ctflow::reduce: axis out of range for rank 2: [4,5]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above).
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<4, 5>> a;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto e = reduce_sum<2>(a); (void)e;
#else
  auto e = reduce_sum<1>(a); (void)e;
#endif
}
