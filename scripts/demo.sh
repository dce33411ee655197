#!/usr/bin/env bash
# The main job: builds and runs the most complete example (a network's forward pass with fused
# expressions, GEMM and reductions). It becomes the Fashion-MNIST training demo with the Keras API.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target basics -j "$(nproc)"
./build/examples/basics
