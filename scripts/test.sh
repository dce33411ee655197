#!/usr/bin/env bash
# Builds everything and runs the whole test suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)
# The checking units (tests, the documentation's programs) built by clang++ at -O0, in less than half
# of GCC's time (CMakeLists.txt: CTFLOW_CHECKING_COMPILER); setup.sh installs it.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTFLOW_BUILD_FUZZERS=ON \
  -DCTFLOW_CHECKING_COMPILER="$(command -v clang++-19 || true)" >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"
