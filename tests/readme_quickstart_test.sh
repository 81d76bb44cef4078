#!/usr/bin/env bash
# Runs the README's first command on a small example in a fresh data folder and checks
# that it exits 0 and prints the best config, both latencies and an improvement.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
out=$(bash "$root/scripts/quickstart.sh" examples/matmul_small.json --data-dir "$data/db")
rc=$?
echo "$out"
fail=0
check() { if ! grep -Eq "$1" <<<"$out"; then echo "FAIL: output lacks /$1/"; fail=1; fi; }
[[ $rc -eq 0 ]] || { echo "FAIL: exit code $rc"; fail=1; }
check '^  best config +baseM='
check '^  best latency +[0-9.]+ us'
check '^  default latency +[0-9.]+ us'
check '^  improvement +[0-9.]+x'
exit $fail
