// expect: ctflow::keras::Add: inputs differ: conv2d (Conv2D) [None,14,14,64] x conv2d (Conv2D) [None,14,14,32]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above): a functional Add of tensors whose shapes differ.
#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;

int main() {
  keras::Input<float, Shape<14, 14, 3>> inputs;
  auto a = layers::Conv2D<64, 3, layers::same>{}(inputs);
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  auto b = layers::Conv2D<32, 3, layers::same>{}(inputs);
#else
  auto b = layers::Conv2D<64, 3, layers::same>{}(inputs);
#endif
  keras::Model model(inputs, layers::Add{}(a, b));
  model.summary();
}
