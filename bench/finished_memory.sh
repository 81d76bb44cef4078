#!/usr/bin/env bash
# What a coordinator keeps of finished tasks: ROUNDS submissions (default 4) of N distinct
# MatMul shapes each (default 20,000; budget 1, random, a worker with 8 slots), one after
# the other, with finished tasks kept in memory for 600 s (the default: all of them, here)
# and for 0 s (they leave at the next heartbeat ticks), side by side. Prints the resident
# memory after each round (freed memory is reused, not returned: what matters is whether
# it keeps growing), how long `status` of the first submission takes at the end (from
# memory, or from RocksDB once its tasks left), and the resident memory of a coordinator
# restarted on the same data (which brings only unfinished tasks back). The anchor is the
# Helm chart's 2 GiB coordinator memory limit.
#   bash bench/finished_memory.sh [N] [ROUNDS]      (TUNEFLEET_BUILD_DIR picks the build folder)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TUNEFLEET_BUILD_DIR:-build}
n=${1:-20000}
rounds=${2:-4}
source bench/lib.sh
bench_scratch
for ((r = 1; r <= rounds; r++)); do write_matmul_ops "$n" $((32 * r)) > "$work/round$r.json"; done
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
seconds() { local s e; s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }'; }

# run KEEP_SECONDS: one line of figures.
run() {
  local keep=$1 dir line status restarted r last=0 first=0
  dir=$(mktemp -d -p "$work")
  start_coordinator "$build/coordinator/tunefleet-coordinator" "$dir" --no-sync -v --keep-finished-s "$keep"
  "$build/worker/tunefleet-worker" --coordinator "$worker" --slots 8 --evaluator fixed > /dev/null 2>&1 &
  local worker_pid=$!
  pids+=("$worker_pid")
  line="$keep s"
  for ((r = 1; r <= rounds; r++)); do
    "$build/cli/tunefleet" submit "$work/round$r.json" --coordinator "$client" --budget 1 --strategy random \
      --timeout-ms 600000 > /dev/null
    while (($(done_tasks "$dir") < r * n)); do sleep 0.2; done
    sleep 3  # two heartbeat ticks: the first sees them finished, the second lets them go at keep 0
    last=$(rss_mb "$coordinator_pid")
    ((r == 1)) && first=$last
    line+=" | $last MB"
  done
  status=$(seconds "$build/cli/tunefleet" status 1 --coordinator "$client" --timeout-ms 600000)
  kill "$worker_pid" "$coordinator_pid"
  wait "$coordinator_pid" 2>/dev/null || true
  start_coordinator "$build/coordinator/tunefleet-coordinator" "$dir" --no-sync --keep-finished-s "$keep"
  restarted=$(rss_mb "$coordinator_pid")
  kill "$coordinator_pid"
  wait "$coordinator_pid" 2>/dev/null || true
  awk -v l="$line" -v a="$first" -v b="$last" -v s="$status" -v r="$restarted" -v n=$(((rounds - 1) * n)) \
    'BEGIN { printf "%s | %.1f KB | %s s | %d MB | %.3f\n", l, (b - a) * 1024 / n, s, r, b / 2048 }'
}

header="keep finished"
for ((r = 1; r <= rounds; r++)); do header+=" | RSS after $((r * n)) tasks"; done
echo "$header | growth per task after the first round | status of the first submission | RSS restarted on the data | last RSS / 2 GiB"
run 600
run 0
