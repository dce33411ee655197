// expect: ctflow::keras::losses::MeanSquaredError: y_true [None,3] does not fit y_pred [None,10] (the same shape; floating predictions)
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above and nothing else): a loss given targets of another shape
// than the model's output.
#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;

int main() {
  keras::Sequential<keras::Input<float, Shape<4>>, layers::Dense<10>> model;
  const auto x = random_uniform<float, Shape<dyn, 4>>(1, -1, 1, {8, 4});
  const keras::losses::MeanSquaredError mse;
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  const auto targets = random_uniform<float, Shape<dyn, 3>>(2, -1, 1, {8, 3});
#else
  const auto targets = random_uniform<float, Shape<dyn, 10>>(2, -1, 1, {8, 10});
#endif
  auto [value, dy] = mse.value_and_gradient(targets, model(x, true));
  model.backward(TensorView<const float, Shape<dyn, 10>>(dy.data(), dy.dims()));
  return value > 0 ? 0 : 1;
}
