#!/usr/bin/env bash
# `tunefleet watch` against a real coordinator and worker: every task's start, its better
# configs in order and its end arrive as events (JSON Lines with --json), the last best
# matches what status reports, the exit code follows the outcome (0 tuned, 4 cancelled,
# 2 unknown submission), and `submit --watch` follows what it submitted.
source "$(dirname "$0")/harness.sh"
PY=/usr/bin/python3
cat > "$OUT/ops.json" <<'OPS'
{"soc": "Ascend910B2", "ops": [
  {"name": "proj", "op": "MatMul", "inputs": [{"shape": [256, 128], "dtype": "float16"}, {"shape": [128, 256], "dtype": "float16"}]},
  {"name": "up", "op": "MatMul", "inputs": [{"shape": [512, 128], "dtype": "float16"}, {"shape": [128, 256], "dtype": "float16"}]},
  {"name": "proj.again", "op": "MatMul", "inputs": [{"shape": [256, 128], "dtype": "float16"}, {"shape": [128, 256], "dtype": "float16"}]}
]}
OPS

start_coordinator
# Submitted before any worker runs, so the watch below sees each task start.
SUB=$(timeout 30 "$TF" submit "$OUT/ops.json" --budget 80 --strategy random --job-size 10 --coordinator "$CL" --json \
  | $PY -c 'import json,sys; print(json.load(sys.stdin)["submission_id"])') || fail "submit failed"
timeout 60 "$TF" watch "$SUB" --json --coordinator "$CL" > "$OUT/watch.jsonl" 2> "$OUT/watch.err" &
wpid=$!
pids+=($wpid)
sleep 0.5
kill -0 $wpid 2> /dev/null || fail "watch ended before any worker ran: $(cat "$OUT/watch.err")"
"$BUILD/worker/tunefleet-worker" --coordinator "$WK" --slots 2 > "$OUT/worker.out" 2>&1 &
worker_pid=$!
pids+=($worker_pid)
wait $wpid || fail "watch of a submission whose ops were tuned exited $?: $(cat "$OUT/watch.err")"
timeout 30 "$TF" status "$SUB" --json --coordinator "$CL" > "$OUT/status.json" || fail "status exited $?"

$PY - "$OUT/watch.jsonl" "$OUT/status.json" <<'CHECK' || fail "watch events: $(cat "$OUT/watch.jsonl")"
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
status = json.load(open(sys.argv[2]))
assert events[-1]["event"] == "end" and events[-1]["done"] == 3, events[-1]
by_task = {}
for e in events[:-1]:
    by_task.setdefault(e["task_id"], []).append(e)
seqs = [e["seq"] for e in events[:-1]]
assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "events out of order or repeated"
assert len(by_task) == 2, f"two distinct ops, two tasks: {sorted(by_task)}"
best = {t["task_id"]: t["best_latency_us"] for t in status["tasks"]}
for task, es in by_task.items():
    kinds = [e["event"] for e in es]
    assert kinds[0] == "started" and kinds[-1] == "finished", kinds
    assert set(kinds[1:-1]) == {"improved"}, kinds
    lat = [e["best_latency_us"] for e in es if e["event"] == "improved"]
    assert all(a > b for a, b in zip(lat, lat[1:])), f"improvements must be strictly faster: {lat}"
    assert es[-1]["state"] == "done" and es[-1]["evaluated"] == 80, es[-1]
    assert abs(es[-1]["best_latency_us"] - lat[-1]) < 1e-9 and abs(lat[-1] - best[task]) < 1e-9, (lat, best)
ops = {e["op"] for e in events[:-1]}
assert "proj, proj.again" in ops and "up" in ops, ops
CHECK

# Text: once finished, a watch replays what the coordinator kept and ends at once.
timeout 30 "$TF" watch "$SUB" --coordinator "$CL" > "$OUT/watch.txt" || fail "text watch exited $?"
grep -q "task .*started     up" "$OUT/watch.txt" || fail "no start line naming the op: $(cat "$OUT/watch.txt")"
grep -q "done: best .* us (.*x over the default) after 80 evaluations" "$OUT/watch.txt" \
  || fail "no end line with the best and its gain: $(cat "$OUT/watch.txt")"
grep -q "submission $SUB finished: 3 op(s) tuned, 0 failed, 0 cancelled" "$OUT/watch.txt" \
  || fail "no closing line: $(cat "$OUT/watch.txt")"

# submit --watch: a cancelled submission (queued: the worker is gone) ends the watch with exit 4.
kill $worker_pid
wait $worker_pid 2> /dev/null
timeout 60 "$TF" submit "$SRC/examples/matmul_small.json" --budget 20 --watch --force --coordinator "$CL" \
  > "$OUT/cancelled.txt" 2> "$OUT/cancelled.err" &
