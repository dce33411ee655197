// expect: ctflow::where: dtypes differ: float32 vs int32
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above).
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<dyn, 3>> a({4, 3}); Tensor<std::int32_t, Shape<3>> b;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto e = where(greater(a, 0.f), a, b); (void)e;
#else
  auto e = where(greater(a, 0.f), a, cast<float>(b)); (void)e;
#endif
}
