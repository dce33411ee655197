// expect: ctflow::keras::LSTM: takes [batch, timesteps, features] with static features; dense (Dense) gives it [None,10]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above): a functional layer called on a tensor it cannot take.
#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;

int main() {
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  keras::Input<float, Shape<784>> inputs;
  auto out = layers::LSTM<8>{}(layers::Dense<10>{}(inputs));
#else
  keras::Input<float, Shape<28, 28>> inputs;
  auto out = layers::LSTM<8>{}(layers::Dense<10>{}(inputs));
#endif
  keras::Model model(inputs, out);
  model.summary();
}
