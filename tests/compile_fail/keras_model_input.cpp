// expect: ctflow::keras::Sequential: its Input takes float32 [None,28,28,1]; the call gives float32 [None,28,28]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above and nothing else): a model called on images without their
// channel axis.
#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;

int main() {
  keras::Sequential<keras::Input<float, Shape<28, 28, 1>>, layers::Flatten, layers::Dense<10>> model;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  Tensor<float, Shape<dyn, 28, 28>> images({16, 28, 28});
#else
  Tensor<float, Shape<dyn, 28, 28, 1>> images({16, 28, 28, 1});
#endif
  Tensor<float, Shape<dyn, 10>> logits = model(images);
  (void)logits;
}
