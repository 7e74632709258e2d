"""What 1.5× fewer runs at every stage cost a row, with no clock and nothing else changed.

What is measured
    For each row and seed, two measurement runs without a time budget (`audit(samples=N,
    stop_early=False)`) at the per-row confidence of the committed benchmark: one with N runs
    per input, one with N/F (F = --factor, 1.5). Stage sizes are planned down from `samples`
    (`pipeline.schedule.plan_stages`), so every stage of the second run, search, tuning and
    last, has 1/F of the first's runs (search samples up to their cap): the allocation an
    ideal time-budgeted planner would give a machine F times slower, with no fixed cost. The
    tuning and last stages draw from position-free seed streams (docs/method.md, "Seed
    streams"), so the smaller run's certifying runs are mostly a prefix of the larger's: the
    change is what fewer runs do to the whole audit, the events it chooses included, not a
    second draw at the same sizes. N defaults to the power of two nearest
    the median last-stage size of the row's committed benchmark runs (--committed), so the
    bounds are those of the benchmark's scale; NAME:LOG2 sets N = 2^LOG2.

Why
    Issue 28's seeds table holds every row to a loss of at most 10% between the committed
    budget and a 1.5× slowdown (scripts/benchmark_seeds.py). A bound that rests on a tail
    whose probabilities vanish grows like a log of the runs (reports/tail_law.md for RNM4's
    exact law), so 1.5× fewer runs cost it a fixed amount, not a fixed share. This gives that
    cost for the engine's own attack on each row: where it comes near 10%, no time-budget
    planner can hold the row to the bar, since a planner gives a slower machine no more than
    this allocation (search costs about the same on any budget, so a shorter budget leaves
    more than F times fewer certifying runs).

Output
    DIR/proportional_loss.json, DIR/proportional_loss.md

Usage: python scripts/proportional_loss.py --out reports --rows rnm4 svt3 svt6:24
           --seeds 0 1 2 --committed reports reports/benchmark_seeds/s1 reports/benchmark_seeds/s2
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import dpverify  # noqa: E402
from benchmark import (SLOWDOWN_LOSS, change_text, committed_runs,  # noqa: E402
                       numpy_reference_seconds, registry, relative_change)
from _machine import machine_meta  # noqa: E402


def parse_row(text: str) -> tuple[str, int | None]:
    """'svt3' -> ('svt3', None); 'svt6:24' -> ('svt6', 24), N = 2^24 runs per input."""
    name, sep, log2 = text.partition(":")
    if not name or (sep and not log2.isdigit()):
        raise argparse.ArgumentTypeError(
            f"a row is NAME or NAME:LOG2 (e.g. svt6:24); got {text!r}")
    return name, int(log2) if sep else None


def nearest_power_of_two(n: float) -> int:
    """The exponent k whose 2^k is nearest n on a log scale."""
    if not n >= 1:
        raise ValueError(f"need a size of at least 1, got {n}")
    return int(round(math.log2(n)))


def committed_last_stages(run_dirs) -> tuple[dict, float]:
    """({row: [last-stage runs per input of each committed run]}, per-row confidence) from
    benchmark runs at the committed budget (all at one confidence)."""
    sizes: dict = {}
    levels = set()
    for rows, meta in committed_runs(run_dirs):
        levels.add(meta["row_confidence"])
        for r in rows:
            sizes.setdefault(r["mechanism"], []).append(r["stage_sizes"][-1])
    if len(levels) != 1:
        raise SystemExit(f"the committed runs were made at different confidences: {levels}")
    return sizes, levels.pop()


def audit_at(mech, samples: int, seed: int, confidence: float) -> dict:
    """One measurement run of `samples` runs per input (no time budget)."""
    started = time.perf_counter()
    r = dpverify.audit(mech, confidence=confidence, stop_early=False, seed=seed,
                       samples=samples)
    return {"samples": samples, "bound": r.epsilon_lower_bound,
            "stage_sizes": [s.samples_per_side for s in r.stages],
            "event": r.witness.event if r.witness else None,
            "seconds": time.perf_counter() - started}


def four(bound: float) -> str:
    """A bound to 4 decimals: rows near their true ε (RNM3, SVT4) move in the fourth."""
    return f"{bound:.4f}"


def mean_change(cells: list[dict]) -> float:
    """The mean relative change from N to N/F over a row's seeds."""
    return statistics.fmean(relative_change(c["full"]["bound"], c["fewer"]["bound"])
                            for c in cells)


