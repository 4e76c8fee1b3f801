#!/usr/bin/env bash
# Runs each libFuzzer target of a SEAM_FUZZ build (asan-check.sh's) for a while, side by side,
# from the committed corpus (test/fuzz/corpus/<target>/, read only: new inputs go to a scratch
# folder), and prints each run's final stats; a crash, leak, timeout or out-of-memory input fails.
# Usage: scripts/fuzz.sh build-dir [seconds] [target...]   (default: 60 s, every target)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$1
seconds=${2:-60}
shift $(($# < 2 ? $# : 2))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(store_frames_fuzz planner_fuzz)

# The store logs every rejection at warn: thousands a second would fill the log, not find bugs.
export SEAM_LOG_LEVEL=error
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
pids=()
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t/new" "test/fuzz/corpus/$t"
  # -timeout: one input taking 10 s is a hang; crash inputs are written into the scratch folder.
  "$build_dir/bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$scratch/$t/" "$scratch/$t/new" "test/fuzz/corpus/$t" >"$scratch/$t/log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  if wait "${pids[$i]}"; then
    echo "fuzz $t: ${seconds} s, no finding"
    grep -E '^stat::number_of_executed_units|^#[0-9]+[[:space:]]+DONE' "$scratch/$t/log" || true
  else
    status=1
    echo "fuzz $t: FAILED"
    tail -n 60 "$scratch/$t/log"
    for a in "$scratch/$t"/crash-* "$scratch/$t"/leak-* "$scratch/$t"/timeout-* "$scratch/$t"/oom-*; do
      [ -e "$a" ] && { echo "input ($a):"; od -An -tx1 "$a" | head -n 20; }
    done
  fi
done
exit $status
