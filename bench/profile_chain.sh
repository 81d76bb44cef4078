#!/usr/bin/env bash
# How `tunefleet profile` scales with a graph's size: a chain of N nodes (default 20,000;
# a 256x256 fp16 MatMul every 10th node, Relu between), profiled for inference and for a
# training step, timed with its peak memory. Give a second tunefleet binary (the build
# before a change) to run it side by side; the outputs are compared too.
#   bash bench/profile_chain.sh [N] [OTHER_TUNEFLEET]   (TUNEFLEET_BUILD_DIR picks the build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TUNEFLEET_BUILD_DIR:-build}
n=${1:-20000}
other=${2:-}
source bench/lib.sh
bench_scratch

# The chain: x -> n0 (MatMul by w) -> n1 (Relu) -> ... -> t<N-1>.
{
  printf '{"name": "chain%d", "soc": "Ascend910B2", "inputs": [{"name": "x", "shape": [256, 256], "dtype": "float16"}],' "$n"
  printf ' "weights": [{"name": "w", "shape": [256, 256], "dtype": "float16"}], "outputs": ["t%d"], "nodes": [' $((n - 1))
  prev=x
  for ((i = 0; i < n; i++)); do
    ((i)) && printf ','
    if ((i % 10 == 0)); then
      printf '{"name": "n%d", "op": "MatMul", "inputs": ["%s", "w"], ' "$i" "$prev"
    else
      printf '{"name": "n%d", "op": "Relu", "inputs": ["%s"], ' "$i" "$prev"
    fi
    printf '"outputs": [{"name": "t%d", "shape": [256, 256], "dtype": "float16"}]}' "$i"
    prev=t$i
  done
  printf ']}\n'
} > "$work/chain.json"

# run TUNEFLEET LABEL [FLAGS...]: prints one line, the output in $work/LABEL.out.
run() {
  local bin=$1 label=$2
  shift 2
  /usr/bin/time -f '%e %M' -o "$work/$label.time" "$bin" profile "$work/chain.json" "$@" > "$work/$label.out"
  read -r seconds kb < "$work/$label.time"
  printf '%s | %s | %.2f | %d\n' "$label" "${*:-inference}" "$seconds" $((kb / 1024))
}

echo "profile of a $n-node chain | step | seconds | peak MB"
for mode in "" --training; do
  run "$build/cli/tunefleet" "this" $mode
  if [[ -n $other ]]; then
    run "$other" "other" $mode
    cmp -s "$work/this.out" "$work/other.out" && echo "(same output)" || echo "(outputs differ)"
  fi
done
