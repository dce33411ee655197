// Bandwidth of a fused 3-input element-wise expression and of reductions over the last and the
// first axis, against a STREAM triad measured in the same run (a = b + s * c, 3 streams); a bias
// over a short last axis; softmax over rows of a few classes; and the cost of one parallel call
// of the thread pool.
#include <benchmark/benchmark.h>

#include <cmath>

#include <ctflow/ctflow.hpp>

#include "triad.hpp"

using namespace ctflow;

namespace {

constexpr std::size_t n = ctflow_bench::triad_size;
using ctflow_bench::count_bytes;

void fused3(benchmark::State& s) {
  config::set_num_threads(int(s.range(0)));
  auto a = random_uniform<float, Shape<dyn>>(1, -1, 1, {n}), b = random_uniform<float, Shape<dyn>>(2, -1, 1, {n}),
       c = random_uniform<float, Shape<dyn>>(3, -1, 1, {n});
  Tensor<float, Shape<dyn>> out({n});
  for (auto _ : s) {
    out = a + 0.5f * b * sigmoid(c);
    benchmark::DoNotOptimize(out.data());
  }
  count_bytes(s, 4.0 * n * sizeof(float));
}

void reduce_last(benchmark::State& s) {
  config::set_num_threads(int(s.range(0)));
  auto x = random_uniform<float, Shape<dyn, dyn>>(1, -1, 1, {4096, n / 4096});
  Tensor<float, Shape<dyn>> out({4096});
  for (auto _ : s) {
    out = reduce_sum<1>(x);
    benchmark::DoNotOptimize(out.data());
  }
  count_bytes(s, double(n) * sizeof(float));
}

void reduce_first(benchmark::State& s) {
  config::set_num_threads(int(s.range(0)));
  auto x = random_uniform<float, Shape<dyn, dyn>>(1, -1, 1, {4096, n / 4096});
  Tensor<float, Shape<dyn>> out({n / 4096});
  for (auto _ : s) {
    out = reduce_sum<0>(x);
    benchmark::DoNotOptimize(out.data());
  }
  count_bytes(s, double(n) * sizeof(float));
}

/// A bias over a short last axis, (x - mean) / std of an NHWC batch's channels: 2^22 elements
/// in pixels of range(0) channels, on one thread (the rate counts x and the result).
void channel_bias(benchmark::State& s) {
  config::set_num_threads(1);
  const std::size_t c = std::size_t(s.range(0)), rows = (std::size_t(1) << 22) / c;
  auto x = random_uniform<float, Shape<dyn, dyn>>(1, -1, 1, {rows, c});
  auto mean = random_uniform<float, Shape<dyn>>(2, -1, 1, {c}), inv_std = random_uniform<float, Shape<dyn>>(3, 1, 2, {c});
  Tensor<float, Shape<dyn, dyn>> out({rows, c});
  for (auto _ : s) {
    out = (x - mean) * inv_std;
    benchmark::DoNotOptimize(out.data());
  }
  count_bytes(s, 2.0 * double(rows * c) * sizeof(float));
}

/// Softmax over rows of range(0) classes, 2^20 elements on one thread: the max and the sum are
/// columns that the rows' element-wise passes read (the rate counts x and the result).
void softmax_rows(benchmark::State& s) {
  config::set_num_threads(1);
  const std::size_t c = std::size_t(s.range(0)), rows = (std::size_t(1) << 20) / c;
  auto x = random_uniform<float, Shape<dyn, dyn>>(1, -4, 4, {rows, c});
  Tensor<float, Shape<dyn, dyn>> out({rows, c});
  for (auto _ : s) {
    out = nn::softmax(x);
    benchmark::DoNotOptimize(out.data());
  }
  count_bytes(s, 2.0 * double(rows * c) * sizeof(float));
}

/// One call of the thread pool on 2 threads, each task range(0) steps of a dependent FMA chain
/// (4 cycles a step): the cost of dispatching a parallel loop, which decides how large a loop
/// must be to be worth splitting.
void parallel_call(benchmark::State& s) {
  const int steps = int(s.range(0));
  config::set_num_threads(2);
  for (auto _ : s)
    backend::cpu::pool().run(2, [&](int t) {
      float x = float(t);
      for (int i = 0; i < steps; ++i) x = std::fma(x, 0.999f, 1.f);
      benchmark::DoNotOptimize(x);
    });
}

}  // namespace

BENCHMARK(ctflow_bench::triad)->Name("triad")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(fused3)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(reduce_last)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(reduce_first)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(channel_bias)->Arg(3)->Arg(17)->Arg(64)->UseRealTime();
BENCHMARK(softmax_rows)->Arg(10)->Arg(64)->UseRealTime();
BENCHMARK(parallel_call)->Arg(0)->Arg(1000)->UseRealTime();

BENCHMARK_MAIN();
