#!/usr/bin/env bash
# What dispatch costs the coordinator while nothing can be handed out: N one-op
# submissions (default 2,000) on an SoC no worker serves, and a worker with free slots
# for another SoC; the coordinator's CPU over 5 s, in percent of one core.
#   bash bench/idle_dispatch.sh [N]      (TUNEFLEET_BUILD_DIR picks the build folder)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TUNEFLEET_BUILD_DIR:-build}
n=${1:-2000}
source bench/lib.sh
bench_scratch

mkdir "$work/socs"
sed 's/Ascend910B2/Extra910/g' common/soc/Ascend910B2.ini > "$work/socs/Extra910.ini"
start_coordinator "$build/coordinator/tunefleet-coordinator" "$work" --no-sync --soc-dir "$work/socs"
cpid=$coordinator_pid
for ((i = 1; i <= n; i++)); do
  echo "{\"soc\": \"Extra910\", \"ops\": [{\"op\": \"MatMul\", \"inputs\": [{\"shape\": [$((16 * i)), 128]}, {\"shape\": [128, 64]}]}]}" \
    > "$work/op.json"
  "$build/cli/tunefleet" submit "$work/op.json" --coordinator "$client" --strategy random --budget 4 > /dev/null
done
"$build/worker/tunefleet-worker" --coordinator "$worker" --slots 2 --evaluator fixed > /dev/null 2>&1 &
pids+=($!)
sleep 1
a=$(awk '{ print $14 + $15 }' "/proc/$cpid/stat")
sleep 5
b=$(awk '{ print $14 + $15 }' "/proc/$cpid/stat")
awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN { printf "%d waiting submissions, a worker with free slots: coordinator CPU %.1f%% of a core\n", n, (b - a) / 5 }'
