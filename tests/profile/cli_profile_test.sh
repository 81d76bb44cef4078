#!/usr/bin/env bash
# `tunefleet profile`, `analyze` and `fuse` end to end: exit 0 and files written on the
# examples, --json output parses, exit 2 with a message on bad input.
set -uo pipefail
BUILD="${TUNEFLEET_BUILD_DIR:?set TUNEFLEET_BUILD_DIR to the build folder}"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
TF="$BUILD/cli/tunefleet"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$TF" profile --help > /dev/null || fail "profile --help"
"$TF" analyze --help > /dev/null || fail "analyze --help"

"$TF" profile "$SRC/examples/bert_base_layer.json" --trace "$OUT/trace.json" --csv "$OUT/bert" > "$OUT/profile.txt" \
  || fail "profile bert exited $?"
grep -q "step time" "$OUT/profile.txt" || fail "no step time in the summary"
grep -q "AI Core utilisation" "$OUT/profile.txt" || fail "no utilisation in the summary"
for f in trace.json bert/op_summary.csv bert/profiler_data.csv bert/run_summary.json; do
  [ -s "$OUT/$f" ] || fail "$f not written"
done
/usr/bin/python3 -c "import json,sys; t=json.load(open(sys.argv[1])); assert t['traceEvents']" "$OUT/trace.json" \
  || fail "trace is not JSON with traceEvents"

"$TF" profile "$SRC/examples/bert_base_layer.json" --trace "$OUT/tiles.json" --trace-ops attention.softmax,ffn.output.matmul \
  > /dev/null || fail "profile --trace-ops exited $?"
/usr/bin/python3 - "$OUT/tiles.json" <<'PY' || fail "--trace-ops did not add per-core per-pipe rows"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
cores = {e["pid"] for e in events if e["ph"] == "X" and e["pid"] >= 100}
names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] >= 100}
assert cores and any(n.startswith("attention.softmax: core") for n in names), names
assert any(n.startswith("ffn.output.matmul: core") for n in names), names
PY

"$TF" profile "$SRC/examples/resnet50_block.json" --json > "$OUT/resnet.json" || fail "profile resnet --json"
/usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['step_us'] > 0 and s['top_ops']" \
  "$OUT/resnet.json" || fail "profile --json is not the run summary"

"$TF" profile "$SRC/examples/bert_base_layer.json" --training --devices 8 --csv "$OUT/train" > "$OUT/train.txt" \
  || fail "profile --training exited $?"
grep -q "HCCL all-reduce" "$OUT/train.txt" || fail "no all-reduce in a data-parallel training profile"
grep -q ",HCCL$" "$OUT/train/profiler_data.csv" || fail "no HCCL rows in profiler_data.csv"

"$TF" analyze "$OUT/bert" > "$OUT/analysis.txt" || fail "analyze folder exited $?"
grep -q "next steps" "$OUT/analysis.txt" || fail "no next steps"
grep -q "fuse" "$OUT/analysis.txt" || fail "no fusion advice on BERT"
"$TF" analyze "$OUT/bert/profiler_data.csv" --json > "$OUT/analysis.json" || fail "analyze csv exited $?"
/usr/bin/python3 -c "import json,sys; a=json.load(open(sys.argv[1])); assert len(a['grid']) == 9 and a['top_ops']" \
  "$OUT/analysis.json" || fail "analyze --json"

# Bad input: exit 2 and a message that names the problem.
expect_2() {
  local what="$1"; shift
  "$@" > "$OUT/bad.out" 2> "$OUT/bad.err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit $rc, want 2"
  [ -s "$OUT/bad.err" ] || fail "$what: no message"
}
expect_2 "missing model" "$TF" profile "$OUT/nope.json"
expect_2 "no model argument" "$TF" profile
expect_2 "devices out of range" "$TF" profile "$SRC/examples/bert_base_layer.json" --devices 0
expect_2 "unknown flag" "$TF" analyze "$OUT/bert" --bogus
echo '{"soc": "Ascend910B2", "inputs": [{"name": "x", "shape": [64, 64]}], "outputs": ["y"],
       "nodes": [{"name": "act", "op": "Relu", "inputs": ["z"], "outputs": [{"name": "y", "shape": [64, 64]}]}]}' \
  > "$OUT/bad_graph.json"
expect_2 "dangling input" "$TF" profile "$OUT/bad_graph.json"
grep -q "node 'act'" "$OUT/bad.err" || fail "the error does not name the node: $(cat "$OUT/bad.err")"
expect_2 "unknown soc" "$TF" profile "$SRC/examples/bert_base_layer.json" --soc Ascend999
expect_2 "unknown --trace-ops op" "$TF" profile "$SRC/examples/bert_base_layer.json" --trace "$OUT/t.json" --trace-ops nope
expect_2 "missing profile" "$TF" analyze "$OUT/nothing"
echo "name,time" > "$OUT/bad.csv"
expect_2 "bad csv" "$TF" analyze "$OUT/bad.csv"

# fuse (subgraph tuning, AOE job type 1): the fused graph is written where it is run from,
# then its kernels are tuned (job type 2) and the tuned fused model verified.
(cd "$OUT" && "$TF" fuse "$SRC/examples/bert_base_layer.json" > fuse.txt) || fail "fuse bert exited $?"
[ -s "$OUT/bert_base_layer_fused.json" ] || fail "fuse wrote no bert_base_layer_fused.json: $(cat "$OUT/fuse.txt")"
grep -q "7 of 7 fusion chains fused, 1 of 1 transposes folded, 22 -> 9 kernels" "$OUT/fuse.txt" || fail "fuse bert: $(cat "$OUT/fuse.txt")"
grep -q "attention.k.transpose folded into attention.scores (transpose_b)" "$OUT/fuse.txt" || fail "fuse bert: no fold: $(cat "$OUT/fuse.txt")"
grep -q "attention.scores+attention.scores.scale+attention.softmax+attention.context (FlashAttention, scores Mul)" "$OUT/fuse.txt" \
  || fail "fuse bert: the attention is not one FlashAttention: $(cat "$OUT/fuse.txt")"
grep -q "ffn.intermediate.matmul+ffn.intermediate.bias+ffn.gelu (FusedMatMul, epilogue BiasAdd,Gelu)" "$OUT/fuse.txt" \
  || fail "fuse bert does not list the FFN's fusion: $(cat "$OUT/fuse.txt")"
"$TF" fuse "$SRC/examples/resnet50_block.json" -o "$OUT/rn_fused.json" --json > "$OUT/rn_fuse.json" || fail "fuse --json exited $?"
"$TF" profile "$OUT/rn_fused.json" --json > "$OUT/rn_fused_profile.json" || fail "the fused graph does not profile"
/usr/bin/python3 - "$OUT/rn_fuse.json" "$OUT/rn_fused_profile.json" <<'PY' || fail "fuse --json: $(cat "$OUT/rn_fuse.json")"
import json, sys
r = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))
assert r["job_type"] == 1 and r["kernels_after"] < r["kernels_before"], r
assert r["model_result_performance(ms)"] < r["model_baseline_performance(ms)"], r
assert abs(p["step_us"] / 1000 - r["model_result_performance(ms)"]) < 1e-9, (p["step_us"], r)
assert r["model_performance_improvement"].endswith("%")
assert all(o["step_saved_us"] > 0 and "+" in o["name"] for o in r["fused_operators"]), r["fused_operators"]
assert any("which saves more" in n["reason"] for n in r["not_fused"]), r["not_fused"]
PY
timeout 300 "$TF" tune "$OUT/bert_base_layer_fused.json" --budget 3 --strategy random --data-dir "$OUT/kb-fused" \
  > "$OUT/tune_fused.txt" 2>&1 || fail "tune of the fused graph exited $?: $(tail -5 "$OUT/tune_fused.txt")"
grep -q "^ffn.intermediate.matmul+ffn.intermediate.bias+ffn.gelu  FusedMatMul" "$OUT/tune_fused.txt" \
  || fail "the fused node was not tuned by its name: $(head -20 "$OUT/tune_fused.txt")"
