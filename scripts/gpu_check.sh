#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (a lent device machine): builds the cuda backend's tests and its
# benchmark, runs the tests on the GPU (the driver's runtime: the same tests that run on an
# emulated GPU elsewhere), under compute-sanitizer where it is installed, twice for
# determinism, then the benchmark; writes what later runs need to $OUT (default: gpu_out/):
# the device's properties, the test logs and the benchmark's JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu_out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv > "$out/device.csv" 2>&1 || true
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTFLOW_BUILD_BENCHMARKS=ON > "$out/configure.log" 2>&1
cmake --build build-gpu --target cuda_runtime_test bench_cuda -j "$(nproc)" > "$out/build.log" 2>&1
export CTFLOW_KERNEL_CACHE="$PWD/build-gpu/kernel_cache"
for run in 1 2; do
  build-gpu/tests/cuda_runtime_test --durations yes > "$out/tests_run$run.log" 2>&1 || echo "tests failed (run $run)" >> "$out/summary.txt"
done
if command -v compute-sanitizer > /dev/null; then
  compute-sanitizer --error-exitcode 1 build-gpu/tests/cuda_runtime_test "cuda device*" > "$out/sanitizer.log" 2>&1 || echo "compute-sanitizer reported errors" >> "$out/summary.txt"
fi
build-gpu/bench/bench_cuda --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_format=json > "$out/bench_cuda.json" 2> "$out/bench_cuda.err"
echo "done" >> "$out/summary.txt"
