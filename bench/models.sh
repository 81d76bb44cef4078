#!/usr/bin/env bash
# The model rows of bench/README.md in one run: for each example model, `tune --budget 200`
# and `report` (default tilings -> tuned), then `tune --fuse --budget 200` and `report` of
# the fused graph against the model as given (default tilings -> fused and tuned), each in
# a knowledge base of its own. Prints one line per model: kernels, step times in ms and
# the two improvements. The simulator is deterministic and every strategy is seeded, so
# a rerun of one build prints the same figures.
#   bash bench/models.sh [BUILD_DIR] [MODEL[@mask]...]
# MODEL is a name under examples/ without .onnx; MODEL@mask also passes
# `--causal-mask mask` (the Llama layers' mask input) to the fused run. Default: every
# model row.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
shift || true
here=$(cd "$(dirname "$0")/.." && pwd)
models=("$@")
if ((${#models[@]} == 0)); then
  models=(llama_layer llama_layer@mask llama_layer_int8@mask llama3_layer llama3_layer@mask gpt2_layer gpt2 bert_base bert_base_int8
    resnet50 resnet50_int8 densenet121 googlenet vit_b16 vit_b16_int8 mobilenet_v2 mobilenet_v2_int8 whisper_base_encoder
    wav2vec2_base convnext_tiny mobilenet_v3_large efficientnet_b0 roberta_base mpnet_base t5_encoder minilm_l6
    unet sd_unet sd_vae_encoder sd_vae_decoder cyclegan_generator patchgan_discriminator
    llama_decode_layer)
fi
bin=$build/cli/tunefleet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# report_ms JSON KEY: one figure of `report --json`.
report_ms() { /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

printf '%-26s %9s %10s %10s %8s %12s %8s\n' model kernels default tuned ratio fused+tuned ratio
for entry in "${models[@]}"; do
  name=${entry%@mask}
  flags=()
  [[ $entry == *@mask ]] && flags=(--causal-mask mask)
  model=$here/examples/$name.onnx
  dir=$work/$entry
  mkdir -p "$dir"
  "$bin" tune "$model" --budget 200 --data-dir "$dir/kb" > "$dir/tune.log"
  "$bin" report "$model" --data-dir "$dir/kb" --json > "$dir/tuned.json"
  # `tune --fuse` writes NAME_fused.json in the working folder.
  (cd "$dir" && "$bin" tune "$model" --fuse --budget 200 --data-dir fkb "${flags[@]}" > fuse.log 2>&1)
  "$bin" report "$dir/${name}_fused.json" --data-dir "$dir/fkb" --baseline "$model" "${flags[@]}" --json > "$dir/fused.json"
  default=$(report_ms "$dir/tuned.json" 'model_baseline_performance(ms)')
  tuned=$(report_ms "$dir/tuned.json" 'model_result_performance(ms)')
  fused=$(report_ms "$dir/fused.json" 'model_result_performance(ms)')
  awk -v m="$entry" -v k="$(report_ms "$dir/tuned.json" kernel_nodes)/$(report_ms "$dir/fused.json" kernel_nodes)" \
    -v d="$default" -v t="$tuned" -v f="$fused" \
    'BEGIN { printf "%-26s %9s %10.4f %10.4f %7.3fx %12.4f %7.3fx\n", m, k, d, t, d / t, f, d / f }'
done
