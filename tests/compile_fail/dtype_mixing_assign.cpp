// expect: ctflow::multiply: dtypes differ: float32 vs int32; convert one with ctflow::cast
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above and nothing else): mixed dtypes in an expression assigned to
// a tensor, and in a reduction's argument.
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<3>> a; Tensor<std::int32_t, Shape<3>> b;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  Tensor<float, Shape<3>> c = a * b + 1.f;
  Tensor<float, Shape<>> s = reduce_sum(exp(a * b));
#else
  Tensor<float, Shape<3>> c = a * cast<float>(b) + 1.f;
  Tensor<float, Shape<>> s = reduce_sum(exp(a * cast<float>(b)));
#endif
  (void)c; (void)s;
}
