#!/usr/bin/env bash
# The threaded parts under ThreadSanitizer (clang, warnings as errors): the helper threads of the
# shared-memory collectives (alone, and in collectives on 2-3 ranks with SEAM_HELPER_THREADS), the
# TCP store's server thread with concurrent clients, the engine with the composite transport's
# watcher thread (two hosts on the loopback), and a communicator and its duplicate on two
# threads. Builds only what those tests need.
# Usage: scripts/tsan-check.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build-tsan}

san="-fsanitize=thread -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="$san" -DCMAKE_SHARED_LINKER_FLAGS="$san" \
  -DSEAM_WERROR=ON -DSEAM_ENABLE_CUDA=OFF -DSEAM_BUILD_TOOLS=OFF
cmake --build "$build_dir" -j "${SEAM_TSAN_JOBS:-$(nproc)}" --target helper_threads tcp_store_unit collectives_check \
  comm_groups_test seam_local_launcher comm_duplicate_check

# halt_on_error: a report fails the test; the suppressions name third-party code only (see the file).
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tests='helper_threads|tcp_store_unit|collectives_check_(helpers_np3|helpers_single_copy_np2)'
tests+='|comm_groups_store_np3|collectives_two_hosts_loopback_consecutive_check|comm_duplicate_np3'
ctest --test-dir "$build_dir" --output-on-failure --timeout 300 -j 1 -R "^($tests)\$"
