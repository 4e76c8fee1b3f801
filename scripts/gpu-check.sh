#!/usr/bin/env bash
# One whole GPU verification, on a GPU machine (as root): builds with CUDA, runs the gpu-labelled
# tests (device collectives at 2, 4 and 8 ranks on the machine's GPUs, kill tests, graph replays,
# the decoder simulator's boundaries on device tensors: sim_cuda_*) without and then with MPS, the device perf binaries under MPS, and prints a summary.
#   scripts/gpu-check.sh [build-dir]        (logs in $GPU_CHECK_LOGS, default <build-dir>/gpu-check)
# GPU_CHECK_STAGES picks stages (default "build tests mps-tests perf").
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
stages=${GPU_CHECK_STAGES:-build tests mps-tests perf}
logs=${GPU_CHECK_LOGS:-$build/gpu-check}
mkdir -p "$logs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
summary=()
note() { summary+=("$1"); echo "== $1"; }
has() { [[ " $stages " == *" $1 "* ]]; }

# UCX's headers, where the machine lacks them: the .deb files of ../shared/tools/device-debs.
if ! pkg-config --exists ucx 2>/dev/null && ls .device-debs/*.deb >/dev/null 2>&1; then
  deps=/opt/seamdeps
  for f in .device-debs/*.deb; do dpkg -x "$f" "$deps"; done
  sed -i "s|^prefix *= */usr\$|prefix = $deps/usr|" "$deps"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc
  export PKG_CONFIG_PATH=$deps/usr/lib/x86_64-linux-gnu/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export UCX_MODULE_DIR=$deps/usr/lib/x86_64-linux-gnu/ucx
fi

# ip, where the machine lacks iproute2 (the netns tests): scripts/carry-iproute.sh brings it.
if ! command -v ip >/dev/null && [ -x .device-debs/iproute/ip ]; then export PATH=$PWD/.device-debs/iproute:$PATH; fi

gpu_targets=(seam_cuda device_collectives_check device_p2p_check device_fault_rank seam_local_launcher test_cuda_norm_kernels
  all_reduce_perf reduce_scatter_perf reduce_scatterv_perf all_gather_perf all_gatherv_perf broadcast_perf
  seam_info norm_perf_cuda seam_decoder_sim)
# GPU_CHECK_TARGETS: build only these (a quick re-check of a few tests).
[ -n "${GPU_CHECK_TARGETS:-}" ] && read -r -a gpu_targets <<<"$GPU_CHECK_TARGETS"
if has build; then
  if cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 ${SEAM_CMAKE_ARGS:-} \
       >"$logs/configure.log" 2>&1 &&
     cmake --build "$build" -j "$(nproc)" --target "${gpu_targets[@]}" >"$logs/build.log" 2>&1; then
    note "build: ok"
  else
    tail -40 "$logs/configure.log" "$logs/build.log"
    note "build: FAILED (see $logs/build.log)"
    printf '%s\n' "${summary[@]}"
    exit 1
  fi
  nvidia-smi -L | tee "$logs/gpus.txt"
  "$build/bin/seam_info" >"$logs/seam_info.txt" 2>&1 && sed -n '/^CUDA/,$p' "$logs/seam_info.txt"
fi

run_tests() {  # label for the log, extra ctest arguments
  local tag=$1
  shift
  if ctest --test-dir "$build" -L gpu --output-on-failure --timeout 900 "$@" \
       >"$logs/ctest-$tag.log" 2>&1; then
    note "ctest -L gpu ($tag): $(grep -E 'tests passed' "$logs/ctest-$tag.log")"
    note "  of which decoder simulator on device: $(grep -cE 'sim_cuda_.*Passed' "$logs/ctest-$tag.log") passed"
  else
    grep -E "Failed|\*\*\*|tests passed" "$logs/ctest-$tag.log" | tail -20
    note "ctest -L gpu ($tag): FAILED: $(grep -E 'tests passed' "$logs/ctest-$tag.log")"
  fi
}

mps_on() {
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/seam-mps CUDA_MPS_LOG_DIRECTORY=/tmp/seam-mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d && note "MPS: started"
}
mps_off() { echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 || true; }

# GPU_CHECK_CTEST_ARGS / GPU_CHECK_MPS_CTEST_ARGS: extra ctest arguments (e.g. -R np2) per run.
has tests && run_tests no-mps ${GPU_CHECK_CTEST_ARGS:-}
if has mps-tests || has perf; then mps_on; fi
# Under MPS one test at a time: the device kernels of concurrent jobs spin on the same SMs, and
# jobs that together hold more blocks than the GPU runs at once wait for each other until the deadline.
has mps-tests && run_tests mps ${GPU_CHECK_MPS_CTEST_ARGS:-${GPU_CHECK_CTEST_ARGS:--j1}}

if has perf; then
  "$build/bin/norm_perf_cuda" >"$logs/norm_perf_cuda.txt" 2>&1 || note "norm_perf_cuda: FAILED"
  for threads in 0 256 512 1024; do  # the register rows, by rows and at fixed threads a row
    echo "# SEAM_CUDA_NORM=registers SEAM_CUDA_NORM_PDL=1 SEAM_CUDA_NORM_THREADS=$threads" >>"$logs/norm_perf_cuda.txt"
    SEAM_CUDA_NORM=registers SEAM_CUDA_NORM_PDL=1 SEAM_CUDA_NORM_THREADS=$threads "$build/bin/norm_perf_cuda" 2>&1 | tail -4 \
      >>"$logs/norm_perf_cuda.txt" || note "norm_perf_cuda registers $threads: FAILED"
  done
  python3 tools/perf/torch_norm_baseline.py >"$logs/norm_torch_compile.txt" 2>&1 || note "torch.compile baseline: FAILED"
  cat "$logs/norm_perf_cuda.txt" "$logs/norm_torch_compile.txt"
  for np in ${GPU_CHECK_PERF_RANKS:-2 4}; do
    for coll in ${GPU_CHECK_PERF_COLLECTIVES:-all_reduce reduce_scatter reduce_scatterv all_gather all_gatherv broadcast}; do
      timeout 150 mpirun --allow-run-as-root --oversubscribe --bind-to none -n $np "$build/bin/${coll}_perf" -M cuda \
        -b 1K -e ${GPU_CHECK_PERF_MAX:-256M} -f 4 -n 50 -w 5 ${GPU_CHECK_PERF_ARGS:-} >"$logs/${coll}_perf_cuda_np$np.txt" 2>&1 ||
        note "perf ${coll} np$np: FAILED"
    done
    timeout 150 mpirun --allow-run-as-root --oversubscribe --bind-to none -n $np "$build/bin/all_reduce_perf" -M cuda \
      -b 1K -e 64M -f 4 -n 20 -w 5 -G 20 >"$logs/all_reduce_perf_cuda_graph_np$np.txt" 2>&1 ||
      note "perf all_reduce graphs np$np: FAILED"
  done
  note "perf: tables in $logs/*_perf_cuda_*.txt, norm_*.txt"
fi
mps_off
echo
echo "gpu-check summary:"
printf '  %s\n' "${summary[@]}"
