#pragma once
// The rate counters the benchmarks report. They print as plain numbers in billions per second
// ("GB/s=38.5/s", "GFLOP/s=201.9/s"), the form scripts/bench.sh reads.
#include <benchmark/benchmark.h>

namespace ctflow_bench {

/// Sets counter `name` of s to per_iteration units per iteration, in billions per second.
inline void count_rate(benchmark::State& s, const char* name, double per_iteration) {
  s.counters[name] = benchmark::Counter(per_iteration, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  s.counters[name].value /= 1e9;
}

}  // namespace ctflow_bench
