#!/usr/bin/env bash
# `tunefleet tune` with no evaluation count, ended by seconds or patience only: auto's
# choice against an in-order walk (`--strategy exhaustive`, what auto ran there until
# stop 42) on the same ops, flags and seeds, side by side. Prints, per ops file and
# limit, the geometric mean over ops and seeds of walk latency / auto latency (above 1:
# auto found faster configs), each against the default tilings, and the evaluations.
#   bash bench/auto_open_ended.sh [BUILD_DIR] [SEEDS]
set -euo pipefail
build=${1:-build}
seeds=${2:-3}
bin=$build/cli/tunefleet
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ops in bert_base_layer_ops resnet50_convs_sample; do
  for limit in "--budget-seconds 2" "--patience 200"; do
    for seed in $(seq 1 "$seeds"); do
      for strategy in exhaustive auto; do
        # shellcheck disable=SC2086  # $limit is a flag and its value
        "$bin" tune "$here/examples/$ops.json" $limit --strategy "$strategy" --seed "$seed" \
          --data-dir "$work/kb@$ops@${limit// /=}@$seed@$strategy" --json >"$work/$ops@${limit// /=}@$seed@$strategy.json"
      done
    done
  done
done
/usr/bin/python3 - "$work" <<'EOF'
import glob, json, math, os, sys
from collections import defaultdict
pairs = defaultdict(list)  # (ops, limit) -> [(walk task, auto task)]
for walk in sorted(glob.glob(os.path.join(sys.argv[1], "*@exhaustive.json"))):
    ops, limit, _seed, _ = os.path.basename(walk).split("@")
    auto = json.load(open(walk.replace("@exhaustive.json", "@auto.json")))["tasks"]
    pairs[(ops, limit)] += zip(json.load(open(walk))["tasks"], auto)
geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
for (ops, limit), ts in sorted(pairs.items()):
    print(f"{ops} {limit}: walk / auto latency {geo([w['best_latency_us'] / a['best_latency_us'] for w, a in ts]):.3f}"
          f" (min {min(w['best_latency_us'] / a['best_latency_us'] for w, a in ts):.3f});"
          f" / default tilings walk {geo([w['best_latency_us'] / w['baseline_latency_us'] for w, _ in ts]):.3f},"
          f" auto {geo([a['best_latency_us'] / a['baseline_latency_us'] for _, a in ts]):.3f};"
          f" evaluations per op walk {sum(w['evaluated'] for w, _ in ts) / len(ts):.0f},"
          f" auto {sum(a['evaluated'] for _, a in ts) / len(ts):.0f} ({len(ts)} op runs)")
EOF
