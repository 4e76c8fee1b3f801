#!/usr/bin/env bash
# Installs the Debian 12 packages Seam builds and tests with, then configures and builds it.
# Usage: scripts/setup-debian.sh [build-dir]   (run as root, or with sudo available)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}

sudo_cmd=""
if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
packages=(build-essential clang libclang-rt-dev cmake pkg-config git
  libucx-dev ucx-utils libibverbs-dev rdma-core
  libpmix-dev libopenmpi-dev openmpi-bin
  libspdlog-dev libfmt-dev doctest-dev
  iproute2 iptables ethtool libnetfilter-queue-dev procps python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $sudo_cmd apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc)
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSEAM_WERROR=ON ${SEAM_CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$jobs"
