#!/usr/bin/env python3
"""Where a strategy's evaluations go: reads strategy_bench --trace (JSON Lines) and, per
dataset, strategy, budget and configs in flight, reports how soon runs first evaluate a
config in a region of the space (parameter=value conditions), how many of their
evaluations land there, and how many runs reach a fraction of optimum.

  build/bench/strategy_bench --strategies auto --datasets conv --seeds 160 --budgets 50 \\
      --trace /tmp/conv.jsonl
  python3 bench/trace_regions.py /tmp/conv.jsonl \\
      --region read_only=1,use_padding=0,use_shmem=1 \\
      --region read_only=1,use_padding=0,use_shmem=1,tile_size_x=1,tile_size_y=3 --reach 0.8

A region is given once per --region; a condition may list values with '|', e.g.
block_size_y=1|2|4. Standard library only.
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict


def parse_region(text):
    conditions = {}
    for item in text.split(","):
        name, sep, values = item.partition("=")
        if not sep or not name or not values:
            raise argparse.ArgumentTypeError(
                f"region condition '{item}' is not name=value (or name=v1|v2), e.g. use_shmem=1")
        conditions[name] = {int(v) for v in values.split("|")}
    return text, conditions


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", help="JSON Lines from strategy_bench --trace")
    ap.add_argument("--region", type=parse_region, action="append", default=[],
                    help="comma-separated parameter=value conditions; repeatable")
    ap.add_argument("--reach", type=float, default=0.8, help="fraction of optimum counted as reached")
    args = ap.parse_args(argv)

    groups = defaultdict(list)
    with open(args.trace) as f:
        for n, line in enumerate(f, 1):
            try:
                run = json.loads(line)
                key = (run["dataset"], run["strategy"], run["budget"], run["in_flight"])
                groups[key].append(run)
            except (json.JSONDecodeError, KeyError) as e:
                sys.exit(f"trace_regions: {args.trace}:{n} is not a strategy_bench --trace line ({e})")

    for (dataset, strategy, budget, in_flight), runs in sorted(groups.items()):
        params = runs[0]["params"]
        reached = sum(1 for r in runs if max(r["fractions"], default=0) >= args.reach)
        failed = statistics.mean(sum(1 for x in r["fractions"] if x == 0) for r in runs)
        mean = statistics.mean(max(r["fractions"], default=0) for r in runs)
        print(f"{dataset} {strategy} budget {budget} x{in_flight}: {len(runs)} runs, mean fraction "
              f"{mean:.3f}, {reached} reach {args.reach}, {failed:.1f} absent/failed evaluations per run")
        for text, conditions in args.region:
            unknown = set(conditions) - set(params)
            if unknown:
                sys.exit(f"trace_regions: --region {text}: no parameter {sorted(unknown)} "
                         f"in {dataset} (parameters: {', '.join(params)})")
            at = [params.index(name) for name in conditions]
            wanted = list(conditions.values())
            firsts, inside = [], []
            for r in runs:
                hits = [j for j, c in enumerate(r["configs"]) if all(c[a] in w for a, w in zip(at, wanted))]
                firsts.append(hits[0] if hits else None)
                inside.append(len(hits))
            found = [x for x in firsts if x is not None]
            median = statistics.median(found) if found else float("nan")
            print(f"  region {text}: first evaluated at median {median} (of runs that did), "
                  f"never in {firsts.count(None)} runs, {statistics.mean(inside):.1f} evaluations inside per run")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
