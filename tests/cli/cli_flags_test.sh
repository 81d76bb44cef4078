#!/usr/bin/env bash
# Number flags of tunefleet, tunefleet-coordinator and tunefleet-worker: a negative or
# out-of-range value is refused at once with a message naming the flag and what it must
# be (a negative --budget used to wrap to 2^64 - n and tune the whole space), and the
# boundary values still work.
set -uo pipefail
BUILD="${TUNEFLEET_BUILD_DIR:?set TUNEFLEET_BUILD_DIR to the build folder}"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
TF="$BUILD/cli/tunefleet"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# refused EXPECTED_RC MESSAGE COMMAND...: the command exits EXPECTED_RC (any non-zero if
# empty) within 10 s, and stderr holds MESSAGE.
refused() {
  local want_rc="$1" message="$2"
  shift 2
  timeout 10 "$@" > "$OUT/stdout" 2> "$OUT/stderr"
  local rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "$* exited $rc, not an error"
  [ -z "$want_rc" ] || [ "$rc" -eq "$want_rc" ] || fail "$* exited $rc, not $want_rc"
  grep -qF -- "$message" "$OUT/stderr" || fail "$*: stderr lacks '$message': $(cat "$OUT/stderr")"
}

OPS="$SRC/examples/matmul_small.json"
refused 2 "--budget-seconds: must be >= 0, not -5" "$TF" tune "$OPS" --data-dir "$OUT/kb" --budget-seconds -5
refused 2 "--budget-seconds: must be >= 0, not -5" "$TF" submit "$OPS" --budget-seconds -5
# 0 is "no limit" for --budget; for --total-budget it would split nothing.
refused 2 "--total-budget: must be >= 1, not 0" "$TF" submit "$OPS" --total-budget 0
refused 2 "--total-budget: '-5' is not a whole number >= 1" "$TF" submit "$OPS" --total-budget -5
for flag in --budget --patience --seed; do
  refused 2 "$flag: '-5' is not a whole number >= 0" "$TF" tune "$OPS" --data-dir "$OUT/kb" $flag -5
  refused 2 "$flag: '-5' is not a whole number >= 0" "$TF" submit "$OPS" $flag -5
  refused 2 "$flag: '18446744073709551616' is too large (at most 18446744073709551615)" \
    "$TF" submit "$OPS" $flag 18446744073709551616
done
refused 2 "--budget: 'ten' is not a whole number" "$TF" tune "$OPS" --data-dir "$OUT/kb" --budget ten
refused 2 "--budget: '2.5' is not a whole number" "$TF" tune "$OPS" --data-dir "$OUT/kb" --budget 2.5
refused 2 "--scheduler splits a --total-budget among the ops: give --total-budget N too" \
  "$TF" tune "$OPS" --data-dir "$OUT/kb" --scheduler round-robin
refused 2 "SUBMISSION: must be >= 1, not 0" "$TF" status 0
refused 2 "SUBMISSION: '-1' is not a whole number >= 1" "$TF" status -1
refused 2 "--job-size: Value -1 not in range" "$TF" tune "$OPS" --data-dir "$OUT/kb" --job-size -1
refused 2 "--timeout-ms: Value 0 not in range" "$TF" status 1 --timeout-ms 0
refused "" "--metrics-port: Value 70000 not in range" "$BUILD/coordinator/tunefleet-coordinator" --metrics-port 70000
# A worker given a cache serves it; told to simulate as well, it refuses (it used to
# simulate silently, leaving replay tasks waiting forever).
refused 2 "--replay-cache is served only by --evaluator replay, not sim" \
  "$BUILD/worker/tunefleet-worker" --evaluator sim --replay-cache "$SRC/../shared/datasets/pnpoly_RTX2080Ti.json.gz"
# A malformed endpoint is bad input (2), with the form to use; the daemons used to exit 1.
refused 2 "cannot connect to foo: Invalid argument (an endpoint reads tcp://HOST:PORT, e.g. tcp://127.0.0.1:5555 for a coordinator's clients" \
  "$BUILD/worker/tunefleet-worker" --coordinator foo
