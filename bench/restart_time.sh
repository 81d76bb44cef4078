#!/usr/bin/env bash
# How long a coordinator takes to restart as its history grows: ROUNDS submissions of N
# distinct MatMul shapes each (default 4 x 20,000; budget 1, random, a worker with 8
# slots) run to the end, then one submission of 200 ops is left queued (no worker), and
# the coordinator is stopped. The first start on that data replays the write-ahead log
# the writer left (at most 64 MB, Store::Open) and is printed apart. Then it is started
# REPS times (default 5), alternating with OLD (another build's tunefleet-coordinator,
# when given), each time until it prints `ready` (bound, resumed, serving), and stopped
# again. Prints each start's seconds, the medians and their ratio. The anchor is the
# build given as OLD; a restart of this build should not grow with the finished history
# it does not resume.
#   bash bench/restart_time.sh [N] [ROUNDS] [OLD] [REPS]   (TUNEFLEET_BUILD_DIR picks the build folder)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TUNEFLEET_BUILD_DIR:-build}
n=${1:-20000}
rounds=${2:-4}
old=${3:-}
reps=${4:-5}
source bench/lib.sh
bench_scratch
for ((r = 1; r <= rounds; r++)); do write_matmul_ops "$n" $((32 * r)) > "$work/round$r.json"; done
write_matmul_ops 200 16 > "$work/open.json"

dir="$work/data"
mkdir -p "$dir"
start_coordinator "$build/coordinator/tunefleet-coordinator" "$dir" --no-sync -v --keep-finished-s 0
"$build/worker/tunefleet-worker" --coordinator "$worker" --slots 8 --evaluator fixed > /dev/null 2>&1 &
worker_pid=$!
pids+=("$worker_pid")
for ((r = 1; r <= rounds; r++)); do
  "$build/cli/tunefleet" submit "$work/round$r.json" --coordinator "$client" --budget 1 --strategy random \
    --timeout-ms 600000 > /dev/null
  while (($(done_tasks "$dir") < r * n)); do sleep 0.2; done
done
kill "$worker_pid"
wait "$worker_pid" 2>/dev/null || true
"$build/cli/tunefleet" submit "$work/open.json" --coordinator "$client" --budget 8 --strategy random > /dev/null
kill "$coordinator_pid"
wait "$coordinator_pid" 2>/dev/null || true
echo "data: $((rounds * n)) finished tasks in $rounds submissions, 200 queued in one; $(du -sm "$dir/kb" | cut -f1) MB"

# start_seconds BINARY: seconds from launch to `ready`, then stops it.
start_seconds() {
  local bin=$1 s e
  s=$(date +%s.%N)
  "$bin" --client-bind 'tcp://127.0.0.1:*' --worker-bind 'tcp://127.0.0.1:*' --metrics-port -1 \
    --data-dir "$dir/kb" --no-sync > "$dir/restart.log" 2> "$dir/restart.err" &
  local pid=$!
  pids+=("$pid")
  until grep -q ready "$dir/restart.log"; do
    kill -0 "$pid" 2>/dev/null || { cat "$dir/restart.err" >&2; return 1; }
    sleep 0.005
  done
  e=$(date +%s.%N)
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }'
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "first start, replaying the log: $(start_seconds "$build/coordinator/tunefleet-coordinator") s"
this="" before=""
for ((i = 1; i <= reps; i++)); do
  t=$(start_seconds "$build/coordinator/tunefleet-coordinator")
  this+=" $t"
  line="start $i: this build $t s"
  if [[ -n $old ]]; then
    t=$(start_seconds "$old")
    before+=" $t"
    line+=", OLD $t s"
  fi
  echo "$line"
done
m=$(echo "$this" | median)
if [[ -n $old ]]; then
  b=$(echo "$before" | median)
  awk -v m="$m" -v b="$b" 'BEGIN { printf "median seconds to ready: this build %.3f, OLD %.3f; OLD / this %.1fx\n", m, b, b / m }'
else
  echo "median seconds to ready: this build $m"
fi
