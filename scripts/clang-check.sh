#!/usr/bin/env bash
# The tree under Debian's clang with warnings as errors (library, tools and tests; CUDA off), then
# a few tests on that build: the C API, and the CPU kernels, whose half-precision conversions take
# another path under clang 14 (no _Float16). run-tests.sh runs the full suite once, on GCC's build.
# Usage: scripts/clang-check.sh [build-dir]   (after scripts/setup-debian.sh installed clang)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build-clang}

# No optimisation and no debug info: the warnings are the compiler front end's, and this keeps
# the second build short.
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG=-O0 \
  -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DSEAM_WERROR=ON -DSEAM_ENABLE_CUDA=OFF
cmake --build "$build_dir" -j "$(nproc)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "$build_dir" --output-on-failure --timeout 300 -j 1 -R '^(capi_|reduce_kernels$|test_norm_kernels$)'
