// expect: ctflow::grad: cannot differentiate with respect to an integer or bool tensor
// Compile-fail test: gradients with respect to integer tensors do not exist.
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<4>> x;
  Tensor<std::int32_t, Shape<4>> n;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto g = grad(reduce_sum(x * cast<float>(n)), n); (void)g;
#else
  auto g = grad(reduce_sum(x * cast<float>(n)), x); (void)g;
#endif
}