refused 2 "cannot bind foo: Invalid argument (an endpoint reads tcp://HOST:PORT, e.g. tcp://127.0.0.1:5555 for a coordinator's clients" \
  "$BUILD/coordinator/tunefleet-coordinator" --client-bind foo --metrics-port -1 --data-dir "$OUT/kb-endpoint"
refused "" "--fixed-us: must be > 0, not 0" "$BUILD/worker/tunefleet-worker" --fixed-us 0
sed 's/"name": "small.proj"/"name": ""/' "$OPS" > "$OUT/unnamed.json"
refused 2 "op 0 'name' must be a non-empty string" "$TF" tune "$OUT/unnamed.json" --data-dir "$OUT/kb"
cat > "$OUT/twice.json" <<'JSON'
{"soc": "Ascend910B2", "ops": [
  {"name": "a", "op": "MatMul", "inputs": [{"shape": [64, 64], "dtype": "float16"}, {"shape": [64, 64], "dtype": "float16"}]},
  {"name": "a", "op": "MatMul", "inputs": [{"shape": [128, 64], "dtype": "float16"}, {"shape": [64, 64], "dtype": "float16"}]}]}
JSON
refused 2 "op 1 is named 'a' like op 0: give each op its own name" "$TF" lookup "$OUT/twice.json"
sed 's/"op": "MatMul",/"op": "MatMul", "attrs": {"transpose_b": "yes"},/' "$OPS" > "$OUT/badflag.json"
[ ! -e "$OUT/kb" ] || fail "a refused tune created its knowledge base"
# Refused by the (embedded) coordinator when the op is submitted.
refused 2 "transpose_b='yes' is not a flag: use true/false or 1/0" "$TF" tune "$OUT/badflag.json" --data-dir "$OUT/kb-badflag"

# A number beyond double's range threw past the JSON error handler and aborted (exit 134);
# a field given twice kept its last value silently. Both name the file and exit 2.
sed 's/"dtype": "float16"/"dtype": "float16", "count": 1e400/' "$OPS" > "$OUT/huge.json"
for cmd in lookup profile; do
  refused 2 "huge.json: not valid JSON" "$TF" $cmd "$OUT/huge.json"
done
sed 's/"op": "MatMul",/"op": "MatMul", "op": "Relu",/' "$OPS" > "$OUT/twice_field.json"
refused 2 "twice_field.json: field 'op' is given twice in one object; keep one" "$TF" lookup "$OUT/twice_field.json"
sed 's/"name": "bert_base_layer"/"name": "bert_base_layer", "host_preprocess_us": 1e400/' \
  "$SRC/examples/bert_base_layer.json" > "$OUT/huge_graph.json"
refused 2 "huge_graph.json: not valid JSON" "$TF" profile "$OUT/huge_graph.json"

# A shape whose element count would wrap int64 was profiled as a few GiB (an audit).
sed 's/{"name": "hidden", "shape": \[4096, 768\]/{"name": "hidden", "shape": [4294967296, 4294967297]/' \
  "$SRC/examples/bert_base_layer.json" > "$OUT/wrap.json"
refused 2 "shape [4294967296,4294967297] holds more than 2^50 elements" "$TF" profile "$OUT/wrap.json"

# A refusal quoting a 100,000-character dtype is clipped to its start and end.
long=$(head -c 100000 /dev/zero | tr '\0' x)
sed "s/\"dtype\": \"float16\"/\"dtype\": \"$long\"/" "$OPS" > "$OUT/long.json"
refused 2 "characters ...]" "$TF" lookup "$OUT/long.json"
[ "$(wc -c < "$OUT/stderr")" -lt 2200 ] || fail "a refusal quoting a long dtype is $(wc -c < "$OUT/stderr") bytes"

# A misspelt field is refused, not ignored (a "dtyp" used to tune float16 silently).
sed 's/"dtype": "float16"}, {"shape": \[128, 256\]/"dtyp": "float32"}, {"shape": [128, 256]/' "$OPS" > "$OUT/typo.json"
refused 2 "op 0: op 'MatMul' input 0: unknown field 'dtyp' (known: shape, dtype, format)" \
  "$TF" tune "$OUT/typo.json" --data-dir "$OUT/kb-typo"