"$TF" report "$OUT/bert_base_layer_fused.json" --data-dir "$OUT/kb-fused" --json > "$OUT/report_fused.json" \
  || fail "report of the tuned fused graph exited $?"
/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['tuned_kernel_nodes'] == r['kernel_nodes'] == 9, r" \
  "$OUT/report_fused.json" || fail "report of the fused graph: $(head -c 400 "$OUT/report_fused.json")"
# --baseline: the whole chain's gain, fusion and tiling, against the model before fusion.
"$TF" report "$OUT/bert_base_layer_fused.json" --data-dir "$OUT/kb-fused" --baseline "$SRC/examples/bert_base_layer.json" \
  --json > "$OUT/report_chain.json" || fail "report --baseline exited $?"
"$TF" profile "$SRC/examples/bert_base_layer.json" --json > "$OUT/orig.json" || fail "profile of the original layer"
/usr/bin/python3 - "$OUT/report_chain.json" "$OUT/orig.json" "$OUT/report_fused.json" <<'PY' || fail "report --baseline: $(head -c 400 "$OUT/report_chain.json")"
import json, sys
chain, orig, fused = (json.load(open(p)) for p in sys.argv[1:])
assert abs(chain["model_baseline_performance(ms)"] - orig["step_us"] / 1000) < 1e-9, (chain, orig["step_us"])
assert abs(chain["model_default_performance(ms)"] - fused["model_baseline_performance(ms)"]) < 1e-9
assert chain["model_result_performance(ms)"] == fused["model_result_performance(ms)"]
assert chain["model_default_performance(ms)"] < chain["model_baseline_performance(ms)"], "fusion alone gains"
assert float(chain["model_performance_improvement"][:-1]) > float(fused["model_performance_improvement"][:-1])
PY
sed 's/"soc": "Ascend910B2"/"soc": "Ascend910"/' "$SRC/examples/bert_base_layer.json" > "$OUT/bert_910.json"
expect_2 "report --baseline on another SoC" "$TF" report "$OUT/bert_base_layer_fused.json" --data-dir "$OUT/kb-fused" \
  --baseline "$OUT/bert_910.json"
grep -q "give the same SoC" "$OUT/bad.err" || fail "report --baseline on another SoC: $(cat "$OUT/bad.err")"
expect_2 "fuse of an ops file" "$TF" fuse "$SRC/examples/matmul_small.json" -o "$OUT/x.json"
# --threads: the same report and graph on 1 and 3 threads; 0 refused; the default is the
# CPUs the process may use (pinned to one CPU: 1), not the machine's.
"$TF" fuse "$SRC/examples/resnet50_block.json" -o "$OUT/rn_t3.json" --json --threads 3 > "$OUT/rn_t3.out" || fail "fuse --threads 3 exited $?"
"$TF" fuse "$SRC/examples/resnet50_block.json" -o "$OUT/rn_t1.json" --json --threads 1 > "$OUT/rn_t1.out" || fail "fuse --threads 1 exited $?"
cmp -s "$OUT/rn_t1.json" "$OUT/rn_t3.json" && diff <(grep -v fused_graph "$OUT/rn_t1.out") <(grep -v fused_graph "$OUT/rn_t3.out") > /dev/null \
  || fail "fuse on 1 and 3 threads differ"
expect_2 "fuse --threads 0" "$TF" fuse "$SRC/examples/resnet50_block.json" -o "$OUT/x.json" --threads 0
cpu=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*\([0-9]*\).*/\1/p' /proc/self/status)
taskset -c "$cpu" "$TF" fuse --help | grep -qE -- "--threads INT:INT in \[1 - 1024\]=1( |$)" \
  || fail "fuse's default --threads pinned to one CPU: $(taskset -c "$cpu" "$TF" fuse --help | grep -- --threads)"
taskset -c "$cpu" "$BUILD/worker/tunefleet-worker" --help | grep -qE -- "--slots INT:INT in \[1 - 1024\]=1( |$)" \
  || fail "the worker's default --slots pinned to one CPU: $(taskset -c "$cpu" "$BUILD/worker/tunefleet-worker" --help | grep -- --slots)"
# The default output is never replaced by another graph (a hand-fused file may sit there);
# the same fused graph again is fine (a rerun), and an -o given replaces.
(cd "$OUT" && "$TF" fuse "$SRC/examples/bert_base_layer.json" > again.out 2> again.err) \
  || fail "fuse again over its own default output exited $?: $(cat "$OUT/again.err")"
cp "$OUT/bert_base_layer_fused.json" "$OUT/fused_kept.json"
cp "$SRC/examples/bert_base_layer_fused.json" "$OUT/bert_base_layer_fused.json"  # by hand
(cd "$OUT" && "$TF" fuse "$SRC/examples/bert_base_layer.json" > again.out 2> again.err); rc=$?
[ $rc -eq 2 ] && grep -q "bert_base_layer_fused.json exists" "$OUT/again.err" || fail "fuse over a hand-fused default output: exit $rc, $(cat "$OUT/again.err")"
cmp -s "$SRC/examples/bert_base_layer_fused.json" "$OUT/bert_base_layer_fused.json" || fail "fuse replaced a hand-fused file"
(cd "$OUT" && "$TF" fuse "$SRC/examples/bert_base_layer.json" -o bert_base_layer_fused.json > /dev/null) || fail "fuse -o over an existing file exited $?"
cmp -s "$OUT/fused_kept.json" "$OUT/bert_base_layer_fused.json" || fail "fuse -o did not write the fused graph"
# -o is checked before the search; --training measures training steps but writes the model's own setting.
expect_2 "fuse -o a folder" "$TF" fuse "$SRC/examples/bert_base_layer.json" -o "$OUT"
grep -q "is a folder" "$OUT/bad.err" || fail "fuse -o FOLDER: $(cat "$OUT/bad.err")"
expect_2 "fuse -o in a missing folder" "$TF" fuse "$SRC/examples/bert_base_layer.json" -o "$OUT/nope/x.json"
grep -q "does not exist" "$OUT/bad.err" || fail "fuse -o MISSING/x: $(cat "$OUT/bad.err")"
"$TF" fuse "$SRC/examples/bert_base_layer.json" --training -o "$OUT/train_fused.json" > "$OUT/train_fuse.txt" || fail "fuse --training exited $?"
grep -q "(training)" "$OUT/train_fuse.txt" || fail "fuse --training did not measure training steps: $(head -2 "$OUT/train_fuse.txt")"
/usr/bin/python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['training'] is False" "$OUT/train_fused.json" \
  || fail "fuse --training wrote training: true into the graph"
cp "$SRC/examples/resnet50_block.json" "$OUT/rn.json"
expect_2 "fuse over its own model" "$TF" fuse "$OUT/rn.json" -o "$OUT/rn.json"
grep -q "is the model itself" "$OUT/bad.err" || fail "fuse -o MODEL: $(cat "$OUT/bad.err")"
cmp -s "$SRC/examples/resnet50_block.json" "$OUT/rn.json" || fail "fuse -o MODEL overwrote the model"
# tune --fuse: subgraph then operator tuning in one command; the fused graph is written
# where it runs (a rerun finds it as it would write it), and report takes it.
mkdir -p "$OUT/onefuse"
(cd "$OUT/onefuse" && timeout 300 "$TF" tune "$SRC/examples/resnet50_block.json" --fuse --budget 3 --strategy random \
  --data-dir kb > tune.txt 2> tune.err) || fail "tune --fuse exited $?: $(tail -3 "$OUT/onefuse/tune.err")"
grep -q "fused .*resnet50_block.json: 10 -> 5 kernels" "$OUT/onefuse/tune.err" || fail "tune --fuse said: $(cat "$OUT/onefuse/tune.err")"
[ -s "$OUT/onefuse/resnet50_block_fused.json" ] || fail "tune --fuse wrote no fused graph"
grep -q "^conv1+relu1  FusedConv2D" "$OUT/onefuse/tune.txt" || fail "tune --fuse did not tune the fused kernels: $(head -5 "$OUT/onefuse/tune.txt")"
(cd "$OUT/onefuse" && timeout 300 "$TF" tune "$SRC/examples/resnet50_block.json" --fuse --budget 3 --strategy random \
  --data-dir kb > /dev/null 2>&1) || fail "a rerun of tune --fuse exited $? (its fused graph is already there)"
