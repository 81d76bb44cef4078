#!/usr/bin/env bash
# What a nearest-shape lookup costs the coordinator: a knowledge base of N distinct MatMul
# shapes (default 20,000; budget 1 each on a worker whose evaluations cost nothing), then
# one `lookup --nearest` of K shapes it does not hold (default 2,000, each 8 rows more than
# a tuned one), the same K looked up exactly (all misses: the anchor, measured in the same
# run), the nearest lookup again (the first builds the coordinator's nearest-shape index
# with one scan), and a 1-op exact lookup sent while the first nearest one runs (what a
# build farm's other lookups wait; idle it takes what the exact lookup takes).
# Give a second coordinator binary to run it side by side (the build before a change):
#   bash bench/nearest_lookup.sh [N] [K] [OTHER_COORDINATOR]   (TUNEFLEET_BUILD_DIR picks the build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TUNEFLEET_BUILD_DIR:-build}
n=${1:-20000}
k=${2:-2000}
other=${3:-}
source bench/lib.sh
bench_scratch
write_matmul_ops "$n" > "$work/ops.json"
# The first K shapes of write_matmul_ops with 8 rows more: none is tuned, each has a
# neighbour at ln((m + 8) / m).
{
  printf '{"soc": "Ascend910B2", "ops": ['
  for ((i = 0; i < k; i++)); do
    ((i)) && printf ','
    printf '{"name": "miss%d", "op": "MatMul", "inputs": [{"shape": [%d, 128], "dtype": "float16"}, {"shape": [128, %d], "dtype": "float16"}]}' \
      "$i" $((16 * (1 + i % 400) + 8)) $((16 * (1 + i / 400)))
  done
  printf ']}\n'
} > "$work/misses.json"
printf '{"soc": "Ascend910B2", "ops": [{"name": "one", "op": "MatMul", "inputs": [{"shape": [16, 128], "dtype": "float16"}, {"shape": [128, 16], "dtype": "float16"}]}]}\n' > "$work/one.json"

seconds() { local s e; s=$(date +%s.%N); "$@" > /dev/null || [[ $? == 3 ]]; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }'; }

# run COORDINATOR_BINARY LABEL: prints one line of figures.
run() {
  local bin=$1 label=$2 dir
  dir=$(mktemp -d -p "$work")
  start_coordinator "$bin" "$dir" --no-sync -v
  "$build/worker/tunefleet-worker" --coordinator "$worker" --slots 8 --evaluator fixed > /dev/null 2>&1 &
  pids+=("$!")
  "$build/cli/tunefleet" submit "$work/ops.json" --coordinator "$client" --budget 1 --strategy random \
    --timeout-ms 600000 > /dev/null
  while (($(grep -c "^coordinator: task [0-9]* done:" "$dir/coordinator.err" || true) < n)); do sleep 0.2; done
  local lookup=("$build/cli/tunefleet" lookup --coordinator "$client" --timeout-ms 120000)
  local exact nearest during idle
  idle=$(seconds "${lookup[@]}" "$work/one.json")
  exact=$(seconds "${lookup[@]}" "$work/misses.json" --json)
  "${lookup[@]}" "$work/misses.json" --nearest --json > "$dir/nearest.json" 2>&1 &
  local lpid=$!
  sleep 0.2
  during=$(seconds "${lookup[@]}" "$work/one.json")
  local start end
  start=$(date +%s.%N)
  wait "$lpid" || true
  end=$(date +%s.%N)
  nearest=$(awk -v s="$start" -v e="$end" -v d=0.2 -v x="$during" 'BEGIN { printf "%.3f", e - s + d + x }')
  local answered
  answered=$(grep -c '"approximate": true' "$dir/nearest.json" || true)
  if ! kill -0 "$coordinator_pid" 2>/dev/null; then
    printf '%s | %s | coordinator exited: %s\n' "$label" "$exact" "$(tail -1 "$dir/coordinator.err")"
    return
  fi
  local again
  again=$(seconds "${lookup[@]}" "$work/misses.json" --nearest --json)
  printf '%s | %s | %s | %s | %s | %s | %s | %d of %d\n' "$label" "$exact" "$nearest" \
    "$(awk -v a="$nearest" -v b="$exact" 'BEGIN { printf "%.1f", a / b }')" "$again" "$idle" "$during" "$answered" "$k"
  kill "$coordinator_pid" 2>/dev/null || true
}

echo "knowledge base of $n entries; $k missing keys"
echo "build | exact lookup of the $k s | nearest lookup s | nearest / exact | the nearest lookup again s | 1-op lookup idle s | 1-op lookup during the nearest one s | answered"
run "$build/coordinator/tunefleet-coordinator" this
[[ -n $other ]] && run "$other" other
exit 0
