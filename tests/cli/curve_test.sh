#!/usr/bin/env bash
# CURVE end to end with the real binaries over TCP on 127.0.0.1 (DESIGN.md "Security"):
# keys from `tunefleet curve-keypair`; a worker and a client with listed keys tune and
# look up; a reader's key may look up but not submit; an unlisted key and a plaintext
# client get no answer while the coordinator keeps serving; a worker with an unlisted key
# is refused and logged, and still stops on SIGTERM; placeholder keys (the Helm chart's
# REPLACE_ME) make the coordinator and the worker refuse to start.
source "$(dirname "$0")/harness.sh"
OPS="$SRC/examples/matmul_small.json"

# Keys: the coordinator's folder lists the client and reader public keys; each peer gets
# a folder with server.public and its own pair.
K="$OUT/keys"  # made by the first curve-keypair, owner-only
for n in server worker client reader stranger; do
  "$TF" curve-keypair "$n" --dir "$K" > /dev/null || fail "curve-keypair $n"
done
[ "$(stat -c %a "$K/server.secret")" = 600 ] || fail "server.secret is not owner-only"
[ "$(stat -c %a "$K")" = 700 ] || fail "the key folder curve-keypair made is not owner-only"
"$TF" curve-keypair server --dir "$K" 2> "$OUT/err"
[ $? -eq 2 ] || fail "curve-keypair over an existing pair did not exit 2"
grep -q "exists" "$OUT/err" || fail "overwrite refusal does not say why: $(cat "$OUT/err")"
cp "$K/client.public" "$K/clients.public"
cp "$K/reader.public" "$K/readers.public"
peer() {  # peer DIR KEY_STEM: a client folder holding KEY_STEM's pair as client.*
  mkdir -p "$1"
  cp "$K/server.public" "$1/"
  cp "$K/$2.public" "$1/client.public"
  cp "$K/$2.secret" "$1/client.secret"
}
peer "$OUT/reader" reader
peer "$OUT/stranger" stranger

# Fail closed: the chart's placeholder or a missing folder stops both daemons.
P="$OUT/placeholder"
mkdir -p "$P"
for f in server.public server.secret worker.public worker.secret; do echo REPLACE_ME > "$P/$f"; done
: > "$P/clients.public"
: > "$P/readers.public"
TUNEFLEET_CURVE_ENABLED=true TUNEFLEET_CURVE_DIR="$P" timeout 10 "$BUILD/coordinator/tunefleet-coordinator" \
  --client-bind 'tcp://127.0.0.1:*' --worker-bind 'tcp://127.0.0.1:*' --metrics-port -1 --data-dir "$OUT/kb0" \
  > /dev/null 2> "$OUT/err"
[ $? -eq 2 ] || fail "coordinator with placeholder keys did not exit 2"
grep -q "server.public holds the placeholder REPLACE_ME" "$OUT/err" || fail "no placeholder message: $(cat "$OUT/err")"
TUNEFLEET_CURVE_ENABLED=true timeout 10 "$BUILD/worker/tunefleet-worker" --coordinator tcp://127.0.0.1:1 \
  > /dev/null 2> "$OUT/err"
[ $? -eq 2 ] || fail "worker with CURVE on and no key folder did not exit 2"
grep -q "TUNEFLEET_CURVE_DIR names no key folder" "$OUT/err" || fail "no folder message: $(cat "$OUT/err")"

# A CURVE coordinator and worker.
start_coordinator --curve-dir "$K"
grep -q "curve=on" "$OUT/coord.out" || fail "coordinator not ready with curve=on: $(cat "$OUT/coord.out")"
TUNEFLEET_CURVE_ENABLED=true TUNEFLEET_CURVE_DIR="$K" "$BUILD/worker/tunefleet-worker" --coordinator "$WK" --slots 2 \
  > "$OUT/worker.out" 2>&1 &
pids+=($!)

timeout 120 "$TF" submit "$OPS" --budget 30 --coordinator "$CL" --curve-dir "$K" --wait > "$OUT/submit.txt" \
  || fail "client submit exited $?: $(cat "$OUT/submit.txt")"
grep -q "evaluations        30 " "$OUT/submit.txt" || fail "submission did not spend 30 evaluations: $(cat "$OUT/submit.txt")"
timeout 30 "$TF" lookup "$OPS" --coordinator "$CL" --curve-dir "$OUT/reader" > /dev/null || fail "reader lookup exited $?"
timeout 30 "$TF" submit "$OPS" --budget 30 --coordinator "$CL" --curve-dir "$OUT/reader" 2> "$OUT/err"
[ $? -eq 2 ] || fail "a reader's submit did not exit 2 (bad input: fix the key lists)"
grep -q "PERMISSION_DENIED" "$OUT/err" || fail "reader submit: $(cat "$OUT/err")"
# A reader may export the knowledge base (a bulk lookup), not import into it.
timeout 30 "$TF" cache export --coordinator "$CL" --curve-dir "$OUT/reader" --out "$OUT/kb.jsonl" 2> "$OUT/err" \
  || fail "reader export exited $?: $(cat "$OUT/err")"
