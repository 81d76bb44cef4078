#!/usr/bin/env bash
# How long a coordinator takes to accept one big submission, and what it keeps per task:
# N distinct MatMul shapes (default 10,000) submitted three times with different budgets
# (so the later submissions run alongside 10,000 / 20,000 running tasks), then the
# coordinator's resident memory. The anchor is the client's default reply timeout
# (`tunefleet submit --timeout-ms`, 10 s): an accepted submission must be answered well
# inside it, or the client reports UNAVAILABLE for work that was in fact accepted.
#   bash bench/submit_many.sh [N]      (TUNEFLEET_BUILD_DIR picks the build folder)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TUNEFLEET_BUILD_DIR:-build}
n=${1:-10000}
source bench/lib.sh
bench_scratch
write_matmul_ops "$n" > "$work/ops.json"
start_coordinator "$build/coordinator/tunefleet-coordinator" "$work"

anchor_s=10
echo "submission of $n ops | seconds to the reply | ratio to the ${anchor_s} s client timeout"
for budget in 51 52 53; do
  start=$(date +%s.%N)
  "$build/cli/tunefleet" submit "$work/ops.json" --coordinator "$client" --budget "$budget" --timeout-ms 600000 > /dev/null
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" -v b="$budget" -v a="$anchor_s" \
    'BEGIN { printf "budget %d | %.2f | %.3f\n", b, e - s, (e - s) / a }'
done
rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$coordinator_pid/status")
awk -v r="$rss_kb" -v t=$((3 * n)) 'BEGIN { printf "coordinator RSS %.0f MB for %d running tasks: %.1f KB per task\n", r / 1024, t, r / t }'
