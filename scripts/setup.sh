#!/usr/bin/env bash
# Installs the Debian packages ctflow's build, tests and examples need; `setup.sh bench` also the
# benchmarks' (Google Benchmark, OpenBLAS, PyTorch for the peers: some 170 packages and 700 MB
# that the test suite never reads, which CI's clean machine would otherwise install every run).
# Non-interactive and idempotent: when everything is present it returns at once.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libxsimd-dev catch2
  nlohmann-json3-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev libhdf5-dev
  python3-numpy python3-protobuf dataset-fashion-mnist bc time
  clang libclang-rt-14-dev clang-19 lld
  g++-aarch64-linux-gnu gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib qemu-user qemu-system-arm
)
if [ "${1:-}" = bench ]; then
  packages+=(libbenchmark-dev libopenblas-dev python3-torch)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
