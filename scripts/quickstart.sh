#!/usr/bin/env bash
# README command 1: installs what is missing, builds the CLI, and runs `tunefleet tune`
# on an example (default: the MatMuls of a BERT-base layer) in embedded mode:
# coordinator + 2 worker slots in one process over inproc://, RocksDB in ./tunefleet-data.
#   bash scripts/quickstart.sh [OPS_JSON] [tunefleet tune flags...]
# TUNEFLEET_BUILD_DIR picks the build folder (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >&2
build=${TUNEFLEET_BUILD_DIR:-build}
# Configure only a fresh folder: an existing one keeps its own settings (tests reuse it).
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$build" --target tunefleet >&2
ops=examples/bert_base_matmuls.json
if [[ $# -gt 0 && $1 != -* ]]; then ops=$1; shift; fi
exec "$build/cli/tunefleet" tune "$ops" "$@"
