#!/usr/bin/env bash
# bench/strategies (issue 4), one command: builds strategy_bench, runs Optuna's TPE and
# random samplers (bench/strategies_optuna.py, Debian's python3-optuna) and tunefleet's
# strategies on the shared Kernel Tuner caches, and prints the table side by side.
#   bash bench/strategies.sh [--datasets conv,pnpoly] [--seeds N] [--no-optuna] [--out FILE]
#                            [strategy_bench flags, e.g. --strategies auto,random]
# TUNEFLEET_BUILD_DIR picks the build folder (default: build). Optuna's figures are
# deterministic per seed, so they are cached in $build/bench/optuna-<datasets>-s<N>.json
# and reused until the script or the datasets change (delete the file to recompute);
# a cached full run serves every --datasets filter.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TUNEFLEET_BUILD_DIR:-build}
datasets_dir=${TUNEFLEET_DATASETS_DIR:-$(cd .. && pwd)/shared/datasets}
datasets="" seeds=20 optuna=1 out=""
rest=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --datasets) datasets=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --no-optuna) optuna=0; shift ;;
    --out) out=$2; shift 2 ;;
    *) rest+=("$1"); shift ;;
  esac
done
out=${out:-$build/bench/strategies.json}
start=$(date +%s)

bash scripts/install-deps.sh >&2
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$build" --target strategy_bench >&2

optuna_args=()
if ((optuna)); then
  fresh() { [[ -f $1 && ! bench/strategies_optuna.py -nt $1 && ! $datasets_dir -nt $1 ]]; }
  cache="$build/bench/optuna-${datasets:-all}-s$seeds.json"
  cache=${cache//,/+}
  # A full run's figures serve any --datasets filter (strategy_bench ignores the rest).
  if ! fresh "$cache" && fresh "$build/bench/optuna-all-s$seeds.json"; then
    cache="$build/bench/optuna-all-s$seeds.json"
  fi
  if ! fresh "$cache"; then
    echo "strategies.sh: Optuna TPE + random, $seeds seeds x 400 trials per dataset (TPE takes minutes) ..." >&2
    /usr/bin/python3 bench/strategies_optuna.py --datasets-dir "$datasets_dir" --datasets "$datasets" \
      --seeds "$seeds" --out "$cache.tmp"
    mv "$cache.tmp" "$cache"
  else
    echo "strategies.sh: reusing Optuna figures from $cache" >&2
  fi
  optuna_args=(--optuna "$cache")
fi

"$build/bench/strategy_bench" --datasets-dir "$datasets_dir" --datasets "$datasets" --seeds "$seeds" \
  --out "$out" "${optuna_args[@]}" "${rest[@]}"
echo "strategies.sh: figures in $out; wall time $(( $(date +%s) - start )) s"
