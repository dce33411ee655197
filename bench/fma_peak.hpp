#pragma once
// The FMA peak that compute goals are measured against: on each thread, independent chains of
// vector FMAs on registers, nothing loaded or stored. This machine's clock moves with its load
// (the peak reads 195 to 222 GFLOP/s on one core within an hour), so benchmarks that compare
// with it register it in their own run, to interleave its repetitions with theirs
// (--benchmark_enable_random_interleaving), as with the triad.
#include <benchmark/benchmark.h>

#include <ctflow/ctflow.hpp>

#include "counters.hpp"

namespace ctflow_bench {

/// Sets the "GFLOP/s" counter of s to per_iteration flops per iteration.
inline void count_flops(benchmark::State& s, double per_iteration) { count_rate(s, "GFLOP/s", per_iteration); }

/// range(0): threads. 24 chains per thread, as many as the GEMM micro-kernel's accumulators: with
/// 4 cycles of FMA latency and 2 FMA pipes, 8 would do.
inline void fma_peak(benchmark::State& s) {
  using V = ctflow::backend::cpu::batch<float>;
  constexpr std::size_t chains = 24, steps = std::size_t(1) << 16;
  const int threads = int(s.range(0));
  ctflow::config::set_num_threads(threads);
  for (auto _ : s) {
    ctflow::backend::cpu::pool().run(threads, [&](int t) {
      V acc[chains];
      for (std::size_t i = 0; i < chains; ++i) acc[i] = V(float(i + std::size_t(t)));
      const V a(0.999999f), b(1e-6f);
      for (std::size_t p = 0; p < steps; ++p)
#pragma GCC unroll 24
        for (std::size_t i = 0; i < chains; ++i) acc[i] = xsimd::fma(acc[i], a, b);
      V sum = acc[0];
      for (std::size_t i = 1; i < chains; ++i) sum += acc[i];
      benchmark::DoNotOptimize(sum);
    });
  }
  count_flops(s, 2.0 * double(V::size) * double(chains) * double(steps) * double(threads));
}

}  // namespace ctflow_bench