# A model graph is tuned as its kernels, named as its nodes; a broken graph says which node to fix.
timeout 300 "$TF" tune "$SRC/examples/bert_base_layer.json" --budget 3 --strategy random --data-dir "$OUT/kb-graph" \
  > "$OUT/graph.txt" 2> "$OUT/graph.err" || fail "tune of a model graph exited $?: $(cat "$OUT/graph.err")"
grep -q "^ffn.gelu  Gelu\[4096x3072\]@Ascend910B2  \[done\]" "$OUT/graph.txt" \
  || fail "the graph's Gelu node was not tuned by its name: $(head -40 "$OUT/graph.txt")"
kernels=$(( $(grep -c '"op": "' "$SRC/examples/bert_base_layer.json") - $(grep -c '"op": "Reshape"' "$SRC/examples/bert_base_layer.json") ))
[ "$(grep -c '  \[done\]$' "$OUT/graph.txt")" -eq "$kernels" ] \
  || fail "not one tuned block per kernel node ($kernels): $(grep -c '  \[done\]$' "$OUT/graph.txt")"
# report: the model with its default tilings and with what tune found (DESIGN step 5).
"$TF" report "$SRC/examples/bert_base_layer.json" --data-dir "$OUT/kb-graph" --json > "$OUT/report.json" \
  || fail "report exited $?"
/usr/bin/python3 - "$OUT/report.json" "$kernels" <<'CHECK' || fail "report: $(cat "$OUT/report.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["kernel_nodes"] == int(sys.argv[2]) and r["tuned_kernel_nodes"] == r["kernel_nodes"], r
base, tuned = r["model_baseline_performance(ms)"], r["model_result_performance(ms)"]
assert 0 < tuned <= base, (base, tuned)
assert r["model_performance_improvement"] == f"{100 * (base - tuned) / base:.2f}%", r["model_performance_improvement"]
ops = r["repo_modified_operators"]
assert len(ops) == r["kernel_nodes"] and not r["untuned_operators"], len(ops)
# A tuned config is the best measured, the default among them: never slower.
assert all(o["performance_after(us)"] <= o["performance_before(us)"] + 1e-9 for o in ops), ops
CHECK
"$TF" report "$SRC/examples/bert_base_layer.json" --data-dir "$OUT/kb-graph" | grep -q "^model_performance_improvement  *[0-9.]*%$" \
  || fail "report text lacks AOE's improvement key"
# Nothing of this model tuned: it runs as it is, every kernel listed as not tuned.
RN="$SRC/examples/resnet50_block.json"
rn_kernels=$(( $(grep -c '"op": "' "$RN") - $(grep -c '"op": "Reshape"' "$RN") ))
"$TF" report "$RN" --data-dir "$OUT/kb-graph" > "$OUT/report0.txt" 2>&1
rc=$?
[ $rc -eq 3 ] && grep -q "nothing of $RN is in the knowledge base yet: tune it first" "$OUT/report0.txt" \
  && grep -q "0 of $rn_kernels kernel nodes have a tuned config" "$OUT/report0.txt" \
  && grep -q "not tuned ($rn_kernels kernels" "$OUT/report0.txt" \
  && grep -q "model_performance_improvement   0.00%" "$OUT/report0.txt"\
  || fail "report of a model not tuned (exit $rc, want 3 as lookup's miss): $(cat "$OUT/report0.txt")"
refused 2 "this is an ops file (a list of ops to tune), not a model graph" "$TF" report "$OPS" --data-dir "$OUT/kb-graph"
# Training: a vector kernel's backward follows its forward's config, so it counts as tuned;
# a MatMul's backward GEMMs were not tuned (the graph tuned was not a training one) and do not.
"$TF" report "$SRC/examples/bert_base_layer.json" --data-dir "$OUT/kb-graph" --training --json > "$OUT/train.json" \
  || fail "report --training exited $?"
