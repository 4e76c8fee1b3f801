#!/usr/bin/env bash
# Runs N copies of a program as plain processes (no mpirun) that bootstrap through Seam's TCP
# store: rank 0 serves SEAM_STORE_ADDR on a random local port; every rank gets SEAM_RANK,
# SEAM_WORLD_SIZE and the job's SEAM_JOB_TOKEN. Exits non-zero if any rank does.
# Usage: run_with_store.sh N program [args...]
set -u
n=$1
shift
# Below Linux's ephemeral range (32768+), so no outgoing connection holds it.
port=$((20000 + RANDOM % 12000))
export SEAM_STORE_ADDR=127.0.0.1:$port SEAM_WORLD_SIZE=$n
# 128 random bits: the store refuses short or guessable tokens.
export SEAM_JOB_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d " \n")
pids=()
for ((r = 0; r < n; r++)); do
  SEAM_RANK=$r "$@" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit $status