spid=$!
pids+=($spid)
for _ in $(seq 50); do grep -q "^submission [0-9]*$" "$OUT/cancelled.txt" && break; sleep 0.1; done
CSUB=$(sed -n 's/^submission \([0-9]*\)$/\1/p' "$OUT/cancelled.txt")
[ -n "$CSUB" ] || fail "submit --watch printed no submission id: $(cat "$OUT/cancelled.txt" "$OUT/cancelled.err")"
timeout 30 "$TF" cancel "$CSUB" --coordinator "$CL" > /dev/null || fail "cancel exited $?"
wait $spid
rc=$?
[ $rc -eq 4 ] || fail "submit --watch of a cancelled submission exited $rc, not 4: $(cat "$OUT/cancelled.err")"
grep -q "cancelled without a config that ran" "$OUT/cancelled.txt" || fail "no cancel line: $(cat "$OUT/cancelled.txt")"
grep -q "0 op(s) tuned, 0 failed, 1 cancelled" "$OUT/cancelled.txt" || fail "closing line: $(cat "$OUT/cancelled.txt")"

# report against the coordinator's knowledge base: a graph whose MatMul is `proj`'s op.
cat > "$OUT/graph.json" <<'GRAPH'
{"name": "proj_relu", "soc": "Ascend910B2",
 "inputs": [{"name": "x", "shape": [256, 128], "dtype": "float16"}],
 "weights": [{"name": "w", "shape": [128, 256], "dtype": "float16"}],
 "outputs": ["y"],
 "nodes": [{"name": "proj", "op": "MatMul", "inputs": ["x", "w"], "outputs": [{"name": "h", "shape": [256, 256], "dtype": "float16"}]},
           {"name": "act", "op": "Relu", "inputs": ["h"], "outputs": [{"name": "y", "shape": [256, 256], "dtype": "float16"}]}]}
GRAPH
timeout 30 "$TF" report "$OUT/graph.json" --coordinator "$CL" --json > "$OUT/report.json" || fail "report via the coordinator exited $?"
$PY - "$OUT/report.json" "$OUT/status.json" <<'CHECK' || fail "report via the coordinator: $(cat "$OUT/report.json")"
import json, sys
r, status = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert r["tuned_kernel_nodes"] == 1 and r["untuned_operators"] == ["act"], r
(proj,) = r["repo_modified_operators"]
tuned = next(t for t in status["tasks"] if t["name"] == "proj")
assert proj["op_name"] == "proj" and proj["performance_after(us)"] <= proj["performance_before(us)"], proj
CHECK

# A watch outlives a coordinator restart: it says the coordinator does not answer, asks
# again, is told of the gap (the old process's events are gone) and follows to the end.
timeout 30 "$TF" submit "$SRC/examples/matmul_small.json" --budget 30 --force --coordinator "$CL" > "$OUT/rsub.txt" \
  || fail "submit before the restart exited $?"
RSUB=$(sed -n 's/^submission \([0-9]*\)$/\1/p' "$OUT/rsub.txt")
timeout 120 "$TF" watch "$RSUB" --json --timeout-ms 2000 --coordinator "$CL" > "$OUT/rwatch.jsonl" 2> "$OUT/rwatch.err" &
rwpid=$!
pids+=($rwpid)
sleep 1.5  # past its first (held, empty) turn: it holds a position of this process
kill -9 "${pids[0]}"
wait "${pids[0]}" 2> /dev/null
"$BUILD/coordinator/tunefleet-coordinator" --client-bind "$CL" --worker-bind "$WK" --metrics-port -1 \
  --data-dir "$OUT/kb" > "$OUT/coord2.out" 2> "$OUT/coord2.err" &
pids+=($!)
"$BUILD/worker/tunefleet-worker" --coordinator "$WK" --slots 2 > "$OUT/worker2.out" 2>&1 &
pids+=($!)
wait $rwpid || fail "watch across a restart exited $?: $(cat "$OUT/rwatch.err")"
grep -q "the coordinator does not answer; still trying" "$OUT/rwatch.err" || fail "no retry note: $(cat "$OUT/rwatch.err")"
grep -q '"event":"gap"' "$OUT/rwatch.jsonl" || fail "no gap after the restart: $(cat "$OUT/rwatch.jsonl")"
grep -q '"event":"finished"' "$OUT/rwatch.jsonl" && tail -1 "$OUT/rwatch.jsonl" | grep -q '"done":1' \
  || fail "the watch did not follow the task to its end after the restart: $(cat "$OUT/rwatch.jsonl")"

timeout 30 "$TF" watch 999 --coordinator "$CL" > /dev/null 2> "$OUT/err"
rc=$?
[ $rc -eq 2 ] && grep -q "no submission 999" "$OUT/err" || fail "watch of an unknown submission: exit $rc, $(cat "$OUT/err")"
timeout 30 "$TF" submit "$OUT/ops.json" --wait --watch --coordinator "$CL" > /dev/null 2> "$OUT/err"
[ $? -eq 2 ] && grep -q "excludes" "$OUT/err" || fail "--wait with --watch was not refused: $(cat "$OUT/err")"
echo "watch: ok"