"$TF" report "$OUT/onefuse/resnet50_block_fused.json" --data-dir "$OUT/onefuse/kb" --baseline "$SRC/examples/resnet50_block.json" \
  > /dev/null || fail "report of what tune --fuse wrote exited $?"
expect_2 "--fused-out without --fuse" "$TF" tune "$SRC/examples/resnet50_block.json" --fused-out "$OUT/x.json" --data-dir "$OUT/kb-x"
expect_2 "--fuse of an ops file" "$TF" tune "$SRC/examples/matmul_small.json" --fuse --data-dir "$OUT/kb-x"
grep -q "this is an ops file" "$OUT/bad.err" || fail "tune --fuse OPS: $(cat "$OUT/bad.err")"

# An ONNX model (examples/bert_base_layer.onnx, PyTorch's export of the same layer) is a
# model like a JSON graph: profile, fuse, tune, report and lookup take it, with --dim.
ONNX="$SRC/examples/bert_base_layer.onnx"
"$TF" profile "$ONNX" --dim batch=32 --dim seq=128 --json > "$OUT/onnx.json" || fail "profile of the ONNX model exited $?"
"$TF" profile "$SRC/examples/bert_base_layer.json" --json > "$OUT/json.json" || fail "profile of the JSON layer"
/usr/bin/python3 - "$OUT/onnx.json" "$OUT/json.json" <<'PY' || fail "the ONNX layer does not run as the JSON one: $(head -c 300 "$OUT/onnx.json")"
import json, sys
o, j = (json.load(open(p)) for p in sys.argv[1:])
assert o["ops"] == j["ops"] == 22, (o["ops"], j["ops"])
span = lambda r: r["compute_end_us"] - r["compute_start_us"]
assert abs(span(o) - span(j)) < 1e-6 * span(j), (span(o), span(j))
PY
expect_2 "ONNX without its dims" "$TF" profile "$ONNX"
grep -q "symbolic dimensions without a size: batch, seq: give --dim batch=N --dim seq=N" "$OUT/bad.err" \
  || fail "ONNX without --dim: $(cat "$OUT/bad.err")"
expect_2 "--dim on a JSON graph" "$TF" profile "$SRC/examples/bert_base_layer.json" --dim batch=3
# The two-step flow from an ONNX model: fuse writes JSON, whose report takes the ONNX
# model as --baseline with its --dim (as fuse's hint prints it).
"$TF" fuse "$ONNX" --dim batch=32 --dim seq=128 -o "$OUT/onnx_fused2.json" > "$OUT/onnx_fuse2.txt" || fail "fuse of the ONNX model"
grep -q -- "--baseline $ONNX --dim batch=32 --dim seq=128" "$OUT/onnx_fuse2.txt" || fail "fuse's hint lacks --dim: $(tail -1 "$OUT/onnx_fuse2.txt")"
timeout 300 "$TF" tune "$OUT/onnx_fused2.json" --budget 2 --strategy random --data-dir "$OUT/kb-onnx2" > /dev/null 2>&1 || fail "tune of the fused ONNX model"
"$TF" report "$OUT/onnx_fused2.json" --data-dir "$OUT/kb-onnx2" --baseline "$ONNX" --dim batch=32 --dim seq=128 > /dev/null \
  || fail "report of the fused ONNX model against it exited $?"
# A baseline that is not the same model before fusion is refused, saying what differs.
expect_2 "report --baseline of another model" "$TF" report "$OUT/onnx_fused2.json" --data-dir "$OUT/kb-onnx2" \
  --baseline "$SRC/examples/resnet50_block.json"
grep -q "take or give different tensors (elements of the inputs \[[0-9, ]*\] against \[[0-9, ]*\]" "$OUT/bad.err" \
  || fail "report --baseline OTHER: $(cat "$OUT/bad.err")"
sed 's/"training": false/"training": true/' "$SRC/examples/bert_base_layer.json" > "$OUT/train_bert.json"
expect_2 "report --baseline of a training step" "$TF" report "$OUT/onnx_fused2.json" --data-dir "$OUT/kb-onnx2" \
  --baseline "$OUT/train_bert.json"
grep -q "differ in 'training' or 'devices'" "$OUT/bad.err" || fail "report --baseline TRAINING: $(cat "$OUT/bad.err")"
expect_2 "a bad --dim" "$TF" report "$ONNX" --dim batch --data-dir "$OUT"
grep -q "expected NAME=SIZE" "$OUT/bad.err" || fail "--dim batch: $(cat "$OUT/bad.err")"
"$TF" fuse "$ONNX" --dim batch=32 --dim seq=128 -o "$OUT/onnx_fused.json" > "$OUT/onnx_fuse.txt" || fail "fuse of the ONNX model exited $?"
grep -q "7 of 7 fusion chains fused, 1 of 1 transposes folded, 22 -> 9 kernels" "$OUT/onnx_fuse.txt" \
  || fail "fuse of the ONNX model: $(cat "$OUT/onnx_fuse.txt")"
timeout 300 "$TF" tune "$ONNX" --dim batch=32 --dim seq=128 --budget 3 --strategy random --data-dir "$OUT/kb-onnx" \
  > "$OUT/onnx_tune.txt" 2>&1 || fail "tune of the ONNX model exited $?: $(tail -5 "$OUT/onnx_tune.txt")"
grep -q "^ffn.gelu  Gelu\[4096x3072\]@Ascend910B2  \[done\]" "$OUT/onnx_tune.txt" \
  || fail "tune of the ONNX model: no Gelu named as its node: $(grep -c done "$OUT/onnx_tune.txt") done"
"$TF" report "$ONNX" --dim batch=32 --dim seq=128 --data-dir "$OUT/kb-onnx" --json > "$OUT/onnx_report.json" \
  || fail "report of the ONNX model exited $?"
/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['tuned_kernel_nodes'] == r['kernel_nodes'] == 22, r" \
  "$OUT/onnx_report.json" || fail "report of the ONNX model: $(head -c 300 "$OUT/onnx_report.json")"
"$TF" lookup "$ONNX" --dim batch=32 --dim seq=128 --data-dir "$OUT/kb-onnx" > /dev/null || fail "lookup of the tuned ONNX model exited $?"
# What the ONNX export tuned serves the same layer written as a JSON graph: every kernel
# but the score scale, which the export divides by and the JSON graph multiplies by.
# (Element-wise ops kept their [b, s, h] axes in their keys and matched nothing.)
"$TF" report "$SRC/examples/bert_base_layer.json" --data-dir "$OUT/kb-onnx" --json > "$OUT/json_from_onnx.json" \
  || fail "report of the JSON layer from the ONNX model's knowledge base exited $?"
/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert (r['tuned_kernel_nodes'], r['untuned_operators']) == (21, ['attention.scores.scale']), r" \
  "$OUT/json_from_onnx.json" || fail "the ONNX model's entries do not serve the JSON layer: $(head -c 400 "$OUT/json_from_onnx.json")"
