// expect: ctflow::nn::sparse_softmax_cross_entropy_with_logits: labels must be integers, got float32; convert them with ctflow::cast<std::int32_t>
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above and nothing else): float labels, the loss averaged by
// reduce_mean and assigned, as a training step writes it.
#include <ctflow/ctflow.hpp>

using namespace ctflow;

int main() {
  Tensor<float, Shape<dyn, 10>> logits({4, 10});
  Tensor<float, Shape<dyn>> labels({4});
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  Tensor<float, Shape<>> loss = reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(labels, logits));
#else
  Tensor<float, Shape<>> loss = reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(cast<std::int32_t>(labels), logits));
#endif
  (void)loss;
}
