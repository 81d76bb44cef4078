#!/usr/bin/env bash
# How long cancelling a big submission holds the coordinator: N distinct MatMul shapes
# (default 20,000) submitted with no worker (every task queued), then `tunefleet cancel`,
# timed to its reply, with the coordinator's default synced writes. The anchor is the
# coordinator's loop watchdog (--loop-stall-limit-ms, 60 s): a cancel that holds the loop
# past it ends the process. Give a second coordinator binary to run it side by side (the
# build before a change):
#   bash bench/cancel_many.sh [N] [OTHER_COORDINATOR]   (TUNEFLEET_BUILD_DIR picks the build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TUNEFLEET_BUILD_DIR:-build}
n=${1:-20000}
other=${2:-}
source bench/lib.sh
bench_scratch
write_matmul_ops "$n" > "$work/ops.json"
anchor_s=60

# run COORDINATOR_BINARY LABEL: prints one line.
run() {
  local bin=$1 label=$2 dir
  dir=$(mktemp -d -p "$work")
  start_coordinator "$bin" "$dir"
  local id
  id=$("$build/cli/tunefleet" submit "$work/ops.json" --coordinator "$client" --budget 1 --json --timeout-ms 600000 |
    sed -n 's/.*"submission_id": *\([0-9]*\).*/\1/p' | head -1)
  local start end
  start=$(date +%s.%N)
  "$build/cli/tunefleet" cancel "$id" --coordinator "$client" --timeout-ms 600000 > /dev/null || true
  end=$(date +%s.%N)
  if kill -0 "$coordinator_pid" 2>/dev/null; then
    awk -v s="$start" -v e="$end" -v l="$label" -v a="$anchor_s" 'BEGIN { printf "%s | %.2f | %.3f\n", l, e - s, (e - s) / a }'
  else
    printf '%s | coordinator exited: %s\n' "$label" "$(tail -1 "$dir/coordinator.err")"
  fi
  kill "$coordinator_pid" 2>/dev/null || true
}

echo "cancel of a submission of $n queued tasks | seconds to the reply | ratio to the ${anchor_s} s loop watchdog"
run "$build/coordinator/tunefleet-coordinator" this
[[ -n $other ]] && run "$other" other
exit 0
