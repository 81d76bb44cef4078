# Sourced by the CLI tests that run the real binaries: the build and source folders, a
# scratch folder removed on exit with every background process the test started (add
# their pids to `pids`), `fail`, and `start_coordinator`.
set -uo pipefail
BUILD="${TUNEFLEET_BUILD_DIR:?set TUNEFLEET_BUILD_DIR to the build folder}"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TF="$BUILD/cli/tunefleet"
OUT="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null; done
  wait 2> /dev/null
  rm -rf "$OUT"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$OUT/coord.err" ] && sed 's/^/coordinator: /' "$OUT/coord.err" >&2; exit 1; }

# catches_signal PID SIGNAL: waits up to 10 s until PID handles SIGNAL (INT, TERM): a
# handler (SigCgt) or, as TerminationWatcher does, the signal blocked for sigwait (SigBlk).
# Sent before that, the signal ends the process by its default action, which under load (a
# process still starting after a second) is not the test's point; 1 when it never does.
catches_signal() {
  local pid=$1 bit mask
  bit=$(( 1 << ($(kill -l "$2") - 1) ))
  for _ in $(seq 100); do
    for mask in $(awk '/^Sig(Cgt|Blk):/ {print $2}' "/proc/$pid/status" 2> /dev/null); do
      (( 0x$mask & bit )) && return 0
    done
    sleep 0.1
  done
  return 1
}

# start_coordinator [FLAGS...]: a coordinator on 127.0.0.1 ports the kernel picks, data in
# $OUT/kb, output in $OUT/coord.out and .err; sets CL and WK, its client and worker endpoints.
start_coordinator() {
  "$BUILD/coordinator/tunefleet-coordinator" --client-bind 'tcp://127.0.0.1:*' --worker-bind 'tcp://127.0.0.1:*' \
    --metrics-port -1 --data-dir "$OUT/kb" "$@" > "$OUT/coord.out" 2> "$OUT/coord.err" &
  pids+=($!)
  for _ in $(seq 100); do grep -q ready "$OUT/coord.out" && break; sleep 0.1; done
  CL=$(grep -o 'client=[^ ]*' "$OUT/coord.out" | cut -d= -f2)
  WK=$(grep -o 'worker=[^ ]*' "$OUT/coord.out" | cut -d= -f2)
  [ -n "$CL" ] || fail "coordinator not ready: $(cat "$OUT/coord.out")"
}
