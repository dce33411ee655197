// SGEMM: ctflow's GEMM against OpenBLAS (cblas_sgemm) on the same inputs, one and two threads.
// Run OpenBLAS at its best core type: OPENBLAS_CORETYPE=SkylakeX (scripts/bench.sh sets it).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <ctflow/ctflow.hpp>

using namespace ctflow;

extern "C" void openblas_set_num_threads(int);

namespace {

void set_threads(int t) {
  config::set_num_threads(t);
  openblas_set_num_threads(t);
}

void report(benchmark::State& s, double m, double n, double k) {
  s.counters["GFLOP/s"] = benchmark::Counter(2 * m * n * k, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void ctflow_sgemm(benchmark::State& s) {
  const std::size_t m = std::size_t(s.range(0)), k = std::size_t(s.range(1)), n = std::size_t(s.range(2));
  set_threads(int(s.range(3)));
  auto a = random_uniform<float, Shape<dyn, dyn>>(1, -1, 1, {m, k});
  auto b = random_uniform<float, Shape<dyn, dyn>>(2, -1, 1, {k, n});
  Tensor<float, Shape<dyn, dyn>> c({m, n});
  for (auto _ : s) {
    c = matmul(a, b);
    benchmark::DoNotOptimize(c.data());
  }
  report(s, double(m), double(n), double(k));
}

void openblas_sgemm(benchmark::State& s) {
  const std::size_t m = std::size_t(s.range(0)), k = std::size_t(s.range(1)), n = std::size_t(s.range(2));
  set_threads(int(s.range(3)));
  auto a = random_uniform<float, Shape<dyn, dyn>>(1, -1, 1, {m, k});
  auto b = random_uniform<float, Shape<dyn, dyn>>(2, -1, 1, {k, n});
  Tensor<float, Shape<dyn, dyn>> c({m, n});
  for (auto _ : s) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.f, a.data(), int(k), b.data(), int(n), 0.f,
                c.data(), int(n));
    benchmark::DoNotOptimize(c.data());
  }
  report(s, double(m), double(n), double(k));
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
template <std::size_t M, std::size_t K, std::size_t N> void ctflow_small(benchmark::State& s) {
  set_threads(1);
  auto a = random_uniform<float, Shape<M, K>>(1);
  auto b = random_uniform<float, Shape<K, N>>(2);
  Tensor<float, Shape<M, N>> c;
  for (auto _ : s) {
    c = matmul(a, b);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
}
template <std::size_t M, std::size_t K, std::size_t N> void openblas_small(benchmark::State& s) {
  set_threads(1);
  auto a = random_uniform<float, Shape<M, K>>(1);
  auto b = random_uniform<float, Shape<K, N>>(2);
  Tensor<float, Shape<M, N>> c;
  for (auto _ : s) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(M), int(N), int(K), 1.f, a.data(), int(K), b.data(), int(N), 0.f,
                c.data(), int(N));
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
}

}  // namespace

BENCHMARK(ctflow_sgemm)->Apply(shapes);
BENCHMARK(openblas_sgemm)->Apply(shapes);
BENCHMARK_TEMPLATE(ctflow_small, 1, 784, 128);
BENCHMARK_TEMPLATE(openblas_small, 1, 784, 128);
BENCHMARK_TEMPLATE(ctflow_small, 8, 128, 10);
BENCHMARK_TEMPLATE(openblas_small, 8, 128, 10);
BENCHMARK_TEMPLATE(ctflow_small, 16, 16, 16);
BENCHMARK_TEMPLATE(openblas_small, 16, 16, 16);

BENCHMARK_MAIN();
