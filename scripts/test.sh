#!/usr/bin/env bash
# README command 2 (and CI's): installs what is missing, builds everything, and runs
# every test with ctest (unit, multi-process, README quick start, Helm chart).
# CI=true turns warnings into errors. TUNEFLEET_BUILD_DIR picks the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/helm.sh >/dev/null
build=${TUNEFLEET_BUILD_DIR:-build}
werror=OFF
if [[ ${CI:-} == true ]]; then werror=ON; fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUNEFLEET_WERROR=$werror
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j 2 --timeout 900