# Tunes an ONNX example (2 random evaluations per op), checks that each pattern matches a
# line tune prints, and that report then finds every one of its kernels tuned.
check_onnx_tune() {  # label model kernels pattern...
  local label=$1 model=$2 kernels=$3
  shift 3
  local kb="$OUT/kb-$label" log="$OUT/${label}_tune.txt" report="$OUT/${label}_report.json"
  timeout 300 "$TF" tune "$model" --budget 2 --strategy random --data-dir "$kb" > "$log" 2>&1 \
    || fail "tune of $label exited $?: $(tail -5 "$log")"
  for want in "$@"; do
    grep -q "$want" "$log" || fail "tune of $label: no line matches $want: $(head -5 "$log")"
  done
  "$TF" report "$model" --data-dir "$kb" --json > "$report" || fail "report of $label exited $?"
  /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['tuned_kernel_nodes'] == r['kernel_nodes'] == int(sys.argv[2]), r" \
    "$report" "$kernels" || fail "report of $label: $(head -c 300 "$report")"
}
# fuse_says LABEL MODEL LINE...: `fuse MODEL` (in $OUT, its output in LABEL_fuse.txt)
# succeeds and prints each LINE.
fuse_says() {
  local label=$1 model=$2 out="$OUT/$1_fuse.txt"
  shift 2
  (cd "$OUT" && "$TF" fuse "$model" > "$out") || fail "fuse $label exited $?"
  for want in "$@"; do
    grep -qF "$want" "$out" || fail "fuse $label does not say '$want': $(head -8 "$out")"
  done
}
# A Llama-2-7B decoder layer as PyTorch exports it (scripts/make_llama_onnx.py): its two
# RMSNorms, the RoPE of q and of k and the MLP's SiLU (a Sigmoid and a Mul) fold into one
# kernel each, and every kernel is tuned.
check_onnx_tune llama "$SRC/examples/llama_layer.onnx" 21 \
  "^/self_attn/Add  Rope\[32x2048x128,2048x128,2048x128\]@Ascend910B2  \[done\]" \
  "^/mlp/Mul  Silu\[2048x11008\]@Ascend910B2  \[done\]"
# fuse then takes the SwiGLU (the SiLU and the Mul by up_proj's output) into gate_proj.
(cd "$OUT" && "$TF" fuse "$SRC/examples/llama_layer.onnx" > llama_fuse.txt) || fail "fuse llama exited $?"
grep -qF "/mlp/gate_proj/MatMul+/mlp/Mul+/mlp/Mul_1 (FusedBatchMatMul, epilogue Silu,Mul)" "$OUT/llama_fuse.txt" \
  || fail "fuse llama: the SwiGLU is not gate_proj's epilogue: $(cat "$OUT/llama_fuse.txt")"
# and the attention, its probabilities cast back from float32 (a view), one FlashAttention.
grep -qF "/self_attn/MatMul+/self_attn/Div+/self_attn/Add_2+/self_attn/Softmax+/self_attn/MatMul_1 (FlashAttention, scores Div,Add)" \
  "$OUT/llama_fuse.txt" || fail "fuse llama: the attention is not one FlashAttention: $(cat "$OUT/llama_fuse.txt")"
# Its mask is an input, so only the user knows it is causal (fuse says how to tell it):
# declared (--causal-mask), the FlashAttention skips the key blocks it masks whole, and the
# fused step is faster.
grep -qF "note: /self_attn/MatMul+/self_attn/Div+/self_attn/Add_2+/self_attn/Softmax+/self_attn/MatMul_1 applies the mask 'mask'" \
  "$OUT/llama_fuse.txt" || fail "fuse llama does not suggest --causal-mask: $(cat "$OUT/llama_fuse.txt")"
(cd "$OUT" && "$TF" fuse "$SRC/examples/llama_layer.onnx" --causal-mask mask -o llama_causal.json > llama_causal.txt) \
  || fail "fuse llama --causal-mask exited $?"
grep -qF "/self_attn/MatMul+/self_attn/Div+/self_attn/Add_2+/self_attn/Softmax+/self_attn/MatMul_1 (FlashAttention, scores Div,Add, causal)" \
  "$OUT/llama_causal.txt" || fail "fuse llama --causal-mask: the attention is not causal: $(cat "$OUT/llama_causal.txt")"
! grep -q "note: .* applies the mask" "$OUT/llama_causal.txt" || fail "fuse llama --causal-mask still suggests it"
/usr/bin/python3 - "$OUT/llama_fuse.txt" "$OUT/llama_causal.txt" "$OUT/llama_causal.json" <<'PY' || fail "fuse llama --causal-mask is not faster"
import json, re, sys
full, causal = (float(re.search(r"model_result_performance\(ms\) +([0-9.]+)", open(p).read()).group(1)) for p in sys.argv[1:3])
assert causal < full - 0.3, (causal, full)
assert json.load(open(sys.argv[3]))["causal_masks"] == ["mask"]
PY
expect_2 "--causal-mask of no input or weight" "$TF" fuse "$SRC/examples/llama_layer.onnx" --causal-mask nope -o "$OUT/x.json"
grep -q "'nope' is no tensor of the graph" "$OUT/bad.err" || fail "--causal-mask nope: $(cat "$OUT/bad.err")"
expect_2 "tune --causal-mask without --fuse" "$TF" tune "$SRC/examples/llama_layer.onnx" --causal-mask mask --data-dir "$OUT/kb-causal"
# The same layer exported with dynamic axes (make_llama_onnx.py --dynamic): its views'
# shapes and rotate_half's bounds come from Shape ops, which fold once --dim sizes batch
# and seq; it then profiles as the fixed-shape export does.
fixed=$("$TF" profile "$SRC/examples/llama_layer.onnx" | grep "^step time") || fail "profile of the Llama layer exited $?"
dynamic=$("$TF" profile "$SRC/examples/llama_dynamic_layer.onnx" --dim batch=1 --dim seq=2048 | grep "^step time") \
  || fail "profile of the dynamic-axes Llama layer exited $?"
[ -n "$fixed" ] && [ "$fixed" = "$dynamic" ] || fail "the dynamic-axes Llama layer: '$dynamic', the fixed one: '$fixed'"
# Llama-3-8B's layer: grouped-query attention, 8 key/value heads repeated for 32 query heads
# (repeat_kv's Expand, its shape computed from constants), so k and v are projected to
# 1024 and rotated at 8 heads, and the attention's BatchMatMuls run at 32.
check_onnx_tune llama3 "$SRC/examples/llama3_layer.onnx" 21 "^/self_attn/k_proj/MatMul  MatMul\[2048x4096,4096x1024\]" \
  "^/self_attn/Add_1  Rope\[8x2048x128," "^/self_attn/MatMul_1  BatchMatMul\[1x32x2048x2048,1x32x2048x128\]"
# A decoding step of the Llama-2 layer with a KV cache of 2047 positions (--past 2047): the
# past keys and values are joined with the new ones by a Concat kernel each, and the
# attention's BatchMatMuls read 2048 positions.
check_onnx_tune llama_decode "$SRC/examples/llama_decode_layer.onnx" 23 \
  "^/self_attn/Concat_2  Concat\[1x32x2047x128,1x32x1x128\]{axis=2}" \
  "^/self_attn/MatMul  BatchMatMul\[1x32x1x128,1x32x128x2048\]" "^/self_attn/q_proj/MatMul  MatMul\[1x4096,4096x4096\]"
# GPT-2's block as PyTorch exports it (scripts/make_gpt2_onnx.py): the fused c_attn is
# split into q, k and v (window views: the attention's BatchMatMul reads q and k at their
# heads' shapes), the causal mask is a Where over the scores with the bool buffer's window,
# and the scale computed as Pow(64, 0.5) folds to a constant.
check_onnx_tune gpt2 "$SRC/examples/gpt2_layer.onnx" 14 "^/attn/c_attn/Gemm  Gemm\[8192x768,768x2304,2304\]" \
  "^/attn/MatMul  BatchMatMul\[8x12x1024x64,8x12x64x1024\]" "^/attn/Div  Div\[98304x1024,1\]" \
  "^/attn/Where  Where\[int8:1024x1024,96x1024x1024,1\]"
