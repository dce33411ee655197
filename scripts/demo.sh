#!/usr/bin/env bash
# The main job: builds and runs examples/fashion_mnist.cpp, which trains Keras's tutorial CNN on
# Fashion-MNIST (Debian's dataset-fashion-mnist) with compile / fit for 3 epochs (10% of the
# training set held out for validation, Keras's progress bar), evaluates it on the test set, and
# writes TensorBoard logs, the best weights and the final weights (Keras 3's .weights.h5) to
# build/runs/fashion_mnist.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target fashion_mnist -j "$(nproc)"
rm -rf build/runs/fashion_mnist
./build/examples/fashion_mnist build/runs/fashion_mnist 3
