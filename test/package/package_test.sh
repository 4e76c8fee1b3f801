#!/usr/bin/env bash
# Seam as an engine gets it: `cmake --install` into a temporary prefix, then the C example
# (examples/c_allreduce) configured, built and run from its own directory with only
# CMAKE_PREFIX_PATH pointing at the prefix, and the same program built through pkg-config.
#   package_test.sh BUILD_DIR SOURCE_DIR MPIEXEC
set -euo pipefail
build=$1 source=$2 mpiexec=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
test -f "$work/prefix/include/seam/seam.h" && test -f "$work/prefix/include/seam/version.h"
# Nothing but the public headers is installed.
extra=$(find "$work/prefix/include" -type f ! -name seam.h ! -name version.h)
if [ -n "$extra" ]; then echo "FAIL: installed headers beyond the public ones: $extra"; exit 1; fi
cmake -S "$source/examples/c_allreduce" -B "$work/example" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log"
cmake --build "$work/example" >"$work/build.log"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$mpiexec" --oversubscribe --bind-to none -n 3 "$work/example/c_allreduce"
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" cc -std=c99 -o "$work/c_allreduce_pc" \
  "$source/examples/c_allreduce/main.c" $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs seam)
"$mpiexec" --oversubscribe --bind-to none -n 2 "$work/c_allreduce_pc"
echo "package test passed"
