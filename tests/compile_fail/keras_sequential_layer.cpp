// expect: ctflow::keras::Conv2D: takes [batch, height, width, channels] with static channels; flatten (Flatten) gives it [None,5408]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above): a Sequential whose layer cannot take the one before's output.
#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;

int main() {
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  using Net = keras::Sequential<keras::Input<float, Shape<28, 28, 1>>, layers::Conv2D<8, 3>, layers::Flatten, layers::Conv2D<8, 3>, layers::Dense<4>>;
#else
  using Net = keras::Sequential<keras::Input<float, Shape<28, 28, 1>>, layers::Conv2D<8, 3>, layers::Conv2D<8, 3>, layers::Flatten, layers::Dense<4>>;
#endif
  Net model;
  model.summary();
}