# Its Conv1D projections are addmm then a view: fuse reads through the view, so c_fc takes
# its bias and Gelu and both c_proj their bias and residual Add; the attention, its causal
# mask a Where of an int8 condition, is one FlashAttention; the mask is causal (the
# exporter names it in the file's metadata, as its dropped values would have shown), so the
# FlashAttention skips the key blocks it masks whole.
(cd "$OUT" && "$TF" fuse "$SRC/examples/gpt2_layer.onnx" > gpt2_fuse.txt) || fail "fuse gpt2 exited $?"
for want in "4 of 4 fusion chains fused, 0 of 0 transposes folded, 14 -> 7 kernels" \
  "/mlp/c_fc/Gemm+/mlp/Mul_3 (FusedMatMul, epilogue BiasAdd,Gelu)" "/attn/c_proj/Gemm+/Add (FusedMatMul, epilogue BiasAdd,Add)" \
  "/attn/MatMul+/attn/Div+/attn/Where+/attn/Softmax+/attn/MatMul_1 (FlashAttention, scores Div,Where, causal)"; do
  grep -qF "$want" "$OUT/gpt2_fuse.txt" || fail "fuse gpt2: no line has '$want': $(cat "$OUT/gpt2_fuse.txt")"
done
"$TF" profile "$OUT/gpt2_layer_fused.json" > /dev/null || fail "profile of the fused GPT-2 layer exited $?"
# The whole GPT-2 small from its int64 input_ids (make_gpt2_onnx.py --model): the token
# embedding is a Gather kernel (the position embedding of constant positions is computed at
# compile time), 12 blocks, and the LM head tied to the token embedding's weight, a MatMul
# by its transpose, which the export folds into a constant.
check_onnx_tune gpt2_model "$SRC/examples/gpt2.onnx" 172 "^/wte/Gather  Gather\[50257x768,int64:1024\]@Ascend910B2  \[done\]" \
  "^/MatMul  MatMul\[1024x768,768x50257\]" "^/h.11/attn/Where  Where"
! grep -q "^/wpe/Gather" "$OUT/gpt2_model_tune.txt" || fail "the position embedding of constant positions ran as a kernel"
# The whole BERT-base from its three int64 inputs (scripts/make_bert_model_onnx.py): the
# word and token type embeddings are Gathers, the extended attention mask a Cast
# of the int64 mask to float16 and float kernels, and the pooler reads the first token.
check_onnx_tune bert_model "$SRC/examples/bert_base.onnx" 274 \
  "^/embeddings/word_embeddings/Gather  Gather\[30522x768,int64:4096\]" \
  "^/embeddings/token_type_embeddings/Gather  Gather\[2x768,int64:4096\]" \
  "^/Cast  Cast\[int64:32x128\]{dst_type=float16}" "^/pooler/Gemm  Gemm\[32x768,768x768,768\]"
# RoBERTa-base (make_bert_model_onnx.py --roberta): its position ids are computed from the
# token ids (ids.ne(1), a cumsum over the sequence, times the mask, plus 1), each step an
# index arithmetic kernel, and they index the position table by a Gather kernel.
check_onnx_tune roberta "$SRC/examples/roberta_base.onnx" 282 \
  "^/embeddings/Equal  Equal\[int64:32x128,int64:1\]@Ascend910B2  \[done\]" \
  "^/embeddings/CumSum  CumSum\[int32:32x128\]@Ascend910B2  \[done\]" \
  "^/embeddings/Add  Add\[int64:32x128,int64:1\]" "^/embeddings/position_embeddings/Gather  Gather\[514x768,int64:4096\]"
# A sentence embedding model, all-MiniLM-L6-v2 (make_bert_model_onnx.py --minilm): the
# masked sums over the sequence of sentence-transformers' mean pooling are sum pools (an
# AveragePool dividing by 1), the int64 mask's Cast feeds them, and F.normalize's norm is a
# ReduceL2 over the embedding; fuse makes each layer's attention a FlashAttention.
check_onnx_tune minilm "$SRC/examples/minilm_l6.onnx" 149 \
  "^/ReduceSum  AveragePool\[32x1x128x384\]{divisor_override=1,kernel_shape=128,1}@Ascend910B2  \[done\]" \
  "^/ReduceSum_1  AveragePool\[32x1x128x384\]{divisor_override=1,kernel_shape=128,1}" \
  "^/Cast_1  Cast\[int64:4096x384\]{dst_type=float16}" "^/ReduceL2  ReduceL2\[32x384\]@Ascend910B2  \[done\]"
(cd "$OUT" && "$TF" fuse "$SRC/examples/minilm_l6.onnx" > minilm_fuse.txt) || fail "fuse minilm exited $?"
grep -qF "149 -> 70 kernels" "$OUT/minilm_fuse.txt" || fail "fuse minilm: $(head -3 "$OUT/minilm_fuse.txt")"
grep -qF "/layer.5/MatMul+/layer.5/Div+/layer.5/Add+/layer.5/Softmax+/layer.5/MatMul_1 (FlashAttention, scores Div,Add)" \
  "$OUT/minilm_fuse.txt" || fail "fuse minilm: no FlashAttention for layer 5: $(grep -m3 Flash "$OUT/minilm_fuse.txt")"
# all-mpnet-base-v2 (make_bert_model_onnx.py --mpnet): RoBERTa's computed position ids, no
# token types, and a relative position bias the export computes at compile time, added to
# every layer's scores as a full [32, 12, 128, 128] operand; fuse takes it into each
# layer's FlashAttention as a second Add of its score chain.
check_onnx_tune mpnet "$SRC/examples/mpnet_base.onnx" 299 \
  "^/embeddings/CumSum  CumSum\[int32:32x128\]@Ascend910B2  \[done\]" \
  "^/layer.11/Add  Add\[49152x128,49152x128\]@Ascend910B2  \[done\]" "^/ReduceL2  ReduceL2\[32x768\]"
! grep -q "token_type" "$OUT/mpnet_tune.txt" || fail "MPNet has no token types: $(grep -m1 token_type "$OUT/mpnet_tune.txt")"
(cd "$OUT" && "$TF" fuse "$SRC/examples/mpnet_base.onnx" > mpnet_fuse.txt) || fail "fuse mpnet exited $?"
grep -qF "/layer.11/MatMul+/layer.11/Div+/layer.11/Add+/layer.11/Add_1+/layer.11/Softmax+/layer.11/MatMul_1 (FlashAttention, scores Div,Add,Add)" \
  "$OUT/mpnet_fuse.txt" || fail "fuse mpnet: the biased attention is not one FlashAttention: $(grep -m3 Flash "$OUT/mpnet_fuse.txt")"
# T5 v1.1 base's encoder (scripts/make_t5_encoder_onnx.py): each T5LayerNorm folds into an
# RmsNorm kernel and each gelu_new into a Gelu; the position bias, computed at compile time,
# and the padding mask are added once, by one Add broadcasting both, for every layer's
# scores. fuse makes each attention a FlashAttention (T5 does not scale its scores) and
# takes the gated GELU (gelu_new(wi_0(x)) * wi_1(x)) into wi_0 as its epilogue.
check_onnx_tune t5 "$SRC/examples/t5_encoder.onnx" 210 \
  "^/block.0/attention_norm/Mul_1  RmsNorm\[4096x768,768\]@Ascend910B2  \[done\]" \
  "^/block.11/Mul_3  Gelu\[4096x2048\]" "^/Add_2  Add\[1x12x128x128,32x1x1x128\]@Ascend910B2  \[done\]"
(cd "$OUT" && "$TF" fuse "$SRC/examples/t5_encoder.onnx" > t5_fuse.txt) || fail "fuse t5 exited $?"
for want in "/block.11/MatMul+/block.11/Add+/block.11/Softmax+/block.11/MatMul_1 (FlashAttention, scores Add)" \
  "/block.11/wi_0/MatMul+/block.11/Mul_3+/block.11/Mul_4 (FusedBatchMatMul, epilogue Gelu,Mul)"; do
  grep -qF "$want" "$OUT/t5_fuse.txt" || fail "fuse t5: no line has '$want': $(grep -m3 block.11 "$OUT/t5_fuse.txt")"
done
# U-Net with bilinear upsampling (scripts/make_unet_onnx.py): each decoder stage's
# nn.Upsample is a Resize kernel to twice its input's size, joined to the encoder's
# features by a Concat on the channels.
check_onnx_tune unet "$SRC/examples/unet.onnx" 49 \
  "^/ups.0/up/Resize  Resize\[32x512x14x14\]{mode=linear,sizes=28,28}@Ascend910B2  \[done\]" \
  "^/ups.3/up/Resize  Resize\[32x64x112x112\]{mode=linear,sizes=224,224}" "^/ups.3/Concat  Concat\[32x64x224x224,32x64x224x224\]{axis=1}"
