#!/usr/bin/python3
"""Optuna's TPESampler and RandomSampler on the shared Kernel Tuner caches (issue 4).

The side-by-side baseline of bench/strategies.sh, scored exactly as bench/strategy_bench.cc
scores tunefleet's strategies (Schoonhoven et al. 2022): one categorical parameter per tune
param, a trial whose config is absent from the cache or failed counts as time 1e10, every
trial is an evaluation (Optuna may repeat a config; the repeat costs one too), and
fraction_of_optimum(n) = optimum / best time of the first n trials, mean over seeds 1..N.
Optuna knows what tunefleet's strategies know in advance: a config whose block_size_x x
block_size_y x block_size_z exceeds the device's 1024 threads per block (Kernel Tuner's
max_threads; not applied when the cache measured such a block) is pruned before it runs,
so it costs no evaluation and the sampler learns to avoid it.
Needs Debian's python3-optuna: run it with /usr/bin/python3, not the python3 on PATH.
Writes JSON: {"datasets": {name: {"tpe": {"mean": [...], "per_seed": [[...]]}, ...}}}.
"""
import argparse
import gzip
import json
import os
import sys
import time

import optuna

PENALTY = 1e10
MAX_THREADS_PER_BLOCK = 1024  # as common/include/tunefleet/common/kt_cache.h
BLOCK_SIZE_NAMES = ("block_size_x", "block_size_y", "block_size_z")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    keys = doc["tune_params_keys"]
    params = {k: doc["tune_params"][k] for k in keys}
    table = {}
    for key, entry in doc["cache"].items():
        t = entry.get("time")
        table[key] = t if isinstance(t, (int, float)) else PENALTY
    optimum = min(v for v in table.values() if v < PENALTY)
    blocks = [i for i, k in enumerate(keys) if k in BLOCK_SIZE_NAMES and all(isinstance(v, int) for v in params[k])]

    def threads(config):
        n = 1
        for i in blocks:
            n *= config[i]
        return n

    measured = [[entry.get(k) for k in keys] for entry in doc["cache"].values()]
    if not blocks or any(threads(c) > MAX_THREADS_PER_BLOCK for c in measured if None not in c):
        return keys, params, table, optimum, lambda config: True
    return keys, params, table, optimum, lambda config: threads(config) <= MAX_THREADS_PER_BLOCK


def run(sampler_name, seed, keys, params, table, optimum, allowed, budgets):
    sampler = (optuna.samplers.TPESampler(seed=seed) if sampler_name == "tpe"
               else optuna.samplers.RandomSampler(seed=seed))
    study = optuna.create_study(direction="minimize", sampler=sampler)

    evaluations = []

    def objective(trial):
        config = [trial.suggest_categorical(k, params[k]) for k in keys]
        if not allowed(config):
            raise optuna.TrialPruned()  # over the device's thread limit: known, not measured
        # Kernel Tuner's cache key: ",".join(str(v) for v in config).
        evaluations.append(table.get(",".join(str(v) for v in config), PENALTY))
        return evaluations[-1]

    def enough(study, trial):
        if len(evaluations) >= max(budgets):
            study.stop()

    # The trial cap only bounds a sampler stuck over the limit; TPE learns to avoid it.
    study.optimize(objective, n_trials=100 * max(budgets), callbacks=[enough])
    values = evaluations
    fractions, best = [], float("inf")
    for n, v in enumerate(values, start=1):
        best = min(best, v)
        if n in budgets:
            fractions.append(optimum / best)
    return fractions


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets-dir", required=True)
    ap.add_argument("--datasets", default="", help="comma-separated substrings of file names")
    ap.add_argument("--samplers", default="tpe,random")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budgets", default="25,50,100,200,400")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    budgets = [int(b) for b in args.budgets.split(",")]
    filters = [f for f in args.datasets.split(",") if f]
    files = sorted(f for f in os.listdir(args.datasets_dir)
                   if f.endswith((".json", ".json.gz")) and (not filters or any(x in f for x in filters)))
    if not files:
        sys.exit(f"strategies_optuna: no cache files matching '{args.datasets}' in {args.datasets_dir}")
    out = {"budgets": budgets, "seeds": args.seeds, "optuna_version": optuna.__version__, "datasets": {}}
    for f in files:
        name = f.split(".json")[0]
        keys, params, table, optimum, allowed = load(os.path.join(args.datasets_dir, f))
        out["datasets"][name] = {}
        for sampler in args.samplers.split(","):
            start = time.monotonic()
            per_seed = [run(sampler, s, keys, params, table, optimum, allowed, budgets)
                        for s in range(1, args.seeds + 1)]
            mean = [sum(r[i] for r in per_seed) / len(per_seed) for i in range(len(budgets))]
            seconds = time.monotonic() - start
            out["datasets"][name][sampler] = {"mean": mean, "per_seed": per_seed, "seconds": seconds}
            print(f"optuna {sampler:6s} {name:28s} " + " ".join(f"{m:.3f}" for m in mean) + f"  ({seconds:.0f} s)",
                  file=sys.stderr, flush=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
