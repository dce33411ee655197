// The cuda device on a GPU (skipped where the driver shows none), against the device's own
// limits measured in the same run: a fused 3-input element-wise expression against a
// device-to-device copy (goal: 85 % of its bandwidth), reductions over the last and the first
// axis (goal: 80 %), and matmul through the executor against a direct cuBLAS SGEMM of the same
// shape (goal: 95 %); a Dense layer's relu(x @ w + b) with cuBLASLt's epilogue against the product
// and a kernel after it. Each call is finished on return, so wall time is the device's.
#include <benchmark/benchmark.h>

#include <ctflow/backend/cuda/cuda.hpp>
#include <ctflow/ctflow.hpp>

#include <cstdio>
#include <optional>

using namespace ctflow;
namespace gpu = ctflow::backend::cuda;

namespace {

constexpr std::size_t n = std::size_t(1) << 26;  // 256 MiB of float: far past every cache

bool no_gpu(benchmark::State& s) {
  if (!gpu::devices().empty()) return false;
  s.SkipWithError("no GPU here: the driver shows none");
  return true;
}
void count_bytes(benchmark::State& s, double bytes) {
  s.counters["GB/s"] = benchmark::Counter(bytes * double(s.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void device_copy(benchmark::State& s) {
  if (no_gpu(s)) return;
  Tensor<float, Shape<dyn>, cuda> a({n}), b({n});
  for (auto _ : s) cuda::copy_on_device(b.data(), a.data(), n * sizeof(float));
  count_bytes(s, 2.0 * n * sizeof(float));
}

void fused3(benchmark::State& s) {
  if (no_gpu(s)) return;
  const auto a = to<cuda>(random_uniform<float, Shape<dyn>>(1, -1, 1, {n})), b = to<cuda>(random_uniform<float, Shape<dyn>>(2, -1, 1, {n})),
             c = to<cuda>(random_uniform<float, Shape<dyn>>(3, -1, 1, {n}));
  Tensor<float, Shape<dyn>, cuda> out({n});
  for (auto _ : s) out = a + 0.5f * b * sigmoid(c);
  count_bytes(s, 4.0 * n * sizeof(float));
}

void reduce_last(benchmark::State& s) {
  if (no_gpu(s)) return;
  const auto x = to<cuda>(random_uniform<float, Shape<dyn, dyn>>(1, -1, 1, {4096, n / 4096}));
  Tensor<float, Shape<dyn>, cuda> out({4096});
  for (auto _ : s) out = reduce_sum<1>(x);
  count_bytes(s, double(n) * sizeof(float));
}

void reduce_first(benchmark::State& s) {
  if (no_gpu(s)) return;
  const auto x = to<cuda>(random_uniform<float, Shape<dyn, dyn>>(1, -1, 1, {n / 4096, 4096}));
  Tensor<float, Shape<dyn>, cuda> out({4096});
  for (auto _ : s) out = reduce_sum<0>(x);
  count_bytes(s, double(n) * sizeof(float));
}

void matmul_ctflow(benchmark::State& s) {
  if (no_gpu(s)) return;
  const std::size_t m = std::size_t(s.range(0));
  const auto a = to<cuda>(random_uniform<float, Shape<dyn, dyn>>(1, -1, 1, {m, m})), b = to<cuda>(random_uniform<float, Shape<dyn, dyn>>(2, -1, 1, {m, m}));
  Tensor<float, Shape<dyn, dyn>, cuda> c({m, m});
  for (auto _ : s) c = matmul(a, b);
  s.counters["TFLOP/s"] = benchmark::Counter(2.0 * double(m * m * m) * double(s.iterations()) / 1e12, benchmark::Counter::kIsRate);
}

/// A Dense layer's forward pass, relu(x @ w + b), as one product with cuBLASLt's epilogue, against
/// the same product stored and then a kernel adding the bias and taking the relu.
void dense_fused(benchmark::State& s) {
  if (no_gpu(s)) return;
  const std::size_t m = std::size_t(s.range(0));
  const auto x = to<cuda>(random_uniform<float, Shape<dyn, dyn>>(1, -1, 1, {m, m})), w = to<cuda>(random_uniform<float, Shape<dyn, dyn>>(2, -1, 1, {m, m}));
  const auto b = to<cuda>(random_uniform<float, Shape<dyn>>(3, -1, 1, {m}));
  Tensor<float, Shape<dyn, dyn>, cuda> y({m, m});
  for (auto _ : s) y = relu(matmul(x, w) + b);
  s.counters["TFLOP/s"] = benchmark::Counter(2.0 * double(m * m * m) * double(s.iterations()) / 1e12, benchmark::Counter::kIsRate);
}
void dense_unfused(benchmark::State& s) {
  if (no_gpu(s)) return;
  const std::size_t m = std::size_t(s.range(0));
  const auto x = to<cuda>(random_uniform<float, Shape<dyn, dyn>>(1, -1, 1, {m, m})), w = to<cuda>(random_uniform<float, Shape<dyn, dyn>>(2, -1, 1, {m, m}));
  const auto b = to<cuda>(random_uniform<float, Shape<dyn>>(3, -1, 1, {m}));
  Tensor<float, Shape<dyn, dyn>, cuda> p({m, m}), y({m, m});
  for (auto _ : s) {
    p = matmul(x, w);
    y = relu(p + b);
  }
  s.counters["TFLOP/s"] = benchmark::Counter(2.0 * double(m * m * m) * double(s.iterations()) / 1e12, benchmark::Counter::kIsRate);
}

/// cuBLAS's SGEMM called directly (libcublas, loaded here), on the same shapes.
struct cublas_api {
  int (*cublasCreate_v2)(void**);
  int (*cublasSgemm_v2)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int, const float*, float*, int);
};
const gpu::lazy_api<cublas_api>& cublas() {
  static const gpu::lazy_api<cublas_api> l([](std::optional<gpu::shared_library>& library, cublas_api& api) {
    library.emplace("cuBLAS", std::initializer_list<const char*>{"libcublas.so.13", "libcublas.so.12", "libcublas.so"});
    api.cublasCreate_v2 = library->function<decltype(api.cublasCreate_v2)>("cublasCreate_v2");
    api.cublasSgemm_v2 = library->function<decltype(api.cublasSgemm_v2)>("cublasSgemm_v2");
  });
  return l;
}

void matmul_cublas(benchmark::State& s) {
  if (no_gpu(s)) return;
  const int m = int(s.range(0));
  const std::size_t mm = std::size_t(m) * std::size_t(m);
  const auto a = to<cuda>(random_uniform<float, Shape<dyn>>(1, -1, 1, {mm})), b = to<cuda>(random_uniform<float, Shape<dyn>>(2, -1, 1, {mm}));
  Tensor<float, Shape<dyn>, cuda> c({mm});
  const cublas_api& api = cublas().get();
  void* handle = nullptr;
  if (api.cublasCreate_v2(&handle) != 0) return s.SkipWithError("cublasCreate failed");
  const float one = 1, zero = 0;
  const auto& driver = gpu::driver();
  for (auto _ : s) {
    api.cublasSgemm_v2(handle, 0, 0, m, m, m, &one, b.data(), m, a.data(), m, &zero, c.data(), m);
    driver.cuCtxSynchronize();
  }
  s.counters["TFLOP/s"] = benchmark::Counter(2.0 * double(mm) * m * double(s.iterations()) / 1e12, benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(device_copy)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(fused3)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(reduce_last)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(reduce_first)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(matmul_ctflow)->Arg(1024)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(matmul_cublas)->Arg(1024)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(dense_fused)->Arg(1024)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(dense_unfused)->Arg(1024)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
