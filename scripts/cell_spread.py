"""Run-to-run spread of benchmark cells: one row and seed, run several times at both budgets.

What is measured
    A benchmark cell is one row (mechanism) on one seed. Its sizes follow the clock, so the same
    cell run twice may take another stage path (a shrunk tuning stage or none) and certify
    another event (docs/results.md, "Slower machines"). For each cell NAME:SEED this script runs
    the row `--repeats` times at its committed budget (its `budget_seconds` in the committed
    benchmark.json of that seed) and as often at that budget / `--slowdown`, alternating the two
    so that a drifting machine slows both alike, and records each run's bound, its stage sizes
    and the event it certified. At the per-row confidence the committed run recorded.

Why
    The seeds table (scripts/benchmark_seeds.py) checks a 10% bar on one committed and one
    slowed run per cell. Where a cell's runs scatter by more than that, one pair of runs cannot
    say whether a planner change helped. This gives each cell's spread at both budgets, and the
    share of (committed, slowed) pairs of runs in which the slowed run lost more than 10%.

Output
    DIR/cell_spread.md, DIR/cell_spread.json

Usage: python scripts/cell_spread.py --out DIR --cells svt3:0 svt6:1 --repeats 3
           --committed reports reports/benchmark_seeds/s1 reports/benchmark_seeds/s2
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmark import (SLOWDOWN_LOSS, audit_row, change_text, fmt, numpy_reference_seconds,
                       read_run, registry, relative_change)
from _machine import OtherLoad, machine_meta


def parse_cell(text: str) -> tuple[str, int]:
    """'svt3:0' -> ('svt3', 0)."""
    name, sep, seed = text.partition(":")
    if not sep or not name or not seed.isdigit():
        raise argparse.ArgumentTypeError(f"a cell is NAME:SEED, e.g. svt3:0; got {text!r}")
    return name, int(seed)


def committed_runs_by_seed(run_dirs) -> dict:
    """{seed: ({mechanism: budget seconds}, per-row confidence)} from benchmark runs at the
    committed budget."""
    out = {}
    for d in run_dirs:
        rows, meta = read_run(Path(d) / "benchmark.json")
        if meta.get("slowdown", 1.0) != 1.0:
            raise SystemExit(f"{d} was made with --slowdown {meta['slowdown']:g}: give runs at "
                             "the committed budget")
        out[meta["seed"]] = ({r["mechanism"]: r["budget_seconds"] for r in rows},
                             meta["row_confidence"])
    return out


def share_losing(committed: list[float], slowed: list[float], bar: float = SLOWDOWN_LOSS) -> float:
    """The share of (committed, slowed) pairs of runs in which the slowed bound is more than
    `bar` below the committed one: the chance that one run of each fails the seeds table's check."""
    pairs = [(c, s) for c in committed for s in slowed]
    if not pairs:
        raise ValueError("need at least one run at each budget")
    return sum(relative_change(c, s) < -bar for c, s in pairs) / len(pairs)


def run_cell(name: str, seed: int, budget: float, level: float, slowdown: float,
             repeats: int) -> dict:
    """`repeats` runs of the row at `budget` seconds and as many at budget / `slowdown`,
    alternating, each certified at confidence `level`."""
    mechs, truth, correct = registry()
    runs = {"committed": [], "slowed": []}
    for _ in range(repeats):
        for kind, seconds in (("committed", budget), ("slowed", budget / slowdown)):
            with OtherLoad() as load:
                row = audit_row(name, mechs[name], truth[name], name in correct, level, seed,
                                seconds)
            runs[kind].append({"bound": row["epsilon_lower_bound"], "stages": row["stage_sizes"],
                               "seconds": row["seconds"], "budget_seconds": seconds,
                               "event": row["event"], "other_cpu_share": load.others})
            print(f"{name}:{seed} {kind:9s} {fmt(row['epsilon_lower_bound']):>7} "
                  f"{len(row['stage_sizes'])} stages, last {row['stage_sizes'][-1]:,}", flush=True)
    bounds = {k: [r["bound"] for r in v] for k, v in runs.items()}
    return {"mechanism": name, "seed": seed, "true_epsilon": truth[name], "runs": runs,
            "median_committed": statistics.median(bounds["committed"]),
            "median_slowed": statistics.median(bounds["slowed"]),
            "share_losing": share_losing(bounds["committed"], bounds["slowed"])}


def path_text(run: dict) -> str:
    """A run's bound with its stage path: the stage count, its last tuning and last stage."""
    s = run["stages"]
    tuning = f"{s[-2] / 1e6:.1f}M → " if len(s) > 1 else ""
    return f"{fmt(run['bound'])} ({len(s)}: {tuning}{s[-1] / 1e6:.1f}M)"


def markdown(cells: list[dict], meta: dict) -> str:
    lines = ["# Run-to-run spread of benchmark cells", "",
             f"Generated by `{meta['command']}` in {meta['total_seconds']:.0f} s on "
             f"{meta['cpu_model']} (numpy reference {meta['numpy_reference_seconds']:.3f} s at "
             "the start). Each cell (row, seed) is run at its committed budget and at that "
             f"budget / {meta['slowdown']:g}, {meta['repeats']} times each, alternating; a run "
             "is shown as its bound (stage count: last tuning stage → last stage, runs per "
             "input). *Pairs losing >10%*: the share of (committed, slowed) pairs of runs in "
             "which the slowed one certifies more than 10% less, the chance that one run of "
             "each fails the seeds table's check (reports/benchmark_seeds.md).", "",
             "| cell | committed runs | slowed runs | median committed → slowed | "
             "pairs losing >10% |", "|---|---|---|---|--:|"]
    for c in cells:
        committed = "; ".join(path_text(r) for r in c["runs"]["committed"])
        slowed = "; ".join(path_text(r) for r in c["runs"]["slowed"])
        lines.append(f"| {c['mechanism']} seed {c['seed']} | {committed} | {slowed} | "
                     f"{change_text(c['median_committed'], c['median_slowed'])} | "
                     f"{c['share_losing']:.0%} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--cells", required=True, nargs="+", type=parse_cell,
                        metavar="NAME:SEED")
    parser.add_argument("--committed", required=True, nargs="+", metavar="RUN_DIR",
                        help="benchmark dirs at the committed budget, one per seed used")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--slowdown", type=float, default=1.5, metavar="F")
    args = parser.parse_args(argv)
    if args.repeats < 1 or not args.slowdown >= 1.0:
        parser.error("--repeats must be at least 1 and --slowdown at least 1")
    committed = committed_runs_by_seed(args.committed)
    for name, seed in args.cells:
        if name not in committed.get(seed, ({},))[0]:
            parser.error(f"no committed run of seed {seed} with a row {name!r} in "
                         f"{args.committed}")
    meta = {**machine_meta(), "slowdown": args.slowdown, "repeats": args.repeats,
            "numpy_reference_seconds": numpy_reference_seconds(),
            "command": "python scripts/cell_spread.py " + " ".join(sys.argv[1:])}
    started, cells = time.perf_counter(), []
    for name, seed in args.cells:
        budgets, level = committed[seed]
        cells.append(run_cell(name, seed, budgets[name], level, args.slowdown, args.repeats))
    meta["total_seconds"] = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cell_spread.json").write_text(json.dumps({"meta": meta, "cells": cells},
                                                          indent=1))
    (args.out / "cell_spread.md").write_text(markdown(cells, meta))
    print(f"wrote {args.out / 'cell_spread.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
