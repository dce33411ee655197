// expect: ctflow::keras::Functional: its Input takes float32 [None,4]; the call gives int32 [None,4]
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above and nothing else): a functional model of two inputs called
// on a tuple whose second tensor has another dtype.
#include <ctflow/keras.hpp>

using namespace ctflow;
namespace layers = keras::layers;

int main() {
  keras::Input<float, Shape<4>> a{.name = "a"}, b{.name = "b"};
  keras::Model model(std::tuple{a, b}, layers::Dense<1>{}(layers::Concatenate<>{}(a, b)));
  Tensor<float, Shape<dyn, 4>> x({2, 4});
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  Tensor<std::int32_t, Shape<dyn, 4>> y({2, 4});
#else
  Tensor<float, Shape<dyn, 4>> y({2, 4});
#endif
  Tensor<float, Shape<dyn, 1>> out = model(std::tuple{x, y});
  (void)out;
}
