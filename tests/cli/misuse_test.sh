#!/usr/bin/env bash
# Processes pointed at the wrong thing say so and what to give instead, rather than
# retrying forever: a worker given the coordinator's client endpoint (it used to log
# "unexpected message kind" once a second, for ever), and a client given its worker
# endpoint (it waited out its timeout, asking whether the coordinator runs).
# And `lookup --data-dir` on a folder a coordinator has open reads it anyway (it used to
# fail with "in use by another process").
source "$(dirname "$0")/harness.sh"
OPS="$SRC/examples/matmul_small.json"

timeout 120 "$TF" tune "$OPS" --data-dir "$OUT/kb" --budget 5 > /dev/null || fail "tune exited $?"
start_coordinator
timeout 30 "$TF" lookup "$OPS" --data-dir "$OUT/kb" --json > "$OUT/lookup.json" \
  || fail "lookup --data-dir beside a running coordinator exited $?: $(cat "$OUT/lookup.json")"
grep -q '"evaluations": 5' "$OUT/lookup.json" || fail "lookup --data-dir: $(cat "$OUT/lookup.json")"
timeout 20 "$BUILD/worker/tunefleet-worker" --coordinator "$CL" > "$OUT/worker.out" 2> "$OUT/worker.err"
rc=$?
[ $rc -eq 2 ] || fail "a worker at the client endpoint exited $rc, not 2: $(cat "$OUT/worker.err")"
grep -qF "$CL is a coordinator's client endpoint" "$OUT/worker.err" || fail "worker: $(cat "$OUT/worker.err")"
grep -qF "give --coordinator its worker endpoint" "$OUT/worker.err" || fail "worker: $(cat "$OUT/worker.err")"
# A client given the worker endpoint is told so at once (it used to wait out its timeout).
timeout 20 "$TF" status 1 --coordinator "$WK" > /dev/null 2> "$OUT/client.err"
rc=$?
[ $rc -eq 2 ] || fail "a client at the worker endpoint exited $rc, not 2: $(cat "$OUT/client.err")"
grep -qF "this is the coordinator's worker endpoint: submit, status, cancel and lookup go to its client endpoint" \
  "$OUT/client.err" || fail "client: $(cat "$OUT/client.err")"
# A refused request is in the coordinator's log without -v (it was silent), so an
# operator sees why a user's command failed.
"$TF" status 99 --coordinator "$CL" > /dev/null 2>&1 && fail "status of a submission that does not exist succeeded"
for _ in $(seq 20); do grep -q "refused a status request" "$OUT/coord.err" && break; sleep 0.1; done
grep -q "coordinator: refused a status request: NOT_FOUND" "$OUT/coord.err" || fail "the refused request is not logged: $(cat "$OUT/coord.err")"
# `cancel` stops a submission no worker has served yet; an unknown id is bad input.
sub=$("$TF" submit "$OPS" --coordinator "$CL" --budget 50 --force | sed -n 's/^submission //p')
[ -n "$sub" ] || fail "submit printed no submission id"
"$TF" cancel "$sub" --coordinator "$CL" > "$OUT/cancel.out" 2>&1 || fail "cancel exited $?: $(cat "$OUT/cancel.out")"
grep -qE "^submission $sub: [1-9][0-9]* task\(s\) cancelled$" "$OUT/cancel.out" || fail "cancel: $(cat "$OUT/cancel.out")"
"$TF" status "$sub" --coordinator "$CL" --json > "$OUT/cancelled.json"
rc=$?
[ $rc -eq 4 ] || fail "status of a cancelled submission exited $rc, not 4 (ended without a config)"
grep -q '"state": *"cancelled"' "$OUT/cancelled.json" || fail "status after cancel: $(cat "$OUT/cancelled.json")"
grep -q '"state": *"\(queued\|running\)"' "$OUT/cancelled.json" && fail "a task survived the cancel: $(cat "$OUT/cancelled.json")"
"$TF" status "$sub" --coordinator "$CL" > "$OUT/cancelled.txt"
grep -q "cancelled before a config succeeded (0 evaluated, 0 failed)" "$OUT/cancelled.txt" || fail "status text: $(cat "$OUT/cancelled.txt")"
"$TF" cancel 999 --coordinator "$CL" > /dev/null 2> "$OUT/cancel.err"
rc=$?
[ $rc -eq 2 ] || fail "cancel of an unknown submission exited $rc, not 2"
grep -qF "no submission 999" "$OUT/cancel.err" || fail "cancel 999: $(cat "$OUT/cancel.err")"
# A submission's priority is shown back by status; one out of range is bad input.
sub=$("$TF" submit "$OPS" --coordinator "$CL" --budget 50 --force --priority 7 | sed -n 's/^submission //p')
[ -n "$sub" ] || fail "submit --priority 7 printed no submission id"
"$TF" status "$sub" --coordinator "$CL" --json > "$OUT/priority.json"
grep -q '"priority": 7' "$OUT/priority.json" || fail "status does not show the priority: $(head -c 300 "$OUT/priority.json")"
"$TF" status "$sub" --coordinator "$CL" | grep -q "^submission $sub: .*(priority 7)$" || fail "status text shows no priority"
"$TF" cancel "$sub" --coordinator "$CL" > /dev/null || fail "cancel of the priority-7 submission exited $?"
"$TF" submit "$OPS" --coordinator "$CL" --priority 5000 > /dev/null 2>&1
[ $? -eq 2 ] || fail "--priority 5000 was not refused with exit 2"
# A stall limit an idle loop (one turn per 20 ms) would trip is refused, as bad input.
"$BUILD/coordinator/tunefleet-coordinator" --loop-stall-limit-ms 20 --metrics-port -1 --data-dir "$OUT/never" \
  > /dev/null 2> "$OUT/limit.err"
rc=$?
[ $rc -eq 2 ] || fail "--loop-stall-limit-ms 20 exited $rc, not 2: $(cat "$OUT/limit.err")"
grep -qF "give 0 (off) or 200 to 3600000 ms" "$OUT/limit.err" || fail "limit: $(cat "$OUT/limit.err")"
# The coordinator keeps serving clients.
"$TF" lookup "$OPS" --coordinator "$CL" > /dev/null || fail "the coordinator did not answer a lookup after the misdirected worker"
echo "misuse: ok"
