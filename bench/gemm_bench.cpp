// SGEMM: ctflow's GEMM against OpenBLAS (cblas_sgemm) on the same inputs, one and two threads,
// and against the FMA peak (bench/fma_peak.hpp) measured in the same run. Run OpenBLAS at its best
// core type: OPENBLAS_CORETYPE=SkylakeX (scripts/bench.sh sets it, and interleaves repetitions).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <thread>

#include <ctflow/ctflow.hpp>

#include "fma_peak.hpp"

using namespace ctflow;

extern "C" void openblas_set_num_threads(int);

namespace {

void set_threads(int t) {
  config::set_num_threads(t);
  openblas_set_num_threads(t);
}

/// Times multiply(a, b, c) for c = a * b on uniform inputs of the benchmark's m, k, n.
template <class Multiply> void sgemm(benchmark::State& s, Multiply multiply) {
  const std::size_t m = std::size_t(s.range(0)), k = std::size_t(s.range(1)), n = std::size_t(s.range(2));
  set_threads(int(s.range(3)));
  auto a = random_uniform<float, Shape<dyn, dyn>>(1, -1, 1, {m, k});
  auto b = random_uniform<float, Shape<dyn, dyn>>(2, -1, 1, {k, n});
  Tensor<float, Shape<dyn, dyn>> c({m, n});
  for (auto _ : s) {
    multiply(a, b, c);
    benchmark::DoNotOptimize(c.data());
  }
  ctflow_bench::count_flops(s, 2.0 * double(m) * double(n) * double(k));
}

void openblas_multiply(const auto& a, const auto& b, auto& c) {
  const int m = int(a.dims()[0]), k = int(a.dims()[1]), n = int(b.dims()[1]);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, c.data(), n);
}

void ctflow_sgemm(benchmark::State& s) {
  sgemm(s, [](const auto& a, const auto& b, auto& c) { c = matmul(a, b); });
}
void openblas_sgemm(benchmark::State& s) {
  sgemm(s, [](const auto& a, const auto& b, auto& c) { openblas_multiply(a, b, c); });
  // After a call, OpenBLAS's workers spin for 2^28 clock ticks (its THREAD_TIMEOUT: about 0.1 s
  // here) before they sleep. Waiting that out keeps them off the cores of whichever benchmark
  // runs next, ctflow's or OpenBLAS's own.
  if (s.range(3) > 1) std::this_thread::sleep_for(std::chrono::milliseconds(250));
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int t : {1, 2}) {
    for (int n : {64, 128, 256, 512, 1024, 2048}) b->Args({n, n, n, t});
    // The Fashion-MNIST CNN at batch 64: im2col GEMMs of both convolutions and both dense layers.
    b->Args({64 * 26 * 26, 9, 32, t});
    b->Args({64 * 11 * 11, 288, 64, t});
    b->Args({64, 1600, 128, t});
    b->Args({64, 128, 10, t});
  }
  b->ArgNames({"m", "k", "n", "threads"})->UseRealTime();
}

// Small static shapes of inference, where call overhead dominates.
template <std::size_t M, std::size_t K, std::size_t N, class Multiply> void small(benchmark::State& s, Multiply multiply) {
  set_threads(1);
  auto a = random_uniform<float, Shape<M, K>>(1);
  auto b = random_uniform<float, Shape<K, N>>(2);
  Tensor<float, Shape<M, N>> c;
  for (auto _ : s) {
    multiply(a, b, c);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
}
template <std::size_t M, std::size_t K, std::size_t N> void ctflow_small(benchmark::State& s) {
  small<M, K, N>(s, [](const auto& a, const auto& b, auto& c) { c = matmul(a, b); });
}
template <std::size_t M, std::size_t K, std::size_t N> void openblas_small(benchmark::State& s) {
  small<M, K, N>(s, [](const auto& a, const auto& b, auto& c) { openblas_multiply(a, b, c); });
}

}  // namespace

BENCHMARK(ctflow_bench::fma_peak)->Name("fma_peak")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(ctflow_sgemm)->Apply(shapes);
BENCHMARK(openblas_sgemm)->Apply(shapes);
BENCHMARK_TEMPLATE(ctflow_small, 1, 784, 128);
BENCHMARK_TEMPLATE(openblas_small, 1, 784, 128);
BENCHMARK_TEMPLATE(ctflow_small, 8, 128, 10);
BENCHMARK_TEMPLATE(openblas_small, 8, 128, 10);
BENCHMARK_TEMPLATE(ctflow_small, 16, 16, 16);
BENCHMARK_TEMPLATE(openblas_small, 16, 16, 16);

BENCHMARK_MAIN();
