// A program as users write one, built by clang (tests/CMakeLists.txt): with CTFLOW_TEST_KERAS (clang
// 18 or later), a Keras model compiled and fitted and an embedded network; without it (clang 14,
// Debian 12's), the core: expressions assigned to tensors, reductions and gradients. It prints
// "clang ok" when every value is what it should be, and exits 1 otherwise.
#include <ctflow/ctflow.hpp>
#if CTFLOW_TEST_KERAS
#include <ctflow/backend/reference/reference.hpp>
#include <ctflow/embedded.hpp>
#include <ctflow/keras.hpp>
#endif

#include <cmath>
#include <cstdio>
#include <string>

using namespace ctflow;

namespace {

int failures = 0;
void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("clang: %s: wrong\n", what);
    ++failures;
  }
}

#if CTFLOW_TEST_KERAS
namespace weights {
constexpr float k[6] = {1, -1, 2, 0.5f, -2, 1};  // [3, 2]
constexpr float b[2] = {0.25f, -0.5f};
}  // namespace weights
#endif

}  // namespace

int main() {
  Tensor<float, Shape<2, 3>> a;
  for (int i = 0; i < 6; ++i) a.data()[i] = float(i) - 2.5f;  // -2.5 .. 2.5
  const Tensor<float, Shape<2, 3>> r = relu(a) * 2.f + 1.f;
  expect(r(0, 0) == 1.f && r(1, 2) == 6.f, "relu(a) * 2 + 1");
  const Tensor<float, Shape<2>> s = reduce_sum<1>(a * a);
  expect(s(0) == 6.25f + 2.25f + 0.25f && s(1) == 0.25f + 2.25f + 6.25f, "reduce_sum<1>(a * a)");
  const Tensor<float, Shape<3, 2>> w = ones<float, Shape<3, 2>>();
  const Tensor<float, Shape<2, 2>> m = matmul(a, w);
  expect(m(0, 0) == -4.5f && m(1, 1) == 4.5f, "matmul");
  Variable<float, Shape<2, 3>> v(a, "v");
  const auto [value, dv] = value_and_grad(reduce_sum(v * v), v);
  expect(value == 17.5f && dv(1, 2) == 5.f, "value_and_grad");
  bool named = false;
  try {
    const Tensor<float, Shape<dyn>> x({3}), y({4});
    const Tensor<float, Shape<dyn>> z = x + y;
  } catch (const shape_error& e) {
    named = std::string(e.what()).find("[3]") != std::string::npos;
  }
  expect(named, "a shape_error naming the shapes");

#if CTFLOW_TEST_KERAS
  namespace layers = keras::layers;
  using Net = keras::Sequential<keras::Input<float, Shape<4>>, layers::Dense<16, keras::activations::relu>, layers::Dense<3>>;
  keras::utils::set_random_seed(7);
  Net model;
  model.compile(keras::optimizers::Adam{.learning_rate = 0.05}, keras::losses::SparseCategoricalCrossentropy{.from_logits = true}, {"accuracy"});
  // Three classes told apart by which of the first three features is largest.
  Tensor<float, Shape<dyn, 4>> x = random_uniform<float, Shape<dyn, 4>>(3, -1.0, 1.0, {64, 4});
  Tensor<std::int32_t, Shape<dyn>> y({64});
  for (int i = 0; i < 64; ++i) y(i) = x(i, 0) > x(i, 1) ? (x(i, 0) > x(i, 2) ? 0 : 2) : (x(i, 1) > x(i, 2) ? 1 : 2);
  const auto history = model.fit(x, y, {.batch_size = 16, .epochs = 30, .verbose = 0});
  const auto& loss = history.history.at("loss");
  expect(loss.back() < 0.5 * loss.front(), "fit");
  expect(model.evaluate(x, y, {.verbose = 0}).at("accuracy") > 0.8, "evaluate");

  using Embedded = embedded::Sequential<embedded::Input<float, Shape<1, 3>>, embedded::Rescaling<0.5, 1.0>,
                                        embedded::Dense<2, keras::activations::relu, weights::k, weights::b>>;
  const float in[3] = {2, 4, -2};  // rescaled: 2, 3, 0
  float out[2];
  Embedded::predict(in, out);
  expect(out[0] == 2 * 1 + 3 * 2 + 0.25f && out[1] == 0.f, "embedded::Sequential");
#endif
  if (failures == 0) std::printf("clang ok\n");
  return failures == 0 ? 0 : 1;
}
