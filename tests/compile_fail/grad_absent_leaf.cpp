// expect: ctflow::grad: no leaf of the loss has the type of argument 1, float32 [3]
// Compile-fail test: a variable whose type cannot occur in the loss.
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<4>> x;
  Tensor<float, Shape<3>> y;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto g = grad(reduce_sum(square(x)), y); (void)g;
#else
  auto g = grad(reduce_sum(square(x)), x); (void)g;
#endif
}
