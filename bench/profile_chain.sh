#!/usr/bin/env bash
# How `tunefleet profile` and `fuse` scale with a graph's size: a chain of N nodes
# (default 20,000; a 256x256 fp16 MatMul every 10th node, Relu between), profiled for
# inference and for a training step, timed with its peak memory; then `fuse` of the same
# chain when N is at most FUSE_MAX (default 2,000: fuse runs the graph once per candidate
# fusion, so it grows as N^2). Give a second tunefleet binary (the build before a change)
# to run it side by side; the outputs are compared too.
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

# run COMMAND TUNEFLEET LABEL [FLAGS...]: prints one line, the output in $work/LABEL.out
# (for fuse, the fused graph in $work/LABEL.json too).
run() {
  local command=$1 bin=$2 label=$3
  shift 3
  local extra=()
  [[ $command == fuse ]] && extra=(-o "$work/$label.json")
  /usr/bin/time -f '%e %M' -o "$work/$label.time" "$bin" "$command" "$work/chain.json" "${extra[@]}" "$@" |
    sed "s#$work/$label.json#FUSED#g" > "$work/$label.out"
  read -r seconds kb < "$work/$label.time"
  printf '%s %s | %s | %.2f | %d\n' "$command" "$label" "${*:-inference}" "$seconds" $((kb / 1024))
}

# side COMMAND [FLAGS...]: this build, then the other one, outputs compared.
side() {
  local command=$1
  shift
  run "$command" "$build/cli/tunefleet" "this" "$@"
  if [[ -n $other ]]; then
    run "$command" "$other" "other" "$@"
    if cmp -s "$work/this.out" "$work/other.out" &&
      { [[ $command != fuse ]] || cmp -s "$work/this.json" "$work/other.json"; }; then
      echo "(same output)"
    else
      echo "(outputs differ)"
    fi
  fi
}

echo "command of a $n-node chain | step | seconds | peak MB"
for mode in "" --training; do
  side profile $mode
done
if ((n <= ${FUSE_MAX:-2000})); then
  side fuse
else
  echo "fuse skipped: $n nodes > FUSE_MAX=${FUSE_MAX:-2000}"
fi
