#!/usr/bin/env bash
# strategy_bench --trace and bench/trace_regions.py end to end, on a toy Kernel Tuner cache
# written here: one JSON line per run with as many configs as the budget, absent and failed
# configs at fraction 0, region counts that match the trace, and a clear exit 2 on bad input.
set -uo pipefail
BUILD="${TUNEFLEET_BUILD_DIR:?set TUNEFLEET_BUILD_DIR to the build folder}"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
BENCH="$BUILD/bench/strategy_bench"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 4 x 4 product: a*b > 9 is absent, (1,1) failed, the rest take 1 + |a-3| + |b-2| ms.
mkdir -p "$OUT/caches"
/usr/bin/python3 - "$OUT/caches/toy_kernel.json" <<'PY'
import json, sys
cache = {}
for a in range(1, 5):
    for b in range(1, 5):
        if a * b > 9:
            continue
        t = "RuntimeFailedConfig" if (a, b) == (1, 1) else 1.0 + abs(a - 3) + abs(b - 2)
        cache[f"{a},{b}"] = {"a": a, "b": b, "time": t}
json.dump({"device_name": "toy", "kernel_name": "toy", "problem_size": [1], "tune_params_keys": ["a", "b"],
           "tune_params": {"a": [1, 2, 3, 4], "b": [1, 2, 3, 4]}, "objective": "time", "cache": cache},
          open(sys.argv[1], "w"))
PY

"$BENCH" --datasets-dir "$OUT/caches" --strategies random,auto --seeds 3 --budgets 4,8 \
  --trace "$OUT/trace.jsonl" > "$OUT/bench.txt" || fail "strategy_bench --trace exited $?"
/usr/bin/python3 - "$OUT/trace.jsonl" <<'PY' || fail "trace lines are not one per run with the budget's configs"
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
assert len(runs) == 2 * 3 * 2 * 2, len(runs)  # strategies x seeds x budgets x {seq, x8}
for r in runs:
    assert r["params"] == ["a", "b"], r["params"]
    assert len(r["configs"]) == r["budget"] == len(r["fractions"]), r
    assert len({tuple(c) for c in r["configs"]}) == len(r["configs"]), "a config evaluated twice"
    for (a, b), f in zip(r["configs"], r["fractions"]):
        bad = a * b > 9 or (a, b) == (1, 1)
        want = 0.0 if bad else 1.0 / (1.0 + abs(a - 3) + abs(b - 2))
        assert abs(f - want) < 1e-9, (a, b, f, want)
PY

# Region counts from the script against the same counts taken from the trace here.
/usr/bin/python3 "$SRC/bench/trace_regions.py" "$OUT/trace.jsonl" --region "a=3,b=1|2" --reach 1.0 \
  > "$OUT/regions.txt" || fail "trace_regions.py exited $?"
/usr/bin/python3 - "$OUT/trace.jsonl" "$OUT/regions.txt" <<'PY' || fail "trace_regions.py's counts differ from the trace"
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
text = open(sys.argv[2]).read()
r = [x for x in runs if x["strategy"] == "random" and x["budget"] == 8 and x["in_flight"] == 1]
inside = sum(sum(1 for a, b in x["configs"] if a == 3 and b in (1, 2)) for x in r) / len(r)
never = sum(1 for x in r if not any(a == 3 and b in (1, 2) for a, b in x["configs"]))
reached = sum(1 for x in r if max(x["fractions"]) >= 1.0)
block = text.split("toy_kernel random budget 8 x1:")[1].split("\n")
assert f"{reached} reach 1.0" in block[0], block[0]
assert f"never in {never} runs, {inside:.1f} evaluations inside" in block[1], block[1]
PY

/usr/bin/python3 "$SRC/bench/trace_regions.py" "$OUT/trace.jsonl" --region c=1 > /dev/null 2> "$OUT/err.txt" \
  && fail "an unknown parameter was accepted"
grep -q "no parameter \['c'\]" "$OUT/err.txt" || fail "unknown parameter error does not name it: $(cat "$OUT/err.txt")"
"$BENCH" --datasets-dir "$OUT/caches" --strategies random --seeds 1 --budgets 4 --trace "$OUT/no/such/dir/t" \
  > /dev/null 2> "$OUT/err.txt" && fail "an unwritable --trace was accepted"
grep -q "cannot write" "$OUT/err.txt" || fail "unwritable --trace error unclear: $(cat "$OUT/err.txt")"
echo "strategy_trace_test: ok"
