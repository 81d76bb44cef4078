#!/usr/bin/env bash
# Ctrl-C (SIGINT) and SIGTERM end a waiting `tunefleet` within seconds, with exit 130 and
# a message saying how to pick the work up again (they used to be ignored: only SIGKILL
# stopped `status --wait`); the submission keeps running on the coordinator, and an
# interrupted `tune` resumes from its data folder on the next run.
source "$(dirname "$0")/harness.sh"
OPS="$SRC/examples/matmul_small.json"

# interrupt SIGNAL PID: sends it and returns the exit code, failing after 5 s.
interrupt() {
  kill "-$1" "$2"
  for _ in $(seq 50); do kill -0 "$2" 2> /dev/null || break; sleep 0.1; done
  kill -0 "$2" 2> /dev/null && fail "SIG$1 did not end pid $2 within 5 s"
  wait "$2"
}

# signalled SIGNAL NAME COMMAND...: runs it for a second (stdout in $OUT/NAME.out, stderr
# in $OUT/NAME.err), then signals it; it must exit 130.
signalled() {
  local sig="$1" name="$2"
  shift 2
  "$@" > "$OUT/$name.out" 2> "$OUT/$name.err" &
  local pid=$!
  pids+=($pid)
  sleep 1
  catches_signal $pid "$sig" || fail "$* never handles SIG$sig"
  interrupt "$sig" $pid
  local rc=$?
  [ $rc -eq 130 ] || fail "$* after SIG$sig exited $rc, not 130: $(cat "$OUT/$name.err")"
}

# interrupted SIGNAL NAME COMMAND...: signalled, and it says on stderr how to follow the
# submission again.
interrupted() {
  local sig="$1" name="$2" err="$OUT/$2.err"
  shift 2
  signalled "$sig" "$name" "$@"
  grep -q "submission 1 keeps running on the coordinator: \`tunefleet status 1 --wait\` follows it again" "$err" \
    || fail "$* after SIG$sig: $(cat "$err")"
}

# A coordinator with no worker: every --wait waits until interrupted.
start_coordinator
interrupted INT submit "$TF" submit "$OPS" --budget 20 --coordinator "$CL" --wait
grep -q "^submission 1: waiting for its tasks" "$OUT/submit.err" || fail "submit --wait did not name its submission first"
interrupted TERM status "$TF" status 1 --wait --coordinator "$CL"
# watch follows it again, and stops on SIGINT the same way.
signalled INT watch "$TF" watch 1 --coordinator "$CL"
grep -q "submission 1 keeps running: \`tunefleet watch 1\` follows it again" "$OUT/watch.err" \
  || fail "watch after SIGINT: $(cat "$OUT/watch.err")"
grep -q "submission 1: 1 task(s)" "$OUT/watch.out" || fail "watch did not say what it follows: $(cat "$OUT/watch.out")"
# Ctrl-C is heard also while a request waits on a coordinator that does not answer (it
# used to wait out the 10 s reply timeout and exit 1).
kill -STOP "${pids[0]}"
for cmd in "watch 1" "status 1 --wait"; do
  # shellcheck disable=SC2086
  "$TF" $cmd --coordinator "$CL" > /dev/null 2> "$OUT/stuck.err" &
  spid=$!
  pids+=($spid)
  sleep 1
  start=$(date +%s%N)
  interrupt INT $spid
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [ $rc -eq 130 ] || fail "$cmd on a stopped coordinator exited $rc after SIGINT, not 130: $(cat "$OUT/stuck.err")"
  [ $ms -lt 3000 ] || fail "$cmd took $ms ms to stop after SIGINT"
done
kill -CONT "${pids[0]}"
"$TF" status 1 --json --coordinator "$CL" > "$OUT/status.json" || fail "status after the interrupts exited $?"
# No worker has joined: the task waits, queued, for one that serves its SoC.
grep -q '"state": *"queued"' "$OUT/status.json" || fail "the submission did not stay queued: $(cat "$OUT/status.json")"
grep -q '"done": *false' "$OUT/status.json" || fail "status --json does not say the submission is not done: $(cat "$OUT/status.json")"
"$TF" status 1 --coordinator "$CL" | grep -q "submission 1: queued (no worker serving its SoC" \
  || fail "status does not say the submission is queued"
grep -q '"name": *"small.proj"' "$OUT/status.json" || fail "status does not name the op as the ops file did: $(cat "$OUT/status.json")"

# tune: interrupted while measuring (the model-based search takes seconds for 3000), then
# run again: it resumes the task from RocksDB and spends exactly the budget.
"$TF" tune "$OPS" --strategy model --budget 3000 --data-dir "$OUT/tune" > "$OUT/tune.out" 2> "$OUT/tune.err" &
tpid=$!
pids+=($tpid)
for _ in $(seq 100); do grep -q "tunefleet tune:" "$OUT/tune.out" && break; sleep 0.1; done
sleep 0.5
interrupt INT $tpid
rc=$?
if [ $rc -eq 130 ]; then
  grep -q "run the same command again to continue" "$OUT/tune.err" || fail "tune after SIGINT: $(cat "$OUT/tune.err")"
  timeout 300 "$TF" tune "$OPS" --strategy model --budget 3000 --data-dir "$OUT/tune" > "$OUT/tune2.out" \
    2> "$OUT/tune.err" || fail "tune after the interrupt exited $?: $(cat "$OUT/tune.err")"
  grep -q "evaluations        3000 " "$OUT/tune2.out" || fail "resumed tune did not spend exactly 3000: $(cat "$OUT/tune2.out")"
else
  # Finished before the signal on a fast machine: then it must have succeeded.
  [ $rc -eq 0 ] || fail "tune exited $rc: $(cat "$OUT/tune.err")"
fi
# Commands that only compute (profile, fuse, report) end at once on SIGINT with 130 too
# (they used to run to the end): fuse of a 1,000-node chain on one thread runs about 3 s,
# a candidate fusion at a time (on two, 1.2 s: the signal after one second came after it
# ended on a fast run). It writes no fused graph, whole or half.
{
  printf '{"name": "chain", "soc": "Ascend910B2", "inputs": [{"name": "x", "shape": [256, 256], "dtype": "float16"}],'
  printf ' "weights": [{"name": "w", "shape": [256, 256], "dtype": "float16"}], "outputs": ["t999"], "nodes": ['
  prev=x
  for ((i = 0; i < 1000; i++)); do
    ((i)) && printf ','
    op=Relu inputs="\"$prev\""
    ((i % 10 == 0)) && op=MatMul inputs="\"$prev\", \"w\""
    printf '{"name": "n%d", "op": "%s", "inputs": [%s], "outputs": [{"name": "t%d", "shape": [256, 256], "dtype": "float16"}]}' \
      "$i" "$op" "$inputs" "$i"
    prev=t$i
  done
  printf ']}\n'
} > "$OUT/chain.json"
signalled INT fuse "$TF" fuse "$OUT/chain.json" --threads 1 -o "$OUT/chain_fused.json"
grep -q "^tunefleet: interrupted" "$OUT/fuse.err" || fail "fuse after SIGINT: $(cat "$OUT/fuse.err")"
ls "$OUT" | grep -q chain_fused && fail "an interrupted fuse left $(ls "$OUT" | grep chain_fused)"
echo "signals: ok"
