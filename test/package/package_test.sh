#!/usr/bin/env bash
# Seam as an engine gets it: `cmake --install` into a temporary prefix, then the C, Python and C++
# examples (examples/c_allreduce, python_allreduce, cpp_allreduce, cpp_decoder) configured, built and run
# from their own directories with only CMAKE_PREFIX_PATH pointing at the prefix, and the C program
# built through pkg-config. cpp_decoder runs without mpiexec: it starts its own ranks over the TCP
# store, as an engine does, and runs the layer-boundary planner (seam/boundary.h).
#   package_test.sh BUILD_DIR SOURCE_DIR MPIEXEC
set -euo pipefail
build=$1 source=$2 mpiexec=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
# Exactly the public headers are installed (device_communicator.h where Seam was built with CUDA).
public="batch_facts.h boundary.h communicator.h detail/f16_soft.h dtype.h errors.h layer_output.h norm.h parallel.h reduction_policy.h seam.h shared_host_memory.h stage_declaration.h tensor.h version.h work.h"
ls "$work"/prefix/lib*/libseam_cuda.so* >/dev/null 2>&1 && public="$public boundary_device.h device_communicator.h"
installed=$(cd "$work/prefix/include/seam" && find . -type f | sed 's|^\./||' | sort | paste -sd' ')
if [ "$installed" != "$(tr ' ' '\n' <<<"$public" | sort | paste -sd' ')" ]; then
  echo "FAIL: installed headers: $installed; the public ones: $public"
  exit 1
fi
# Each public header compiles on its own, with nothing but the prefix on the include path.
for h in $public; do
  case $h in seam.h | version.h | device_communicator.h | boundary_device.h | detail/*) continue ;; esac
  echo "#include <seam/$h>" | c++ -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I"$work/prefix/include" -x c++ - ||
    { echo "FAIL: <seam/$h> does not compile alone"; exit 1; }
done
cmake -S "$source/examples/c_allreduce" -B "$work/example" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log"
cmake --build "$work/example" >"$work/build.log"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$mpiexec" --allow-run-as-root --oversubscribe --bind-to none -n 3 "$work/example/c_allreduce"
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" cc -std=c99 -o "$work/c_allreduce_pc" \
  "$source/examples/c_allreduce/main.c" $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs seam)
"$mpiexec" --allow-run-as-root --oversubscribe --bind-to none -n 2 "$work/c_allreduce_pc"
# The Python binding from the prefix: it finds libseam_c beside its own folder.
"$mpiexec" --allow-run-as-root --oversubscribe --bind-to none -n 3 \
  env PYTHONPATH="$work/prefix/lib/python" python3 "$source/examples/python_allreduce/allreduce.py"
# The C++ API: the communicator's collectives through seam::seam.
cmake -S "$source/examples/cpp_allreduce" -B "$work/cpp" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/cpp-configure.log"
cmake --build "$work/cpp" >"$work/cpp-build.log"
"$mpiexec" --allow-run-as-root --oversubscribe --bind-to none -n 3 "$work/cpp/cpp_allreduce"
# The planner facade: a two-layer decoder at tp = 2, then at tp = 2 x pp = 2 (one layer a pipeline
# stage), against its own tp = 1 run, ranks started by itself.
cmake -S "$source/examples/cpp_decoder" -B "$work/decoder" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/decoder-configure.log"
cmake --build "$work/decoder" >"$work/decoder-build.log"
"$work/decoder/cpp_decoder"
"$work/decoder/cpp_decoder" --pp 2
echo "package test passed"
