// expect: ctflow::equal: dtypes differ: int64 vs uint8; convert one with ctflow::cast
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above and nothing else): an accuracy from argmax (int64) and uint8
// labels, cast and averaged by reduce_mean into a tensor.
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<dyn, 10>> logits({4, 10});
  Tensor<std::uint8_t, Shape<dyn>> labels({4});
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  Tensor<float, Shape<>> accuracy = reduce_mean(cast<float>(equal(argmax<1>(logits), labels)));
#else
  Tensor<float, Shape<>> accuracy = reduce_mean(cast<float>(equal(argmax<1>(logits), cast<std::int64_t>(labels))));
#endif
  (void)accuracy;
}
