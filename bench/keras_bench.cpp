// Inference through Keras models: the Fashion-MNIST CNN (Conv2D 32, pool, Conv2D 64, pool, Dense
// 128, Dense 10; 225,034 parameters) and an MLP 784-128-10, at batch 1 and 256, on 1 and 2 threads,
// in microseconds per call, with the heap allocations of a warm call (counted by replacing the
// global operator new). Peers: bench/peers/keras_torch.py (torch.no_grad) and keras_tf.py
// (model(x, training=False)); scripts/bench.sh prints the ratios.
// Goals: CNN batch 1 at most 28 us, MLP batch 1 at most 2.1 us, zero allocations per warm call,
// two threads never slower than one.
// keras_{cnn,mlp}_int8: the same models quantized to int8 (keras::quantize, calibrated on 64
// random images), run by quantized_model::predict: the cpu device's int8 kernels (AVX-512 VNNI
// where the machine has it; rows, or one row's columns, split among the threads), bit for bit
// what the exported header computes on every target. Peers: keras_litert.py (TFLite's converter,
// float and int8, XNNPack) and keras_onnxruntime.py.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include <ctflow/keras.hpp>
#include <ctflow/keras/quantize.hpp>

namespace {
std::atomic<long> allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new(std::size_t n, std::align_val_t a) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  const std::size_t al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  const std::size_t al = static_cast<std::size_t>(a);
  return std::aligned_alloc(al, (n + al - 1) / al * al);
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new[](std::size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using namespace ctflow;
namespace layers = keras::layers;
namespace activations = keras::activations;

using Cnn = keras::Sequential<keras::Input<float, Shape<28, 28, 1>>, layers::Conv2D<32, 3, activations::relu>, layers::MaxPooling2D<>,
                              layers::Conv2D<64, 3, activations::relu>, layers::MaxPooling2D<>, layers::Flatten,
                              layers::Dense<128, activations::relu>, layers::Dense<10>>;
using Mlp = keras::Sequential<keras::Input<float, Shape<784>>, layers::Dense<128, activations::relu>, layers::Dense<10>>;

template <class Model, class InputShape> void inference(benchmark::State& s) {
  const auto batch = std::size_t(s.range(0));
  config::set_num_threads(int(s.range(1)));
  Model model;
  auto dims = InputShape::extents;
  dims[0] = batch;
  const auto x = random_uniform<float, InputShape>(1, 0, 1, dims);
  const TensorView<const float, InputShape> xv(x.data(), x.dims());
  benchmark::DoNotOptimize(model(xv).data());  // warm: the layers' outputs are allocated
  const long before = allocations.load();
  for (auto _ : s) benchmark::DoNotOptimize(model(xv).data());
  s.counters["allocs"] = double(allocations.load() - before) / double(s.iterations());
}

template <class Model, class InputShape> void int8_inference(benchmark::State& s) {
  const auto batch = std::size_t(s.range(0));
  config::set_num_threads(int(s.range(1)));
  Model model;
  auto dims = InputShape::extents;
  dims[0] = 64;
  const auto q = keras::quantize(model, random_uniform<float, InputShape>(2, 0, 1, dims));
  dims[0] = batch;
  const auto x = random_uniform<float, InputShape>(1, 0, 1, dims);
  std::vector<float> y(batch * q.output_size);
  q.predict(x.data(), batch, y.data());  // warm: the runner's buffers are allocated
  const long before = allocations.load();
  for (auto _ : s) {
    q.predict(x.data(), batch, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  s.counters["allocs"] = double(allocations.load() - before) / double(s.iterations());
}

BENCHMARK_TEMPLATE(inference, Cnn, Shape<dyn, 28, 28, 1>)->Name("keras_cnn")->ArgsProduct({{1, 256}, {1, 2}})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_TEMPLATE(inference, Mlp, Shape<dyn, 784>)->Name("keras_mlp")->ArgsProduct({{1, 256}, {1, 2}})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_TEMPLATE(int8_inference, Cnn, Shape<dyn, 28, 28, 1>)->Name("keras_cnn_int8")->ArgsProduct({{1, 256}, {1, 2}})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_TEMPLATE(int8_inference, Mlp, Shape<dyn, 784>)->Name("keras_mlp_int8")->ArgsProduct({{1, 256}, {1, 2}})->Unit(benchmark::kMicrosecond)->UseRealTime();

BENCHMARK_MAIN();
