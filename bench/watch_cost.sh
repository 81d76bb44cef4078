#!/usr/bin/env bash
# What `tunefleet watch` costs the coordinator: one N-op submission (default 2,000
# distinct MatMuls, random, budget 30, jobs of 10) on a simulating worker with 2 slots
# (the setup of the audit that measured the first version), run with W watchers
# (default 4) and with none, alternating, ROUNDS times (default 3). Prints the coordinator's CPU seconds and wall time per run and the
# median ratio watched / unwatched (the anchor: no watcher).
#   bash bench/watch_cost.sh [N] [W] [ROUNDS]     (TUNEFLEET_BUILD_DIR picks the build folder)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TUNEFLEET_BUILD_DIR:-build}
n=${1:-2000}
watchers=${2:-4}
rounds=${3:-3}
source bench/lib.sh
bench_scratch
write_matmul_ops "$n" > "$work/ops.json"

# run W: prints "cpu_seconds wall_seconds" for one submission followed by W watchers.
run() {
  local w=$1 dir
  dir=$(mktemp -d "$work/run.XXXX")
  start_coordinator "$build/coordinator/tunefleet-coordinator" "$dir" --no-sync -v
  local cpid=$coordinator_pid wpids=()
  local sub
  sub=$("$build/cli/tunefleet" submit "$work/ops.json" --coordinator "$client" --strategy random --budget 30 \
    --job-size 10 | sed -n 's/^submission //p')
  for ((i = 0; i < w; i++)); do
    "$build/cli/tunefleet" watch "$sub" --coordinator "$client" --json > /dev/null 2>&1 &
    wpids+=($!)
    pids+=($!)
  done
  local t0 c0
  t0=$(date +%s.%N)
  c0=$(awk '{ print $14 + $15 }' "/proc/$cpid/stat")
  "$build/worker/tunefleet-worker" --coordinator "$worker" --slots 2 > /dev/null 2>&1 &
  local wk=$!
  pids+=($wk)
  # Done when the coordinator has logged every task's end (polling status would cost
  # the coordinator more than what is measured).
  until [ "$(grep -c '^coordinator: task [0-9]* done' "$dir/coordinator.err" || true)" -ge "$n" ]; do sleep 0.2; done
  local t1 c1
  t1=$(date +%s.%N)
  c1=$(awk '{ print $14 + $15 }' "/proc/$cpid/stat")
  for p in "${wpids[@]}"; do wait "$p" 2> /dev/null || true; done
  kill "$wk" "$cpid" 2> /dev/null || true
  wait "$wk" "$cpid" 2> /dev/null || true
  awk -v c="$((c1 - c0))" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f %.2f\n", c / 100, b - a }'
}

ratios=()
for ((r = 1; r <= rounds; r++)); do
  read -r wc ww <<< "$(run "$watchers")"
  read -r nc nw <<< "$(run 0)"
  ratio=$(awk -v a="$wc" -v b="$nc" 'BEGIN { printf "%.3f", a / b }')
  ratios+=("$ratio")
  echo "round $r: $watchers watchers: coordinator CPU ${wc} s, wall ${ww} s; none: CPU ${nc} s, wall ${nw} s; CPU ratio $ratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
echo "median coordinator CPU with $watchers watchers / without, $n ops: $median"