# Stable Diffusion's VAE encoder (scripts/make_sd_vae_onnx.py): each GroupNorm is an
# InstanceNorm kernel of x viewed as [N, 32, -1] (its view back to x's Shape sized at
# import), each downsampling F.pad(x, (0, 1, 0, 1)) the strided convolution's own padding,
# and the middle block's attention a Softmax over 4,096 positions.
check_onnx_tune vae "$SRC/examples/sd_vae_encoder.onnx" 141 \
  "^/down/down.0/norm1/InstanceNormalization  InstanceNorm\[1x32x1048576,32,32\]@Ascend910B2  \[done\]" \
  "^/down/down.2/conv/Conv  Conv2D\[1x128x512x512,128x128x3x3,128\]{pads=0,1,0,1,strides=2,2}" \
  "^/mid/mid.1/Softmax  Softmax\[4096x4096\]"
! grep -q "^/down/down.2/Pad " "$OUT/vae_tune.txt" || fail "the VAE's downsampling Pad ran as a kernel"
# fuse makes each GroupNorm and its SiLU one kernel, as CANN's GroupNormSilu: the
# InstanceNorm takes the per-channel Mul and Add as its scale and bias, the SiLU as its
# epilogue, reading through the view back to [N, C, H, W].
(cd "$OUT" && "$TF" fuse "$SRC/examples/sd_vae_encoder.onnx" > vae_fuse.txt) || fail "fuse vae exited $?"
for want in "141 -> 60 kernels" \
  "/down/down.0/norm1/InstanceNormalization+/down/down.0/norm1/Mul+/down/down.0/norm1/Add+/down/down.0/Mul (InstanceNorm, epilogue Silu)"; do
  grep -qF "$want" "$OUT/vae_fuse.txt" || fail "fuse vae: no line has '$want': $(head -5 "$OUT/vae_fuse.txt")"
done
# Its decoder (make_sd_vae_onnx.py --decoder): the latent to a 512x512 image, each stage's
# nearest x2 upsampling a Resize kernel before its convolution.
check_onnx_tune vae_decoder "$SRC/examples/sd_vae_decoder.onnx" 188 \
  "^/up/up.3/Resize  Resize\[1x512x64x64\]{sizes=128,128}@Ascend910B2  \[done\]" \
  "^/up/up.14/norm1/InstanceNormalization  InstanceNorm\[1x32x1048576,32,32\]"
# Stable Diffusion 1.5's UNet (scripts/make_sd_unet_onnx.py), batch 2: the timestep
# embedding's outer product of timesteps [2, 1] and frequencies [1, 160] and its Cos, the
# time embedding added per channel to each ResNet block, cross-attention to the 77 text
# states.
check_onnx_tune sd_unet "$SRC/examples/sd_unet.onnx" 944 \
  "^/Mul  Mul\[2x1,1x160\]@Ascend910B2  \[done\]" "^/Cos  Cos\[2x160\]" \
  "^/down.0.0/Add  Add\[2x320x64x64,2x320x1x1\]" \
  "^/down_attn.0.0/attn2/MatMul  BatchMatMul\[2x8x4096x40,2x8x40x77\]"
# CycleGAN's generator (scripts/make_cyclegan_onnx.py): ReflectionPad2d is a Pad kernel,
# InstanceNorm2d an InstanceNorm, and each 3x3/2 transposed convolution a Pad kernel
# dilating its input and a stride-1 Conv2D.
check_onnx_tune cyclegan "$SRC/examples/cyclegan_generator.onnx" 93 \
  "^/0/Pad  Pad\[1x3x256x256\]{mode=reflect,pads=3,3,3,3}@Ascend910B2  \[done\]" \
  "^/19/ConvTranspose/dilate  Pad\[1x256x64x64\]{interior=1,1}" \
  "^/19/ConvTranspose  Conv2D\[1x256x127x127,128x256x3x3,128\]{pads=1,2,1,2}" \
  "^/2/InstanceNormalization  InstanceNorm\[1x64x65536,64,64\]"
fuse_says cyclegan "$SRC/examples/cyclegan_generator.onnx" "/2/InstanceNormalization+/3/Relu (InstanceNorm, epilogue Relu)"
# The PatchGAN discriminator of pix2pix and CycleGAN (scripts/make_patchgan_onnx.py): its
# LeakyReLUs are LeakyRelu kernels, and fuse takes each as the epilogue of the convolution
# or InstanceNorm before it.
check_onnx_tune patchgan "$SRC/examples/patchgan_discriminator.onnx" 12 \
  "^/1/LeakyRelu  LeakyRelu\[8192x128\]@Ascend910B2  \[done\]"
fuse_says patchgan "$SRC/examples/patchgan_discriminator.onnx" \
  "4 of 4 fusion chains fused, 0 of 0 transposes folded, 12 -> 8 kernels" \
  "/3/InstanceNormalization+/4/LeakyRelu (InstanceNorm, epilogue LeakyRelu)"
# ResNet-50 as torch exports it in eval mode (scripts/make_resnet_onnx.py: BatchNorm folded
# into the convolutions): 53 Conv2D, the stem's MaxPool kernel and the head's average
# pooling as a ReduceMean over 7x7; fuse takes each convolution's Relu and residual Add.
check_onnx_tune resnet50 "$SRC/examples/resnet50.onnx" 121 \
  "^/maxpool/MaxPool  MaxPool\[32x64x112x112\]{kernel_shape=3,3,pads=1,1,1,1,strides=2,2}@Ascend910B2  \[done\]" \
  "^/avgpool/GlobalAveragePool  ReduceMean\[65536x49\]@Ascend910B2" "^/fc/Gemm  Gemm\[32x2048,1000x2048,1000\]{transpose_b=1}"
fuse_says resnet50 "$SRC/examples/resnet50.onnx" "49 of 53 fusion chains fused, 0 of 0 transposes folded, 121 -> 56 kernels"
# The same in onnxruntime's int8 QDQ format (scripts/make_qdq_onnx.py): each convolution
# between dequantizes of int8 data an int8 Conv2D writing float16, each QuantizeLinear a
# Cast to int8; fuse takes a quantize after a convolution as its epilogue's last step,
# and a block's output, read both quantized and as the next residual, is written twice.
check_onnx_tune resnet50_int8 "$SRC/examples/resnet50_int8.onnx" 171 \
  "^/conv1/Conv  Conv2D\[int8:32x3x224x224,int8:64x3x7x7,64\]{out_dtype=float16,pads=3,3,3,3,strides=2,2}@Ascend910B2  \[done\]" \
  "^x/QuantizeLinear  Cast\[21504x224\]{dst_type=int8}@Ascend910B2"
fuse_says resnet50_int8 "$SRC/examples/resnet50_int8.onnx" \
  "49 of 53 fusion chains fused, 0 of 0 transposes folded, 171 -> 59 kernels" \
  "/layer1/layer1.0/conv1/Conv+/layer1/layer1.0/relu/Relu+/layer1/layer1.0/relu/Relu_output_0/QuantizeLinear (FusedConv2D, epilogue BiasAdd,Relu,Quantize)" \
  "/layer1/layer1.1/conv3/Conv+/layer1/layer1.1/Add+/layer1/layer1.1/relu_2/Relu+/layer1/layer1.1/relu_2/Relu_output_0/QuantizeLinear (FusedConv2D, epilogue BiasAdd,Add,Relu,Quantize, also the value before Quantize)"
# DenseNet-121 (scripts/make_densenet_onnx.py): BatchNorm before each convolution (not
# folded: a FusedMulAdd per channel), every layer's input the Concat of all before it, the
# transitions' AveragePool after a Pad of zeros (a view), its zero pads left out of the key.
check_onnx_tune densenet "$SRC/examples/densenet121.onnx" 367 \
  "^/features/features.4/layers.1/norm1/BatchNormalization  FusedMulAdd\[32x96x56x56,96x1x1,96x1x1\]" \
  "^/features/features.4/layers.1/Concat  Concat\[32x64x56x56,32x32x56x56\]{axis=1}" \
  "^/features/features.5/features.5.3/AveragePool  AveragePool\[32x128x56x56\]{kernel_shape=2,2,strides=2,2}@Ascend910B2  \[done\]"
