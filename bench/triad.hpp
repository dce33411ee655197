#pragma once
// The STREAM triad (a = b + s * c over 64 MiB arrays, 3 streams counted) that bandwidth goals are
// measured against. Benchmarks that compare with it register it in their own run, so that with
// --benchmark_enable_random_interleaving its repetitions mix with theirs on this shared machine.
#include <benchmark/benchmark.h>

#include <ctflow/ctflow.hpp>

#include "counters.hpp"

namespace ctflow_bench {

inline constexpr std::size_t triad_size = std::size_t(1) << 24;  // 64 MiB per float array: well past the caches

/// Sets the "GB/s" counter of s to per_iteration bytes per iteration.
inline void count_bytes(benchmark::State& s, double per_iteration) { count_rate(s, "GB/s", per_iteration); }

/// range(0): threads.
inline void triad(benchmark::State& s) {
  using namespace ctflow;
  constexpr std::size_t n = triad_size;
  const int threads = int(s.range(0));
  config::set_num_threads(threads);
  auto b = random_uniform<float, Shape<dyn>>(1, -1, 1, {n}), c = random_uniform<float, Shape<dyn>>(2, -1, 1, {n});
  Tensor<float, Shape<dyn>> a({n});
  for (auto _ : s) {
    float* pa = a.data();
    const float* pb = b.data();
    const float* pc = c.data();
    backend::cpu::pool().run(threads, [&](int t) {
      const std::size_t lo = n * std::size_t(t) / std::size_t(threads), hi = n * std::size_t(t + 1) / std::size_t(threads);
#pragma GCC ivdep
      for (std::size_t i = lo; i < hi; ++i) pa[i] = pb[i] + 3.f * pc[i];
    });
    benchmark::DoNotOptimize(pa);
  }
  count_bytes(s, 3.0 * n * sizeof(float));
}

}  // namespace ctflow_bench
