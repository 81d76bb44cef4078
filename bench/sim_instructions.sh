#!/usr/bin/env bash
# Instructions per fast-path MatMul evaluation under callgrind: runs sim_instructions
# with 1 and 11 repetitions of 1000 configs and divides the difference by 10,000.
#   bash bench/sim_instructions.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
bin=$build/bench/sim_instructions
total() {
  local out; out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" "$1" >/dev/null 2>&1
  callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
  rm -f "$out"
}
one=$(total 1)
eleven=$(total 11)
per=$(( (eleven - one) / 10000 ))
echo "instructions per EstimateMatmul evaluation: $per (callgrind, 10,000 evaluations)"
