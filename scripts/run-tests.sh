#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs the sanitizer stages of the test suite:
# the threaded parts under ThreadSanitizer, the tree under clang with ASan + UBSan (warnings as
# errors) with a 30 s run of each fuzz target and the unit and integration tests that build runs.
# The README's test command then runs every test on GCC's build with CTest, last, so that CI ends
# with CTest's summary of the whole suite:
#   scripts/run-tests.sh && ctest --test-dir build --output-on-failure --timeout 600 -j2
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
stage() {  # name, command...: runs it and says how long it took (CI has a time budget)
  local name=$1 t0=$SECONDS
  shift
  "$@"
  echo "== stage $name: $((SECONDS - t0)) s"
}
# CI builds line tables only (SEAM_LINE_TABLES_ONLY), and CUDA code as PTX (no GPU here runs it;
# the GPU machine's scripts/gpu-check.sh builds it for its card): the build is what it waits for most.
SEAM_CMAKE_ARGS="-DSEAM_LINE_TABLES_ONLY=ON -DCMAKE_CUDA_ARCHITECTURES=90-virtual" \
  stage setup+build scripts/setup-debian.sh build
stage tsan scripts/tsan-check.sh build-tsan
stage asan+fuzz scripts/asan-check.sh build-asan 30
# Without a GPU the gpu-labelled tests would only skip, a second or two each: the last run
# (`ctest --test-dir build`, the README's test command after this script) leaves them out.
custom=build/CTestCustom.cmake
rm -f "$custom"
if ! nvidia-smi -L >/dev/null 2>&1; then
  gpu=$(ctest --test-dir build -N -L gpu | sed -n 's/^ *Test *#[0-9]*: //p')
  { echo "# Written by scripts/run-tests.sh: no GPU here, scripts/gpu-check.sh runs these."
    echo 'set(CTEST_CUSTOM_TESTS_IGNORE'
    printf '  "%s"\n' $gpu
    echo ')'; } >"$custom.tmp"
  mv "$custom.tmp" "$custom"
  echo "== no GPU here: the $(echo "$gpu" | wc -w) tests labelled gpu are left out of the last run"
fi
