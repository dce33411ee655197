// expect: ctflow::nn::sparse_softmax_cross_entropy_with_logits: labels must have the shape of logits without its last axis: [64] x [32,10]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above).
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<32, 10>> logits; Tensor<std::int32_t, Shape<64>> wrong; Tensor<std::int32_t, Shape<32>> right;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto e = nn::sparse_softmax_cross_entropy_with_logits(wrong, logits); (void)e;
#else
  auto e = nn::sparse_softmax_cross_entropy_with_logits(right, logits); (void)e; (void)wrong;
#endif
}
