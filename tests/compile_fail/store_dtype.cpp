// expect: ctflow::Tensor: dtypes differ: float32 vs int32
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above).
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<int32_t, Shape<3>> a;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  Tensor<float, Shape<3>> t = a; (void)t;
#else
  Tensor<float, Shape<3>> t = cast<float>(a); (void)t;
#endif
}