/usr/bin/python3 - "$OUT/train.json" <<'CHECK' || fail "report --training: $(head -c 600 "$OUT/train.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["training"] is True, r
names = [o["op_name"] for o in r["repo_modified_operators"]]
assert "ffn.gelu_grad" in names and "ffn.gelu" in names, names
assert "ffn.output.matmul_grad" in r["untuned_operators"] and "ffn.output.matmul" in names, r["untuned_operators"]
cube = {"attention.scores_grad", "attention.context_grad"}  # the BatchMatMuls
assert all(n.endswith("matmul_grad") or n in cube for n in r["untuned_operators"]), r["untuned_operators"]
# Each backward GEMM reads one operand transposed (W for dX, X for dW): none is a forward key.
assert r["backward_gemms"] == 16 and r["tuned_backward_gemms"] == 0, r
CHECK
# A training graph's tune tunes each cube node's backward GEMMs too (named <node>_grad.dX and
# _grad.dW), and its report counts them tuned.
sed 's/"training": false/"training": true/' "$SRC/examples/bert_base_layer.json" > "$OUT/train_graph.json"
timeout 300 "$TF" tune "$OUT/train_graph.json" --budget 3 --strategy random --data-dir "$OUT/kb-train" > "$OUT/train_tune.txt" 2>&1 \
  || fail "tune of a training graph exited $?: $(tail -5 "$OUT/train_tune.txt")"
grep -q "^ffn.output.matmul_grad.dW  MatMul\[4096x3072,4096x768\]{transpose_a=1}@Ascend910B2  \[done\]" "$OUT/train_tune.txt" \
  || fail "the FFN output's dW GEMM was not tuned: $(grep _grad "$OUT/train_tune.txt" | head -5)"
"$TF" report "$OUT/train_graph.json" --data-dir "$OUT/kb-train" --json > "$OUT/train2.json" || fail "report of the tuned training graph exited $?"
/usr/bin/python3 - "$OUT/train2.json" <<'CHECK' || fail "report of a tuned training graph: $(head -c 600 "$OUT/train2.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["backward_gemms"] == r["tuned_backward_gemms"] == 16, r
assert r["untuned_operators"] == [], r["untuned_operators"]
assert "ffn.output.matmul_grad" in [o["op_name"] for o in r["repo_modified_operators"]]
CHECK
# --training takes any model's training step (an ONNX model has no "training" field): the
# same keys the training graph's tune wrote are found; an ops list has no step to train.
"$TF" lookup "$SRC/examples/bert_base_layer.json" --training --data-dir "$OUT/kb-train" > "$OUT/train_lookup.txt" \
  || fail "lookup --training of the tuned training step exited $?: $(grep -v ' us ' "$OUT/train_lookup.txt" | head -5)"
grep -q "^ffn.output.matmul_grad.dW " "$OUT/train_lookup.txt" || fail "lookup --training: $(head -5 "$OUT/train_lookup.txt")"
refused 2 "--training tunes a model's training step: $OPS is a list of ops" "$TF" tune "$OPS" --training --data-dir "$OUT/kb"
sed 's/"inputs": \["hidden", "w_q"\]/"inputs": ["hiddn", "w_q"]/' "$SRC/examples/bert_base_layer.json" > "$OUT/badgraph.json"
refused 2 "input 'hiddn' is not a graph input, weight or node output" "$TF" tune "$OUT/badgraph.json" --data-dir "$OUT/kb-badgraph"
refused 2 "input 'hiddn' is not a graph input, weight or node output" "$TF" report "$OUT/badgraph.json" --data-dir "$OUT/kb-graph"
# A node whose op could never be tuned is named (the coordinator's error counts ops, not nodes), and nothing is created.
sed 's/{"name": "w_ffn2", "shape": \[3072, 768\]/{"name": "w_ffn2", "shape": [3000, 768]/' "$SRC/examples/bert_base_layer.json" > "$OUT/badk.json"
refused 2 "node 'ffn.output.matmul' (MatMul): MatMul inner dimensions differ" "$TF" tune "$OUT/badk.json" --data-dir "$OUT/kb-badk"
[ ! -e "$OUT/kb-badk" ] || fail "a refused graph tune created its knowledge base"

# Boundaries are accepted: seed 0, and a small budget tunes.
timeout 120 "$TF" tune "$OPS" --data-dir "$OUT/kb" --budget 5 --seed 0 --patience 0 > "$OUT/tune.txt" \
  || fail "tune --budget 5 --seed 0 exited $?"
grep -q "evaluations        5 " "$OUT/tune.txt" || fail "tune --budget 5 did not spend 5 evaluations: $(cat "$OUT/tune.txt")"

