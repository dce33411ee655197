// The cuda device on a GPU (skipped where the driver shows none), against the device's own
// limits measured in the same run: a fused 3-input element-wise expression against a
// device-to-device copy (goal: 85 % of its bandwidth), reductions over the last and the first
// axis (goal: 80 %), and matmul through the executor against a direct cuBLAS SGEMM of the same
// shape (goal: 95 %); a Dense layer's relu(x @ w + b) with cuBLASLt's epilogue against the product
// and a kernel after it; copies between the host and the device through the pinned staging
// buffers against the driver's copy from pageable memory. Each call is finished on return, so
// wall time is the device's.
#include <benchmark/benchmark.h>

#include <ctflow/backend/cuda/cuda.hpp>
#include <ctflow/ctflow.hpp>

#include <cstdio>
#include <optional>
#include <vector>

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

/// Host to device and back of 256 MiB: through ctflow's pinned staging buffers (to<cuda>, to<cpu>)
/// against the driver's own copy from pageable memory (cuMemcpyHtoD, cuMemcpyDtoH).
void to_device_staged(benchmark::State& s) {
  if (no_gpu(s)) return;
  std::vector<float> host(n, 1.f);
  Tensor<float, Shape<dyn>, cuda> g({n});
  for (auto _ : s) cuda::copy_from_host(g.data(), host.data(), n * sizeof(float));
  count_bytes(s, double(n) * sizeof(float));
}
void to_host_staged(benchmark::State& s) {
  if (no_gpu(s)) return;
  std::vector<float> host(n);
  const Tensor<float, Shape<dyn>, cuda> g({n});
  for (auto _ : s) cuda::copy_to_host(host.data(), g.data(), n * sizeof(float));
  count_bytes(s, double(n) * sizeof(float));
}
struct pageable_api {
  int (*cuMemcpyHtoD_v2)(unsigned long long, const void*, std::size_t);
  int (*cuMemcpyDtoH_v2)(void*, unsigned long long, std::size_t);
};
const gpu::lazy_api<pageable_api>& pageable() {
  static const gpu::lazy_api<pageable_api> l([](std::optional<gpu::shared_library>& library, pageable_api& api) {
    library.emplace("the CUDA driver", std::initializer_list<const char*>{"libcuda.so.1"});
    api.cuMemcpyHtoD_v2 = library->function<decltype(api.cuMemcpyHtoD_v2)>("cuMemcpyHtoD_v2");
    api.cuMemcpyDtoH_v2 = library->function<decltype(api.cuMemcpyDtoH_v2)>("cuMemcpyDtoH_v2");
  });
  return l;
}
void to_device_pageable(benchmark::State& s) {
  if (no_gpu(s)) return;
  std::vector<float> host(n, 1.f);
  Tensor<float, Shape<dyn>, cuda> g({n});
  for (auto _ : s) pageable().get().cuMemcpyHtoD_v2(reinterpret_cast<unsigned long long>(g.data()), host.data(), n * sizeof(float));
  count_bytes(s, double(n) * sizeof(float));
}
void to_host_pageable(benchmark::State& s) {
  if (no_gpu(s)) return;
  std::vector<float> host(n);
  const Tensor<float, Shape<dyn>, cuda> g({n});
  for (auto _ : s) pageable().get().cuMemcpyDtoH_v2(host.data(), reinterpret_cast<unsigned long long>(g.data()), n * sizeof(float));
  count_bytes(s, double(n) * sizeof(float));
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
BENCHMARK(to_device_staged)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(to_device_pageable)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(to_host_staged)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(to_host_pageable)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(dense_fused)->Arg(1024)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(dense_unfused)->Arg(1024)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
