// Keras models on the cuda device, as users write them: a model whose Input names cuda keeps its
// weights in device memory, and its calls, backward passes, get_weights / set_weights, weight
// files and keras::to<Device> equal the cpu device's. They run on the GPU where the driver shows
// one, else on the emulated GPU, whose memory the host cannot touch outside the GPU's own
// operations: a host read of a weight, an activation or a mask would stop the test there.
#include "../../keras/devices_check.hpp"

#include <ctflow/backend/cuda/cuda.hpp>

#include "emulated_runtime.hpp"

using namespace ctflow;
namespace layers = keras::layers;
namespace activations = keras::activations;
using devices_check::largest_difference;
using devices_check::same_models;
using devices_check::same_on_both;
using keras_check::same_weights;
using keras_check::scratch;

namespace {

// The layers whose operations the device runs: dense, layer normalization, dropout, reshapes,
// element-wise activations and rescaling, padding and global pooling, an embedding.
template <class D>
using Dense = keras::Sequential<keras::Input<float, Shape<6>, dyn, D>, layers::Dense<8, activations::relu>, layers::Dropout,
                                layers::Dense<6, activations::tanh>, layers::LayerNormalization, layers::LeakyReLU, layers::Reshape<Shape<2, 3>>, layers::Flatten,
                                layers::Rescaling, layers::Dense<3>, layers::Softmax<>>;
template <class D>
using Images = keras::Sequential<keras::Input<float, Shape<3, 3, 2>, dyn, D>, layers::ZeroPadding2D<>, layers::Activation<activations::sigmoid>,
                                 layers::GlobalAveragePooling2D, layers::Dense<4>, layers::ReLU, layers::Dense<2>>;
template <class D>
using Tokens = keras::Sequential<keras::Input<std::int32_t, Shape<5>, dyn, D>, layers::Embedding<10, 4>, layers::Flatten, layers::Dense<2, activations::sigmoid>>;

/// A functional model on device D: each merge, a nested model called as a layer and a layer
/// called twice.
template <class D> auto functional_model() {
  keras::Input<float, Shape<6>, dyn, D> inputs;
  auto a = layers::Dense<4, activations::relu>{}(inputs);
  auto b = layers::Dense<4>{}(inputs);
  auto sum = layers::Add{}(a, b);
  auto product = layers::Multiply{}(sum, a);
  auto joined = layers::Concatenate<>{}(product, b);
  keras::Input<float, Shape<8>, dyn, D> inner_in;
  auto inner_out = layers::LayerNormalization{}(layers::Dense<8, activations::tanh>{}(inner_in));
  keras::Model inner(inner_in, inner_out);
  auto h = layers::Dense<3>{}(inner(joined));
  layers::Dense<3, activations::tanh> shared;
  auto out = layers::Dense<2>{}(shared(shared(h)));
  return keras::Model(inputs, out);
}

template <class T> std::vector<keras::weight_value<T>> scaled(std::vector<keras::weight_value<T>> w, T by) {
  for (auto& v : w)
    for (auto& x : v.values) x = x * by + T(0.01);
  return w;
}

}  // namespace

TEST_CASE("Keras layers on cuda: Sequentials of each layer the device runs equal the cpu device's, forward and backward") {
  const gpu_under_test scope;
  static_assert(std::is_same_v<device_t<decltype(std::declval<Dense<cuda>&>().get_layer<0>().layer.kernel)>, cuda>);
  same_on_both<Dense, cuda>(random_uniform<float, Shape<dyn, 6>>(41, -1, 1, {5, 6}), 1e-5);
  same_on_both<Images, cuda>(random_uniform<float, Shape<dyn, 3, 3, 2>>(42, -1, 1, {3, 3, 3, 2}), 1e-5);
  const Tensor<std::int32_t, Shape<dyn, 5>> tokens = cast<std::int32_t>(random_uniform<float, Shape<dyn, 5>>(43, 0, 9.99, {4, 5}));
  same_on_both<Tokens, cuda>(tokens, 1e-5);
}

TEST_CASE("a functional model on cuda: merges, a nested model and a shared layer equal the cpu device's") {
  const gpu_under_test scope;
  keras::backend::clear_session();
  auto on_cpu = functional_model<cpu>();
  auto on_gpu = functional_model<cuda>();
  static_assert(std::is_same_v<decltype(on_gpu)::device_type, cuda>);
  same_models(on_cpu, on_gpu, random_uniform<float, Shape<dyn, 6>>(44, -1, 1, {4, 6}), 1e-5);
}

TEST_CASE("a model on cuda: its weights copied across by get_weights, set_weights, its weight files both ways, model.save and keras::to") {
  const gpu_under_test scope;
  keras::backend::clear_session();
  Dense<cpu> on_cpu;
  Dense<cuda> on_gpu;
  const auto x = random_uniform<float, Shape<dyn, 6>>(45, -1, 1, {4, 6});
  const auto xg = to<cuda>(x);

  // set_weights then get_weights: the values, through device memory.
  const auto w = scaled(on_cpu.get_weights(), 0.5f);
  on_gpu.set_weights(w);
  CHECK(same_weights(on_gpu.get_weights(), w));

  // Files the device's model writes, read by a model on cpu, and the other way.
  for (const std::string name : {"cuda_model.weights.h5", "cuda_model.safetensors"}) {
    INFO(name);
    on_gpu.save_weights(scratch(name));
    Dense<cpu> read;
    read.load_weights(scratch(name));
    CHECK(same_weights(read.get_weights(), w));
    on_cpu.save_weights(scratch("cpu_" + name));
    on_gpu.load_weights(scratch("cpu_" + name));
    CHECK(same_weights(on_gpu.get_weights(), on_cpu.get_weights()));
    CHECK(largest_difference(eval(on_gpu(xg)), eval(on_cpu(x))) < 1e-5);
    on_gpu.set_weights(w);
  }

  // A file of another architecture: the error, and no weight changed on the device.
  keras::Sequential<keras::Input<float, Shape<6>>, layers::Dense<9>> other;
  other.save_weights(scratch("other.weights.h5"));
  CHECK_THROWS(on_gpu.load_weights(scratch("other.weights.h5")));
  CHECK(same_weights(on_gpu.get_weights(), w));

  // model.save of the device's model, loaded as a cpu model.
  on_gpu.save(scratch("cuda_model.keras"));
  const auto loaded = keras::load_model<Dense<cpu>>(scratch("cuda_model.keras"));
  CHECK(same_weights(loaded->get_weights(), w));
  // And into the device's model.
  on_cpu.save(scratch("cpu_model.keras"));
  keras::load_model(on_gpu, scratch("cpu_model.keras"));
  CHECK(same_weights(on_gpu.get_weights(), on_cpu.get_weights()));

  // keras::to: the cpu model on the device and back, the same outputs.
  auto moved = to<cuda>(on_cpu);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(*moved)>::device_type, cuda>);
  CHECK(largest_difference(eval((*moved)(xg)), eval(on_cpu(x))) < 1e-5);
  auto back = to<cpu>(*moved);
  CHECK(largest_difference(eval((*back)(x)), eval(on_cpu(x))) == 0);
}
