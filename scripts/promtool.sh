#!/usr/bin/env bash
# Prints the path to a promtool binary (Prometheus's rule checker), fetching one first if
# none is found.
#
# Debian ships promtool only inside its `prometheus` package, whose installation would
# also start a Prometheus server on port 9090. This script downloads that package with
# `apt-get download` (no installation, no root needed once apt's lists are there) and
# extracts promtool into a cache folder. Idempotent: once there, it only prints the path.
# Everything but the final path goes to stderr, so `PROMTOOL=$(scripts/promtool.sh)` works.
#
#   TUNEFLEET_PROMTOOL    use this promtool binary as is (skips everything else)
#   TUNEFLEET_TOOLS_DIR   cache folder (default: $HOME/.cache/tunefleet-tools)
set -euo pipefail

log() { echo "promtool.sh: $*" >&2; }

if [[ -n ${TUNEFLEET_PROMTOOL:-} ]]; then
  [[ -x $TUNEFLEET_PROMTOOL ]] || { log "TUNEFLEET_PROMTOOL=$TUNEFLEET_PROMTOOL is not executable"; exit 1; }
  echo "$TUNEFLEET_PROMTOOL"
  exit 0
fi

tools_dir=${TUNEFLEET_TOOLS_DIR:-${HOME:-/root}/.cache/tunefleet-tools}
bin=$tools_dir/bin/promtool
works() { [[ -x $1 ]] && "$1" --version >/dev/null 2>&1; }

if works "$bin"; then
  echo "$bin"
  exit 0
fi
if on_path=$(command -v promtool 2>/dev/null) && works "$on_path"; then
  echo "$on_path"
  exit 0
fi

command -v apt-get >/dev/null || { log "apt-get not found: install Prometheus's promtool and set TUNEFLEET_PROMTOOL"; exit 1; }
mkdir -p "$tools_dir/bin"
exec 9>"$tools_dir/.promtool.lock"  # serialise concurrent fetches (parallel ctest runs)
if command -v flock >/dev/null; then flock 9; fi
if works "$bin"; then
  echo "$bin"
  exit 0
fi
scratch=$(mktemp -d)
chmod 755 "$scratch"  # apt-get download fetches as the _apt user where it can
trap 'rm -rf "$scratch"' EXIT
log "fetching Debian's prometheus package for its promtool"
if ! (cd "$scratch" && apt-get download -q prometheus >&2); then
  # A fresh machine may have no package lists yet.
  [[ $(id -u) -eq 0 ]] || { log "apt-get download prometheus failed; run apt-get update (as root) first"; exit 1; }
  apt-get update -q >&2
  (cd "$scratch" && apt-get download -q prometheus >&2)
fi
dpkg-deb -x "$scratch"/prometheus_*.deb "$scratch/root"
install -m 0755 "$scratch/root/usr/bin/promtool" "$bin"
works "$bin" || { log "the extracted promtool does not run"; exit 1; }
echo "$bin"