# GoogLeNet (scripts/make_googlenet_onnx.py): every max pooling rounds its output up
# (ceil_mode=True, refused before): 3x3/2 of 112 is 56 windows, the last reading a row and
# a column of padding at the end; the inception blocks' four branches join by Concat.
check_onnx_tune googlenet "$SRC/examples/googlenet.onnx" 138 \
  "^/features/features.1/MaxPool  MaxPool\[32x64x112x112\]{kernel_shape=3,3,pads=0,1,0,1,strides=2,2}@Ascend910B2  \[done\]" \
  "^/features/features.5/Concat  Concat\[32x64x28x28,32x128x28x28,32x32x28x28,32x32x28x28\]{axis=1}"
fuse_says googlenet "$SRC/examples/googlenet.onnx" "57 of 57 fusion chains fused, 0 of 0 transposes folded, 138 -> 81 kernels"
# MobileNetV2 (scripts/make_mobilenet_onnx.py): each depthwise 3x3 (a Conv with group =
# channels) is a DepthwiseConv2D on the vector unit, each ReLU6 a Clip, and the 1x1
# expansions stay Conv2D.
check_onnx_tune mobilenet "$SRC/examples/mobilenet_v2.onnx" 99 \
  "^/features/features.2/conv/conv.1/conv.1.0/Conv  DepthwiseConv2D\[32x96x112x112,96x1x3x3,96\]{pads=1,1,1,1,strides=2,2}@Ascend910B2  \[done\]" \
  "^/features/features.2/conv/conv.0/conv.0.0/Conv  Conv2D\[32x16x112x112,96x16x1x1,96\]@Ascend910B2" \
  "^/features/features.2/conv/conv.0/conv.0.2/Clip  Clip\["
# fuse takes each depthwise convolution's ReLU6 into it, as the 1x1 ones' (cube epilogues).
(cd "$OUT" && "$TF" fuse "$SRC/examples/mobilenet_v2.onnx" > mobilenet_fuse.txt) || fail "fuse mobilenet exited $?"
for want in "44 of 45 fusion chains fused, 0 of 0 transposes folded, 99 -> 55 kernels" \
  "/features/features.2/conv/conv.1/conv.1.0/Conv+/features/features.2/conv/conv.1/conv.1.2/Clip (DepthwiseConv2D, epilogue Clip)"; do
  grep -qF "$want" "$OUT/mobilenet_fuse.txt" || fail "fuse mobilenet: no line has '$want': $(head -5 "$OUT/mobilenet_fuse.txt")"
done
# MobileNetV3-Large (make_mobilenet_onnx.py --v3): Hardswish and the squeeze-and-excitation's
# Hardsigmoid gate are kernels of their names; the gate scales x by a broadcast Mul.
check_onnx_tune mobilenet_v3 "$SRC/examples/mobilenet_v3_large.onnx" 139 \
  "^/features/features.4/block/block.2/HardSigmoid  HardSigmoid\[2304x1\]@Ascend910B2  \[done\]" \
  "^/classifier/classifier.1/HardSwish  HardSwish\[32x1280\]" \
  "^/features/features.15/block/block.2/Mul  Mul\[32x960x7x7,32x960x1x1\]"
# EfficientNet-B0 (scripts/make_efficientnet_onnx.py): depthwise 5x5 convolutions, each
# SiLU (Sigmoid and Mul) folded into one Silu kernel, and the squeeze-and-excitation's
# mean a ReduceMean over H*W whose excitation scales x by a broadcast Mul.
check_onnx_tune efficientnet "$SRC/examples/efficientnet_b0.onnx" 189 \
  "^/features/features.4/block/block.1/block.1.0/Conv  DepthwiseConv2D\[32x144x56x56,144x1x5x5,144\]{pads=2,2,2,2,strides=2,2}" \
  "^/features/features.2/block/block.1/block.1.2/Mul  Silu\[172032x56\]@Ascend910B2  \[done\]" \
  "^/features/features.1/block/block.1/Mul  Mul\[32x32x112x112,32x32x1x1\]"
# Whisper-base's audio encoder (scripts/make_whisper_onnx.py): each 1-D convolution a Conv2D
# of height 1 over x viewed [N, C, 1, L], the second at stride 2 to 1,500 frames.
check_onnx_tune whisper "$SRC/examples/whisper_base_encoder.onnx" 133 \
  "^/conv1/Conv  Conv2D\[8x80x1x3000,512x80x1x3,512\]{pads=0,0,1,1}@Ascend910B2  \[done\]" \
  "^/conv2/Conv  Conv2D\[8x512x1x3000,512x512x1x3,512\]{pads=0,0,1,1,strides=1,2}" \
  "^/blocks/blocks.0/attn/Softmax  Softmax\[96000x1500\]"
# fuse makes each of its attentions one FlashAttention (its scores, Softmax and P x v; q and
# k were scaled before), which tune then tunes like any kernel.
(cd "$OUT" && "$TF" fuse "$SRC/examples/whisper_base_encoder.onnx" > whisper_fuse.txt) || fail "fuse whisper exited $?"
grep -qF "133 -> 71 kernels" "$OUT/whisper_fuse.txt" || fail "fuse whisper: $(head -5 "$OUT/whisper_fuse.txt")"
# Its tile timeline, as msprof op simulator shows a MIX_AIC kernel: cube cores and vector cores.
WHISPER_FA="/blocks/blocks.0/attn/MatMul+/blocks/blocks.0/attn/Softmax+/blocks/blocks.0/attn/MatMul_1"
"$TF" profile "$OUT/whisper_base_encoder_fused.json" --trace "$OUT/whisper_tiles.json" --trace-ops "$WHISPER_FA" > /dev/null \
  || fail "profile --trace-ops of a FlashAttention exited $?"
/usr/bin/python3 - "$OUT/whisper_tiles.json" "$WHISPER_FA" <<'PY' || fail "--trace-ops of a FlashAttention: no cube and vector core rows"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] >= 100}
fa = [n for n in names if n.startswith(sys.argv[2] + ": core")]
assert any("core 0" in n for n in fa) and any("core 24" in n for n in fa), sorted(fa)[:6]
assert any(e["ph"] == "X" and "vec chain, online softmax" in e["name"] for e in events)
PY
grep -qF "/blocks/blocks.0/attn/MatMul+/blocks/blocks.0/attn/Softmax+/blocks/blocks.0/attn/MatMul_1 (FlashAttention)" \
  "$OUT/whisper_fuse.txt" || fail "fuse whisper: the attention is not one FlashAttention: $(head -8 "$OUT/whisper_fuse.txt")"
timeout 300 "$TF" tune "$OUT/whisper_base_encoder_fused.json" --budget 2 --strategy random --data-dir "$OUT/kb-whisper-fused" \
  > "$OUT/whisper_fused_tune.txt" 2>&1 || fail "tune of the fused whisper exited $?: $(tail -5 "$OUT/whisper_fused_tune.txt")"
grep -q "^/blocks/blocks.0/attn/MatMul+/blocks/blocks.0/attn/Softmax+/blocks/blocks.0/attn/MatMul_1  FlashAttention\[8x8x1500x64,8x8x64x1500,8x8x1500x64\]@Ascend910B2  \[done\]" \
  "$OUT/whisper_fused_tune.txt" || fail "tune of the fused whisper: no FlashAttention line: $(grep -c done "$OUT/whisper_fused_tune.txt") done"
