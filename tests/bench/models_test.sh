#!/usr/bin/env bash
# bench/models.sh, which re-measures bench/README.md's model rows, on three of them: one
# line per model with its kernels unfused and fused, the default-tilings step time (the
# simulator's, fixed), tuned and fused-and-tuned times below it, each ratio its two times'
# quotient; MODEL@mask passes --causal-mask to the fused run only; a model that is not
# an example fails the script.
set -uo pipefail
BUILD="${TUNEFLEET_BUILD_DIR:?set TUNEFLEET_BUILD_DIR to the build folder}"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$SRC/bench/models.sh" "$BUILD" patchgan_discriminator llama_layer llama_layer@mask > "$OUT/out.txt" 2> "$OUT/err.txt" \
  || fail "models.sh exited $?: $(cat "$OUT/err.txt")"
/usr/bin/python3 - "$OUT/out.txt" <<'PY' || fail "models.sh printed: $(cat "$OUT/out.txt")"
import sys
lines = open(sys.argv[1]).read().splitlines()
assert lines[0].split() == ["model", "kernels", "default", "tuned", "ratio", "fused+tuned", "ratio"], lines[0]
rows = {l.split()[0]: l.split() for l in lines[1:]}
assert list(rows) == ["patchgan_discriminator", "llama_layer", "llama_layer@mask"], list(rows)
for name, (_, kernels, default, tuned, ratio, fused, fused_ratio) in rows.items():
    d, t, f = float(default), float(tuned), float(fused)
    assert f < t < d, (name, d, t, f)
    assert abs(float(ratio.rstrip("x")) - d / t) < 1e-3 and abs(float(fused_ratio.rstrip("x")) - d / f) < 1e-3, name
assert rows["patchgan_discriminator"][1:3] == ["12/8", "0.1544"], rows["patchgan_discriminator"]
assert rows["llama_layer"][1:3] == ["21/12", "7.6638"], rows["llama_layer"]
# The mask changes only the fused run: its FlashAttention skips the key blocks masked whole.
assert rows["llama_layer@mask"][1:4] == rows["llama_layer"][1:4], rows
assert float(rows["llama_layer@mask"][5]) < float(rows["llama_layer"][5]), rows
PY
bash "$SRC/bench/models.sh" "$BUILD" no_such_model > "$OUT/none.txt" 2>&1 && fail "models.sh took a model that is not an example"
grep -q "no_such_model" "$OUT/none.txt" || fail "models.sh does not name the missing model: $(cat "$OUT/none.txt")"
echo "models.sh: $(($(wc -l < "$OUT/out.txt") - 1)) rows checked"