# tune --replay-cache on a file that mixes simulated and replayed ops tunes both (the
# simulated ones used to wait forever for a worker: only the replay one was started).
# A toy Kernel Tuner cache of 8 configs: the shared datasets are not beside every clone.
cat > "$OUT/toy.json" <<'JSON'
{"device_name": "Toy GPU", "kernel_name": "toy_kernel", "objective": "time",
 "tune_params_keys": ["bx", "tile"], "tune_params": {"bx": [32, 64], "tile": [1, 2, 3, 4]},
 "cache": {"32,1": {"bx": 32, "tile": 1, "time": 1.25}, "32,2": {"bx": 32, "tile": 2, "time": 0.9},
           "32,3": {"bx": 32, "tile": 3, "time": "RuntimeFailedConfig"}, "64,1": {"bx": 64, "tile": 1, "time": 0.7},
           "64,2": {"bx": 64, "tile": 2, "time": 0.5}, "64,4": {"bx": 64, "tile": 4, "time": 0.8}}}
JSON
cat > "$OUT/mixed.json" <<'JSON'
{"soc": "Ascend910B2", "ops": [
  {"name": "small.proj", "op": "MatMul", "inputs": [{"shape": [256, 128], "dtype": "float16"}, {"shape": [128, 256], "dtype": "float16"}]},
  {"name": "toy", "soc": "replay", "op": "toy_kernel", "inputs": [{"shape": [1024], "dtype": "float32"}]}]}
JSON
timeout 120 "$TF" tune "$OUT/mixed.json" --data-dir "$OUT/kb-mixed" --budget 5 --replay-cache "$OUT/toy.json" \
  > "$OUT/mixed.txt" || fail "mixed tune exited $?: $(cat "$OUT/mixed.txt")"
grep -q "2 ops on Ascend910B2, replay" "$OUT/mixed.txt" || fail "tune does not name both SoCs: $(cat "$OUT/mixed.txt")"
[ "$(grep -c "evaluations        5 " "$OUT/mixed.txt")" -eq 2 ] || fail "mixed tune: $(cat "$OUT/mixed.txt")"
# Why configs failed, counted per reason: the toy's whole product has 2 absent configs and 1 measured failure.
cat > "$OUT/toy_ops.json" <<'JSON'
{"ops": [{"name": "toy", "soc": "replay", "op": "toy_kernel", "inputs": [{"shape": [1024], "dtype": "float32"}]}]}
JSON
timeout 120 "$TF" tune "$OUT/toy_ops.json" --data-dir "$OUT/kb-toy" --budget 8 --strategy random \
  --replay-cache "$OUT/toy.json" > "$OUT/toy.txt" || fail "toy tune exited $?"
grep -q "evaluations        8 (3 failed)" "$OUT/toy.txt" \
  && grep -q "^  failed because     2 x absent from the cache (violates the kernel's restrictions)$" "$OUT/toy.txt" \
  && grep -q "^                     1 x measured as failed: RuntimeFailedConfig$" "$OUT/toy.txt" \
  || fail "tune does not say why configs failed: $(cat "$OUT/toy.txt")"

# lookup --data-dir answers from what tune wrote, with no coordinator running.
timeout 60 "$TF" lookup "$OPS" --data-dir "$OUT/kb" --json > "$OUT/lookup.json" || fail "lookup --data-dir exited $?"
grep -q '"found": true' "$OUT/lookup.json" || fail "lookup --data-dir: $(cat "$OUT/lookup.json")"
grep -q '"evaluations": 5' "$OUT/lookup.json" || fail "lookup --data-dir did not answer tune's entry: $(cat "$OUT/lookup.json")"
sed 's/\[256, 128\]/[512, 128]/' "$OPS" > "$OUT/other.json"
timeout 60 "$TF" lookup "$OUT/other.json" --data-dir "$OUT/kb" > /dev/null
[ $? -eq 3 ] || fail "lookup --data-dir of an op never tuned is not a miss (exit 3)"
mkdir -p "$OUT/empty"
refused 2 "no knowledge base in $OUT/empty" "$TF" lookup "$OPS" --data-dir "$OUT/empty"
refused 2 "--data-dir excludes --coordinator" "$TF" lookup "$OPS" --data-dir "$OUT/kb" --coordinator tcp://127.0.0.1:1
echo "cli_flags: ok"
