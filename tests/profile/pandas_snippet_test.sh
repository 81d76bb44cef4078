#!/usr/bin/env bash
# The seed's pandas snippet, unchanged, on a profiler_data.csv exported by
# `tunefleet profile --csv`, with Debian's /usr/bin/python3 + python3-pandas. Fails when the
# CSV's columns, units or numbers are wrong (checked against op_summary.csv and the graph).
set -euo pipefail
BUILD="${TUNEFLEET_BUILD_DIR:?set TUNEFLEET_BUILD_DIR to the build folder}"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
"$BUILD/cli/tunefleet" profile "$SRC/examples/bert_base_layer.json" --csv "$OUT" > "$OUT/stdout.txt"
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
import pandas as pd
out = sys.argv[1]
df = pd.read_csv(f"{out}/profiler_data.csv")
# --- the seed's snippet, unchanged ---
top = df.groupby("op_name")["duration"].sum().sort_values(ascending=False).head(10)
ai_core = df[df["unit"] == "AI Core"]["duration"].sum()
# --- checks ---
print(top)
print("AI Core total us:", ai_core)
assert list(df.columns) == ["op_name", "duration", "unit"], df.columns
assert df["duration"].dtype.kind == "f" and df["duration"].notna().all() and (df["duration"] >= 0).all()
assert set(df["unit"]) <= {"AI Core", "AI CPU", "HCCL", "PCIe", "Host"}, set(df["unit"])
assert {"AI Core", "PCIe", "Host"} <= set(df["unit"]), set(df["unit"])
ops = pd.read_csv(f"{out}/op_summary.csv")
assert abs(ai_core - ops["Task Duration(us)"].sum()) < 1e-3 * len(ops) + 1e-6, (ai_core, ops["Task Duration(us)"].sum())
summary = json.load(open(f"{out}/run_summary.json"))
assert 0 < ai_core <= summary["step_us"], (ai_core, summary["step_us"])
assert len(top) == 10, len(top)
# The example's 500 us of host preprocessing leads; among kernels the FFN's two MatMuls
# (4096x768x3072 GEMMs) are BERT's heaviest.
assert top.index[0] == "host_preprocess" and top.iloc[0] == 500, top
kernel_top = df[df["unit"] == "AI Core"].groupby("op_name")["duration"].sum().sort_values(ascending=False)
assert set(kernel_top.index[:2]) == {"ffn.intermediate.matmul", "ffn.output.matmul"}, list(kernel_top.index)
assert list(top.values) == sorted(top.values, reverse=True)
kernels = df[df["unit"] == "AI Core"]
assert len(kernels) == 22, len(kernels)
print("pandas snippet OK")
PY
