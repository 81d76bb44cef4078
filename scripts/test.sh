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

# CI also runs the C++ suites under AddressSanitizer + UndefinedBehaviorSanitizer
# (TUNEFLEET_SANITIZE), child processes included. TUNEFLEET_SKIP_SANITIZE=1 skips it.
if [[ ${CI:-} == true && -z ${TUNEFLEET_SKIP_SANITIZE:-} ]]; then
  asan=${build}-asan
  cmake -S . -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUNEFLEET_WERROR=ON \
    -DTUNEFLEET_SANITIZE=ON -DTUNEFLEET_BUILD_BENCH=OFF
  cmake --build "$asan" -j "$(nproc)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$asan" --output-on-failure -j 2 --timeout 900 -E '^(readme_quickstart|helm_chart)$'
fi
