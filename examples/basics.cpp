// A tour of ctflow's foundation: tensors with shapes in their types, lazy fused expressions,
// reductions, matmul and shape ops. It builds a one-hidden-layer network's forward pass over a
// batch of random inputs and prints its softmax probabilities and predictions.
#include <ctflow/ctflow.hpp>

#include <iostream>

using namespace ctflow;

int main() {
  constexpr std::size_t batch = 4, features = 8, hidden = 16, classes = 3;

  // Seeded initial values, as Keras's initializers would draw them.
  auto x = random_normal<float, Shape<dyn, features>>(1, 0.0, 1.0, {batch, features});
  auto w1 = truncated_normal<float, Shape<features, hidden>>(2, 0.0, 0.3);
  auto b1 = zeros<float, Shape<hidden>>();
  auto w2 = truncated_normal<float, Shape<hidden, classes>>(3, 0.0, 0.3);

  // One fused loop computes bias add and relu on top of the GEMM.
  Tensor<float, Shape<dyn, hidden>> h = relu(matmul(x, w1) + b1);
  Tensor<float, Shape<dyn, classes>> logits = matmul(h, w2);

  // A numerically stable softmax, written with reductions that keep their axis.
  Tensor<float, Shape<dyn, classes>> e = exp(logits - reduce_max<1>(logits, keepdims));
  Tensor<float, Shape<dyn, classes>> probs = e / reduce_sum<1>(e, keepdims);
  Tensor<int64_t, Shape<dyn>> predicted = argmax<1>(probs);

  std::cout << "probabilities: " << probs << "\n";
  std::cout << "predicted classes: " << predicted << "\n";
  Tensor<float, Shape<dyn>> total = reduce_sum<1>(probs);
  std::cout << "row sums: " << total << "\n";
  for (float s : total)
    if (s < 0.999f || s > 1.001f) return 1;
  return 0;
}