def markdown(rows: list[dict], meta: dict) -> str:
    """The report: how it was made, then per row each seed's bound at N → N/F and the mean."""
    seeds = meta["seeds"]
    lines = [f"# What {meta['factor']:g}× fewer runs at every stage cost, with no clock", "",
             f"Generated by `{meta['command']}` in {meta['total_seconds']:.0f} s on "
             f"{meta['cpu_model']} (numpy reference {meta['numpy_reference_seconds']:.3f} s). "
             f"Each cell: the bound of a measurement run with N runs per input and of one with "
             f"N/{meta['factor']:g}, every stage (search, tuning, last) {meta['factor']:g}× "
             "smaller, no time budget, at the committed benchmark's per-row confidence "
             f"({meta['confidence']:.6g}); the change is what {meta['factor']:g}× fewer runs "
             "cost the engine's attack, its choice of events included, when nothing else "
             f"changes. A time-budgeted run on a budget {meta['factor']:g}× shorter gets fewer "
             "certifying runs than this: search costs about the same on any budget. The seeds "
             f"table's bar is a loss of {SLOWDOWN_LOSS:.0%} (reports/benchmark_seeds.md).", "",
             "| row | N (runs per input) | " + " | ".join(f"seed {s}" for s in seeds)
             + " | mean change |", "|---|--:|" + "--:|" * len(seeds) + "--:|"]
    for row in rows:
        cells = {c["seed"]: c for c in row["cells"]}
        shown = [change_text(cells[s]["full"]["bound"], cells[s]["fewer"]["bound"], four)
                 for s in seeds]
        lines.append(f"| {row['mechanism']} | 2^{row['log2']} | " + " | ".join(shown)
                     + f" | {mean_change(row['cells']):+.1%} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--rows", required=True, nargs="+", type=parse_row,
                        metavar="NAME[:LOG2]")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--committed", required=True, nargs="+", metavar="RUN_DIR",
                        help="benchmark dirs at the committed budget: N and the confidence")
    parser.add_argument("--factor", type=float, default=1.5, metavar="F")
    args = parser.parse_args(argv)
    if not args.factor > 1.0:
        parser.error("--factor must be above 1")
    mechs = registry()[0]
    last_stages, confidence = committed_last_stages(args.committed)
    plan = []
    for name, log2 in args.rows:
        if name not in mechs:
            parser.error(f"no benchmark row {name!r}; rows: {', '.join(sorted(mechs))}")
        if log2 is None:
            if name not in last_stages:
                parser.error(f"no committed run of {name!r} in {args.committed}: give NAME:LOG2")
            log2 = nearest_power_of_two(statistics.median(last_stages[name]))
        plan.append((name, log2))
    meta = {**machine_meta(), "factor": args.factor, "seeds": args.seeds,
            "confidence": confidence, "numpy_reference_seconds": numpy_reference_seconds(),
            "command": "python scripts/proportional_loss.py " + " ".join(sys.argv[1:])}
    started, rows = time.perf_counter(), []
    for name, log2 in plan:
        cells = []
        for seed in args.seeds:
            full = audit_at(mechs[name], 2 ** log2, seed, confidence)
            fewer = audit_at(mechs[name], int(2 ** log2 / args.factor), seed, confidence)
            cells.append({"seed": seed, "full": full, "fewer": fewer})
            print(f"{name}:{seed} {change_text(full['bound'], fewer['bound'], four)}",
                  flush=True)
        rows.append({"mechanism": name, "log2": log2, "cells": cells})
    meta["total_seconds"] = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "proportional_loss.json").write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=1))
    (args.out / "proportional_loss.md").write_text(markdown(rows, meta))
    print(f"wrote {args.out / 'proportional_loss.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
