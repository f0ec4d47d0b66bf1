#!/usr/bin/env python3
"""tune_replay_compare.py: compares the search's cost models on recorded
measurements (docs/tuning.md, "Which cost model").

Runs `tirc tune <example> --size S --replay DB --model M --seed s` for every
workload, model and seed (with and without the rule-based default measured
first), reads the best-so-far curve each prints, and writes a Markdown table:
trials until the recorded best (the pool's fastest record) and until within
2% of it, the best found after 16/32/64/128 trials as a fraction of the
recorded best, and the model's CPU time.

usage: tune_replay_compare.py TIRC DB [--seeds N] [--sizes 512,1000x520x333]
"""
import argparse
import statistics
import subprocess
import sys


def run(tirc, db, size, model, seed, no_default):
    cmd = [tirc, "tune", "matmul", "--size", size, "--replay", db, "--model", model,
           "--trials", "10000", "--seed", str(seed)]
    if no_default:
        cmd.append("--no-default")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    curve, fits, fit_ms, model_ms = None, 0, 0.0, 0.0
    for line in out.splitlines():
        if line.startswith("curve:"):
            curve = [float(x) for x in line.split()[1:]]
        elif line.startswith("model:"):
            w = line.split()
            fits, fit_ms, model_ms = int(w[1]), float(w[3]), float(w[7])
    if curve is None:
        sys.exit(f"no curve from {' '.join(cmd)}:\n{out}")
    return curve, fits, fit_ms, model_ms


def first_at(curve, level):
    """1-based trial at which the best so far reaches level."""
    return next(i + 1 for i, g in enumerate(curve) if g >= level)


def trials_stats(xs):
    """Mean, its standard error, median, worst."""
    se = statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else 0.0
    return statistics.mean(xs), se, statistics.median(xs), max(xs)


def summarise(runs):
    best = max(max(c) for c, *_ in runs)  # the pool's best: every run measures the whole pool
    to_best = [first_at(c, best) for c, *_ in runs]
    to_2pct = [first_at(c, 0.98 * best) for c, *_ in runs]
    row = {
        "best": best,
        "pool": len(runs[0][0]),
        "to_best": trials_stats(to_best),
        "to_2pct": trials_stats(to_2pct),
    }
    for n in (16, 32, 64, 128):
        at = [c[min(n, len(c)) - 1] / best for c, *_ in runs]
        row[n] = (statistics.mean(at), min(at))
    fits = sum(f for _, f, _, _ in runs)
    row["fit_ms"] = sum(ms for _, _, ms, _ in runs) / fits if fits else 0.0
    row["model_ms"] = statistics.mean(m for *_, m in runs)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tirc")
    ap.add_argument("db")
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--sizes", default="512,1000x520x333")
    a = ap.parse_args()
    print(f"{a.seeds} seeds (1..{a.seeds}) per row; trials: mean ± its standard error / median / worst; "
          "best after n trials: mean / worst, as a fraction of the recorded best\n")
    print("| workload (pool) | default first | model | trials to best | trials to 2% "
          "| after 16 | after 32 | after 64 | after 128 | CPU ms per fit | model CPU ms per run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for size in a.sizes.split(","):
        for no_default in (False, True):
            for model in ("knn", "xgb", "random"):
                runs = [run(a.tirc, a.db, size, model, s, no_default)
                        for s in range(1, a.seeds + 1)]
                r = summarise(runs)
                tb, t2 = r["to_best"], r["to_2pct"]
                after = " | ".join(f"{r[n][0]:.3f} / {r[n][1]:.3f}" for n in (16, 32, 64, 128))
                fit = f"{r['fit_ms']:.1f}" if model == "xgb" else "-"
                print(f"| {size} ({r['pool']}) | {'no' if no_default else 'yes'} | {model} "
                      f"| {tb[0]:.1f} ± {tb[1]:.1f} / {tb[2]:.0f} / {tb[3]} "
                      f"| {t2[0]:.1f} ± {t2[1]:.1f} / {t2[2]:.0f} / {t2[3]} "
                      f"| {after} | {fit} | {r['model_ms']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
