#!/usr/bin/env bash
# Installs every Debian package ctflow's build, tests, examples and benchmarks need.
# Non-interactive and idempotent: when everything is present it returns at once.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libxsimd-dev libboost-dev catch2 libbenchmark-dev
  nlohmann-json3-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev libhdf5-dev
  libopenblas-dev python3-torch python3-numpy python3-protobuf dataset-fashion-mnist bc time
  clang libclang-rt-14-dev clang-19 lld
  g++-aarch64-linux-gnu gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib qemu-user qemu-system-arm
)

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
