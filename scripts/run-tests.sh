#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir build --output-on-failure --timeout 600 -j 1
# Then the sanitizers: TSan on the threaded parts, and last the clang ASan + UBSan build with its
# fuzz runs, whose ctest summary ends the output.
scripts/tsan-check.sh build-tsan
scripts/clang-check.sh build-clang
