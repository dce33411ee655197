// expect: ctflow::keras::KerasTensor: the result of a layer has a type of its own (here [None,13,13,8], the name holds [None,26,26,8]): give it a new name, auto y = layer(x), rather than x = layer(x)
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above and nothing else): Python's habit of rebinding a name to each
// layer's result, which C++'s types (each holding its shape) do not allow.
#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;

int main() {
  keras::Input<float, Shape<28, 28, 1>> inputs;
  auto x = layers::Conv2D<8, 3>{}(inputs);
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  x = layers::MaxPooling2D<>{}(x);
  keras::Model model(inputs, layers::Dense<10>{}(layers::Flatten{}(x)));
#else
  auto pooled = layers::MaxPooling2D<>{}(x);
  keras::Model model(inputs, layers::Dense<10>{}(layers::Flatten{}(pooled)));
#endif
  return int(model.count_params() % 2);
}