[ -s "$OUT/kb.jsonl" ] || fail "the reader's export is empty"
timeout 30 "$TF" cache import "$OUT/kb.jsonl" --coordinator "$CL" --curve-dir "$OUT/reader" 2> "$OUT/err"
[ $? -eq 2 ] || fail "a reader's import did not exit 2"
grep -q "PERMISSION_DENIED" "$OUT/err" || fail "reader import: $(cat "$OUT/err")"
timeout 30 "$TF" watch 1 --coordinator "$CL" --curve-dir "$OUT/reader" > /dev/null 2> "$OUT/err"
[ $? -eq 2 ] && grep -q "PERMISSION_DENIED" "$OUT/err" || fail "a reader watched a submission: $(cat "$OUT/err")"
timeout 30 "$TF" watch 1 --coordinator "$CL" --curve-dir "$K" > "$OUT/watch.txt" 2> "$OUT/err" \
  && grep -q "submission 1 finished: 1 op(s) tuned" "$OUT/watch.txt" || fail "a client's watch: $(cat "$OUT/err")"
timeout 30 "$TF" workers --coordinator "$CL" --curve-dir "$OUT/reader" > /dev/null 2> "$OUT/err"
[ $? -eq 2 ] && grep -q "PERMISSION_DENIED" "$OUT/err" || fail "a reader listed the workers: $(cat "$OUT/err")"
timeout 30 "$TF" workers --coordinator "$CL" --curve-dir "$K" --json > "$OUT/workers.json" \
  || fail "a client's workers exited $?"
grep -q '"slots": 2' "$OUT/workers.json" || fail "workers: $(cat "$OUT/workers.json")"
timeout 30 "$TF" cache import "$OUT/kb.jsonl" --coordinator "$CL" --curve-dir "$K" > /dev/null 2> "$OUT/err" \
  || fail "a client's import exited $?: $(cat "$OUT/err")"
timeout 30 "$TF" lookup "$OPS" --coordinator "$CL" --curve-dir "$OUT/stranger" --timeout-ms 1500 2> "$OUT/err"
[ $? -ne 0 ] || fail "an unlisted key was answered"
grep -q "clients.public or readers.public" "$OUT/err" || fail "unlisted key: $(cat "$OUT/err")"
timeout 30 "$TF" lookup "$OPS" --coordinator "$CL" --timeout-ms 1500 2> "$OUT/err"
[ $? -ne 0 ] || fail "a plaintext client was answered"
# Still serving after the refusals.
timeout 30 "$TF" lookup "$OPS" --coordinator "$CL" --curve-dir "$K" > "$OUT/lookup.txt" || fail "client lookup after refusals exited $?"
grep -q "tuned with  *auto (ils) (30 evaluations" "$OUT/lookup.txt" || fail "lookup after refusals (the entry names what auto chose): $(cat "$OUT/lookup.txt")"
# A worker whose key the coordinator does not list: refused and logged there, told here
# what to check, and it still stops on SIGTERM (its sends used to block forever).
S="$OUT/stranger-worker"
mkdir -p "$S"
cp "$K/server.public" "$S/"
cp "$K/stranger.public" "$S/worker.public"
cp "$K/stranger.secret" "$S/worker.secret"
"$BUILD/worker/tunefleet-worker" --coordinator "$WK" --slots 1 --heartbeat-ms 200 --curve-dir "$S" \
  > /dev/null 2> "$OUT/stranger.err" &
spid=$!
pids+=($spid)
for _ in $(seq 100); do grep -q "reconnecting" "$OUT/stranger.err" && break; sleep 0.1; done
grep -q "check that this worker's key pair is the one in its worker.public" "$OUT/stranger.err" \
  || fail "refused worker does not say what to check: $(cat "$OUT/stranger.err")"
grep -qF "curve: refused a tunefleet-workers peer from 127.0.0.1 with public key $(cat "$K/stranger.public")" "$OUT/coord.err" \
  || fail "coordinator did not log the refused worker key"
kill -TERM "$spid"
for _ in $(seq 50); do kill -0 "$spid" 2> /dev/null || break; sleep 0.1; done
kill -0 "$spid" 2> /dev/null && fail "a refused worker did not stop within 5 s of SIGTERM"
echo "curve: ok"
