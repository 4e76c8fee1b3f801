#!/usr/bin/env bash
# The tree under Debian's clang with warnings as errors (library, tools and tests; CUDA off),
# built with AddressSanitizer + UndefinedBehaviorSanitizer and the libFuzzer targets: then a 60 s
# run of each fuzz target (scripts/fuzz.sh), and a subset of the tests on that build: the C API,
# the CPU kernels (their half-precision conversions take another path under clang 14: no
# _Float16), every unit test and the integration tests of collectives, groups and split churn,
# stranded calls and mismatches, and the TCP store. Part of scripts/run-tests.sh.
# Usage: scripts/asan-check.sh [build-dir] [fuzz-seconds]   (after setup-debian.sh installed clang)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build-asan}
fuzz_seconds=${2:-60}

# -O1: sanitized code at -O0 runs the tests several times slower; -fno-sanitize-recover makes a
# UBSan finding fail the process (and so the test), as an ASan one does.
san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
# The C API test links with the C driver, which leaves out UBSan's C++ half (the vptr checks of
# libseam_c.so) and libstdc++ it needs.
cxx_runtime="-fsanitize-link-c++-runtime -lstdc++"
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="$san $cxx_runtime" -DCMAKE_SHARED_LINKER_FLAGS="$san" \
  -DSEAM_WERROR=ON -DSEAM_ENABLE_CUDA=OFF -DSEAM_FUZZ=ON
cmake --build "$build_dir" -j "$(nproc)"

scripts/fuzz.sh "$build_dir" "$fuzz_seconds"

source scripts/sanitizer-env.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
integration='collectives_check_(np[23]|ucx_np2|shared_memory_np3|single_copy_np2|helpers_np3)'
integration+='|comm_(groups_np3|groups_store_np3|groups_ucx_np2|churn_np3|p2p_store_np3|fault_kill_np2)'
integration+='|stranded_check_(broadcast-root_np2|all-gatherv-blocks_np3|scatterv-root_ucx_np2)'
# The C API from C only: python3 is not instrumented, and ASan must be the first library loaded.
integration+='|mismatch_check_(np3|ucx_np2|stranding_ring_np3)|capi_(np3|store_np3)|reduce_kernels|test_norm_kernels'
# One ctest run (its summary ends CI): every unit test, named, and the integration tests above;
# but collectives_loopback*, 150-210 s each under ASan on 2 cores (the GCC run has them).
units=$(ctest --test-dir "$build_dir" -N -L unit -E '^collectives_loopback' | sed -n 's/^ *Test *#[0-9]*: //p' |
        paste -sd '|')
ctest --test-dir "$build_dir" --output-on-failure --timeout 300 -j 2 -R "^($units|$integration)\$"
