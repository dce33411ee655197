// expect: ctflow::grad: loss must be a scalar, got shape [4,5]
// Compile-fail test: grad needs a rank-0 loss.
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<4, 5>> x;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto g = grad(square(x), x); (void)g;
#else
  auto g = grad(reduce_sum(square(x)), x); (void)g;
#endif
}
