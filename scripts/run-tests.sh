#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs the whole test suite: the threaded
# parts under ThreadSanitizer, the tree under clang with ASan + UBSan (warnings as errors) with a
# 45 s run of each fuzz target and the unit and integration tests that build runs, then every
# test on GCC's build (last, so the run ends with CTest's summary of the whole suite). Without a
# GPU the tests labelled gpu would only skip, a second or two each, so they are left out.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
stage() {  # name, command...: runs it and says how long it took (CI has a time budget)
  local name=$1 t0=$SECONDS
  shift
  "$@"
  echo "== stage $name: $((SECONDS - t0)) s"
}
# CI builds line tables only (SEAM_LINE_TABLES_ONLY): the build is what it waits for most.
SEAM_CMAKE_ARGS="-DSEAM_LINE_TABLES_ONLY=ON" stage setup+build scripts/setup-debian.sh build
stage tsan scripts/tsan-check.sh build-tsan
stage asan+fuzz scripts/asan-check.sh build-asan 45
gpu_tests=()
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "== no GPU here: the $(ctest --test-dir build -N -L gpu | sed -n 's/^Total Tests: //p') tests labelled gpu are left out (scripts/gpu-check.sh runs them)"
  gpu_tests=(-LE gpu)
fi
ctest --test-dir build --output-on-failure --timeout 600 -j 1 "${gpu_tests[@]}"
