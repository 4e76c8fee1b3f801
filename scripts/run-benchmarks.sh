#!/usr/bin/env bash
# Seam's main job: sets everything up on a fresh Debian 12 machine (scripts/setup-debian.sh:
# packages, configure, build), then runs the perf binaries on 4 local ranks under mpirun, in
# float32 and bfloat16, each row also timed with Open MPI's own call on the same buffers.
#
# Open MPI runs in its strongest configuration here: the UCX PML (Debian's default is ob1, and
# its UCX PML needs the tls/devices settings to start) with malloc settings that stop it paying
# page faults on the temporaries it allocates per call.
#
# Environment: SEAM_BENCH_RANKS (4), SEAM_BENCH_ARGS (-b 1K -e 64M -f 4 -n 20 -w 5 -c 1),
# SEAM_BENCH_DTYPES ("float bfloat16"), SEAM_BENCH_BUFFERS ("0 1": plain buffers, then buffers
# in SharedHostMemory, the perf binaries' -R; both libraries run on the same buffers).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh build

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ranks=${SEAM_BENCH_RANKS:-4}
read -r -a args <<<"${SEAM_BENCH_ARGS:--b 1K -e 64M -f 4 -n 20 -w 5 -c 1}"
read -r -a dtypes <<<"${SEAM_BENCH_DTYPES:-float bfloat16}"
read -r -a buffers <<<"${SEAM_BENCH_BUFFERS:-0 1}"
mpi_strongest=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
  -x MALLOC_MMAP_THRESHOLD_=4294967296 -x MALLOC_TRIM_THRESHOLD_=68719476736)

status=0
for registered in "${buffers[@]}"; do
  for bench in all_reduce reduce_scatter reduce_scatterv all_gather all_gatherv broadcast; do
    for dtype in "${dtypes[@]}"; do
      echo
      mpirun --allow-run-as-root --oversubscribe --bind-to none -n "$ranks" "${mpi_strongest[@]}" \
        "build/bin/${bench}_perf" "${args[@]}" -d "$dtype" -R "$registered" || status=1
    done
  done
done

# Plan construction: the time per stage should stay flat from 1k to 100k mixers (linear).
for layers in 1000 10000 100000; do
  build/bin/seam_plan --pattern M --layers "$layers" --tp 2 --quiet | grep '^# built' || status=1
done
exit $status