# wav2vec 2.0 base (scripts/make_wav2vec2_onnx.py): the feature encoder's 1-D convolutions
# over raw audio (the first of one input channel, kernel 10, stride 5), its GroupNorm of
# one channel a group an InstanceNorm, and the grouped positional convolution of kernel 128.
check_onnx_tune wav2vec2 "$SRC/examples/wav2vec2_base.onnx" 279 \
  "^/feature_extractor/conv_layers/conv_layers.0/Conv  Conv2D\[4x1x1x160000,512x1x1x10\]{strides=1,5}@Ascend910B2  \[done\]" \
  "^/feature_extractor/conv_layers/conv_layers.1/InstanceNormalization  InstanceNorm\[4x512x31999,512,512\]" \
  "^/pos_conv_embed/conv/Conv  Conv2D\[4x768x1x499,768x48x1x128,768\]{groups=16,pads=0,0,64,64}"
# ConvNeXt-T (scripts/make_convnext_onnx.py): depthwise 7x7 convolutions, each LayerNorm
# over the channels of x permuted channels-last (the permutes views), the MLP's Linear
# layers MatMuls over the N * H * W rows of C channels.
check_onnx_tune convnext "$SRC/examples/convnext_tiny.onnx" 173 \
  "^/features/features.1/features.1.0/dwconv/Conv  DepthwiseConv2D\[32x96x56x56,96x1x7x7,96\]{pads=3,3,3,3}@Ascend910B2  \[done\]" \
  "^/features/features.1/features.1.0/norm/LayerNormalization  LayerNorm\[100352x96,96,96\]" \
  "^/features/features.1/features.1.0/pwconv1/MatMul  MatMul\[100352x96,96x384\]"
# ViT-B/16 (scripts/make_vit_onnx.py): the patch embedding a Conv 16x16/16 and a Transpose,
# the class token joined before the patches by a Concat, and the classifier reading the
# class token x[:, 0], a Gather of one index: a window view, so the Gemm reads [32, 768].
check_onnx_tune vit "$SRC/examples/vit_b16.onnx" 258 \
  "^/patch/Conv  Conv2D\[32x3x224x224,768x3x16x16,768\]{strides=16,16}" "^/Concat_1  Concat\[32x1x768,32x196x768\]{axis=1}" \
  "^/classifier/Gemm  Gemm\[32x768,1000x768,1000\]{transpose_b=1}"
# The same in int8 QDQ (scripts/make_qdq_onnx.py): each attention, its softmax output
# quantized for P x v, is one int8 FlashAttention that quantizes P itself; each LayerNorm
# before an int8 projection writes int8 itself, as CANN's LayerNormQuant; the projections
# of q, k and v and the FlashAttention take the quantize after their heads' views.
fuse_says vit_int8 "$SRC/examples/vit_b16_int8.onnx" "356 -> 116 kernels" \
  "/layers/layers.0/attention/query/MatMul+/layers/layers.0/attention/query/Add+/layers/layers.0/attention/Transpose_output_0/QuantizeLinear (FusedBatchMatMul, epilogue BiasAdd,Quantize)" \
  "/layers/layers.0/attention/MatMul_1+/layers/layers.0/attention/Reshape_3_output_0/QuantizeLinear (FlashAttention, epilogue Quantize)" \
  "/layers/layers.0/layernorm_before/LayerNormalization+/layers/layers.0/layernorm_before/LayerNormalization_output_0/QuantizeLinear (LayerNorm, epilogue Quantize)" \
  "/layers/layers.0/attention/MatMul+/layers/layers.0/attention/Div+/layers/layers.0/attention/Softmax+/layers/layers.0/attention/Softmax_output_0/QuantizeLinear+/layers/layers.0/attention/MatMul_1 (FlashAttention, scores Div)"
# MobileNetV2 so: each depthwise convolution the int8 DepthwiseConv2D, its ReLU6 and the
# quantize of its output its epilogue.
fuse_says mobilenet_int8 "$SRC/examples/mobilenet_v2_int8.onnx" "152 -> 58 kernels" \
  "/features/features.1/conv/conv.0/conv.0.0/Conv+/features/features.1/conv/conv.0/conv.0.2/Clip+/features/features.1/conv/conv.0/conv.0.2/Clip_output_0/QuantizeLinear (DepthwiseConv2D, epilogue Clip,Quantize)"
# BERT-base so (its token ids left as they are): the attention with its mask one int8
# FlashAttention; a post-norm's LayerNorm also feeds the residual, so its quantize stays a
# Cast kernel (24 of them).
fuse_says bert_int8 "$SRC/examples/bert_base_int8.onnx" "371 -> 141 kernels" \
  "/layer.0/MatMul+/layer.0/Div+/layer.0/Add+/layer.0/Softmax+/layer.0/Softmax_output_0/QuantizeLinear+/layer.0/MatMul_1 (FlashAttention, scores Div,Add)"
# A Llama-2-7B layer so (W8A8): its RMSNorms write int8 (CANN's RmsNormQuant), its
# attention one int8 FlashAttention writing int8 for o_proj, the SwiGLU's quantize
# gate_proj's epilogue's last step; q and k stay float16 for the RoPE, then Cast kernels.
fuse_says llama_int8 "$SRC/examples/llama_layer_int8.onnx" "8 of 9 fusion chains fused, 1 of 1 transposes folded, 29 -> 14 kernels" \
  "/self_attn/MatMul+/self_attn/Div+/self_attn/Add_2+/self_attn/Softmax+/self_attn/Cast_1_output_0/QuantizeLinear+/self_attn/MatMul_1 (FlashAttention, scores Div,Add)" \
  "/input_layernorm/Mul_1+/input_layernorm/Mul_1_output_0/QuantizeLinear (RmsNorm, epilogue Quantize)" \
  "/mlp/gate_proj/MatMul+/mlp/Mul+/mlp/Mul_1+/mlp/Mul_1_output_0/QuantizeLinear (FusedBatchMatMul, epilogue Silu,Mul,Quantize)"
# --resident keeps a graph input or output on the device whatever it is called (an ONNX
# model's past* and present* already are): no H2D or D2H copy of it; fuse writes it into
# the fused graph and passes it on to the report of the baseline; a name the graph has
# not is refused naming the ones it has; tune runs no graph, so without --fuse it refuses.
"$TF" profile "$SRC/examples/gpt2_layer.onnx" --resident x --resident layer_out > "$OUT/resident.txt" \
  || fail "profile --resident exited $?"
grep -qE "^  H2D / D2H +0.0 / 0.0 us" "$OUT/resident.txt" || fail "profile --resident still copies: $(head -5 "$OUT/resident.txt")"
"$TF" profile "$SRC/examples/gpt2_layer.onnx" > "$OUT/not_resident.txt" || fail "profile gpt2 exited $?"
grep -qE "^  H2D / D2H +513.3 / 513.3 us" "$OUT/not_resident.txt" || fail "profile gpt2 copies: $(head -5 "$OUT/not_resident.txt")"
(cd "$OUT" && "$TF" fuse "$SRC/examples/bert_base_layer.json" --resident hidden -o bert_resident.json > bert_resident.txt) \
  || fail "fuse --resident exited $?"
grep -qF -- "--baseline $SRC/examples/bert_base_layer.json --resident hidden\`" "$OUT/bert_resident.txt" \
  || fail "fuse --resident: the report command does not pass it on: $(tail -1 "$OUT/bert_resident.txt")"
/usr/bin/python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['resident'] == ['hidden']" "$OUT/bert_resident.json" \
  || fail "fuse --resident: the fused graph does not keep 'hidden' resident"
expect_2 "--resident of no input or output" "$TF" profile "$SRC/examples/gpt2_layer.onnx" --resident past
grep -qF "resident: 'past' is not a graph input or output (resident tensors stay on the device between steps; the graph's are: x, layer_out)" \
  "$OUT/bad.err" || fail "--resident of no input or output: $(cat "$OUT/bad.err")"
expect_2 "tune --resident without --fuse" "$TF" tune "$SRC/examples/gpt2_layer.onnx" --resident x --data-dir "$OUT/kb-resident"
grep -qF "give --fuse" "$OUT/bad.err" || fail "tune --resident without --fuse: $(cat "$OUT/bad.err")"
echo "cli profile/analyze/fuse OK"
