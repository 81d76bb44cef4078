#!/usr/bin/env bash
# Dispatch throughput with many running tasks: N distinct MatMul shapes (default 5,000),
# random search, budget B each (default 8) in jobs of one config, served by one worker of
# 8 slots whose evaluations cost nothing (--evaluator fixed): what is measured is the
# coordinator handing out jobs and recording results, jobs per second from submit to done;
# and fairness: how long a 1-op submission (same budget) sent right after the big one
# waits for its answer.
# Give a second coordinator binary to run it side by side (the anchor: the build before a
# dispatch change), alternating, R rounds each (default 3):
#   bash bench/dispatch_many.sh [N] [B] [OTHER_COORDINATOR] [R]  (TUNEFLEET_BUILD_DIR picks the build)
# The 1-op wait is `submit --wait`'s, which polls fast at first.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TUNEFLEET_BUILD_DIR:-build}
n=${1:-5000}
budget=${2:-8}
other=${3:-}
rounds=${4:-3}
source bench/lib.sh
bench_scratch
write_matmul_ops "$n" > "$work/ops.json"

# run COORDINATOR_BINARY: prints jobs per second.
run() {
  local bin=$1 dir
  dir=$(mktemp -d -p "$work")
  start_coordinator "$bin" "$dir" --no-sync -v
  local cpid=$coordinator_pid
  "$build/worker/tunefleet-worker" --coordinator "$worker" --slots 8 --evaluator fixed > /dev/null 2>&1 &
  local wpid=$!
  pids+=("$wpid")
  local start small_start small_end end
  start=$(date +%s.%N)
  "$build/cli/tunefleet" submit "$work/ops.json" --coordinator "$client" --budget "$budget" --strategy random \
    --job-size 1 --timeout-ms 600000 > /dev/null
  small_start=$(date +%s.%N)
  "$build/cli/tunefleet" submit "$work/one.json" --coordinator "$client" --budget "$budget" --strategy random \
    --job-size 1 --wait --json > /dev/null
  small_end=$(date +%s.%N)
  # Done when the coordinator has logged every task's end (-v): polling `status` of
  # 5,000 tasks instead cost the two cores more than the dispatch being measured, and
  # `status --wait`'s 1-s polling quantised the totals.
  while (($(grep -c "^coordinator: task [0-9]* done:" "$dir/coordinator.err") < n + 1)); do sleep 0.05; done
  end=$(date +%s.%N)
  # The coordinator's own CPU (user + system): on a 2-core machine the worker competes
  # for the same cores, so wall-clock jobs/s also moves with how jobs batch up there.
  local cpu
  cpu=$(awk '{ print ($14 + $15) / 100 }' "/proc/$cpid/stat")
  kill "$wpid" "$cpid" 2>/dev/null || true
  wait "$wpid" "$cpid" 2>/dev/null || true
  awk -v s="$start" -v e="$end" -v a="$small_start" -v b="$small_end" -v j=$(((n + 1) * budget)) -v c="$cpu" \
    'BEGIN { printf "%.0f %.2f %.2f\n", j / (e - s), b - a, c }'
}
echo '{"soc": "Ascend910B2", "ops": [{"name": "one", "op": "MatMul", "inputs": [{"shape": [8000, 128], "dtype": "float16"}, {"shape": [128, 8000], "dtype": "float16"}]}]}' \
  > "$work/one.json"

echo "$n tasks x $budget jobs of one config, 1 worker x 8 slots, fixed evaluator: jobs/s | coordinator CPU seconds | seconds a 1-op submission sent after them waits"
for ((r = 1; r <= rounds; r++)); do
  read -r this this_small this_cpu < <(run "$build/coordinator/tunefleet-coordinator")
  if [[ -n $other ]]; then
    read -r that that_small that_cpu < <(run "$other")
    awk -v a="$this" -v b="$that" -v c="$this_small" -v d="$that_small" -v e="$this_cpu" -v f="$that_cpu" -v r="$r" \
      'BEGIN { printf "round %d: jobs/s this %d, other %d, ratio %.2f | coordinator CPU this %.2f s, other %.2f s, ratio %.2f | 1-op wait this %.2f s, other %.2f s\n", r, a, b, a / b, e, f, e / f, c, d }'
  else
    echo "round $r: jobs/s $this | coordinator CPU $this_cpu s | 1-op wait $this_small s"
  fi
done
