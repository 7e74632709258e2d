"""The benchmark's spread over seeds, at the committed budget and on a slower machine.

Reads benchmark.json files written by `scripts/benchmark.py` (one per seed at the committed
budget, one per seed with `--slowdown F`) and writes a table of every row's bounds per seed at
both budgets, with the checks of issue 28: each bound at or above the best sound published one
(rows that tie with it at the published 3 decimals, or whose ε is likely ∞ by a support
mismatch, excepted), none above the true ε, every verdict as expected, and no row losing more
than SLOWDOWN_LOSS of its bound between the two budgets on the same seed.

Usage: python scripts/benchmark_seeds.py --runs DIR... --slowed DIR... --out FILE.md
(exit 1 when a check fails)
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from _machine import at_most, busiest_row
from benchmark import SLOWDOWN_LOSS, fmt, read_run, relative_change


def load(dirs: list[str]) -> dict:
    """seed → (meta, {mechanism: row}) of each DIR/benchmark.json, by the seed its meta
    records."""
    runs = {}
    for d in dirs:
        rows, meta = read_run(Path(d) / "benchmark.json")
        runs[meta["seed"]] = (meta, {r["mechanism"]: r for r in rows})
    return runs


def row_problems(row: dict) -> list[str]:
    """What a single run of a row fails: below the published bound (ties at 3 decimals and
    support mismatches excepted; with the bound and the last-stage runs it rested on), above
    the true ε, or a verdict other than the expected."""
    out = []
    if (row["best_sound_published"] is not None and not row["at_least_best_published"]
            and not row["ties_at_published_precision"] and not row["support_mismatch"]):
        sizes = row.get("stage_sizes")
        runs = f" on {sizes[-1] / 1e6:.1f}M last-stage runs per input" if sizes else ""
        out.append(f"below published ({row['epsilon_lower_bound']:.4g} < "
                   f"{row['best_sound_published']:g}{runs})")
    if row["above_true_epsilon"]:
        out.append("above true ε")
    if row["verdict"] != row["expected_verdict"]:
        out.append(f"verdict {row['verdict']}")
    return out


def last_stages(row: dict, srow: dict) -> str:
    """", last stage 96.7M → 42.3M runs per input (2.29× fewer)": the certifying runs each
    budget bought, beside a loss (a budget F times shorter buys more than F times fewer when
    search costs the same on both); "" for runs that did not record their stage sizes."""
    if not (row.get("stage_sizes") and srow.get("stage_sizes")):
        return ""
    n, m = row["stage_sizes"][-1], srow["stage_sizes"][-1]
    return f", last stage {n / 1e6:.1f}M → {m / 1e6:.1f}M runs per input ({n / m:.2f}× fewer)"


def table(runs: dict, slowed: dict) -> tuple[list[str], list[str]]:
    """The markdown lines of the table, and the failed checks."""
    seeds = sorted(set(runs) & set(slowed))
    names = list(runs[seeds[0]][1])
    head = ("| mechanism | true ε | best published | "
            + " | ".join(f"seed {s}" for s in seeds) + " | "
            + " | ".join(f"seed {s} slowed (change)" for s in seeds) + " |")
    lines = [head, "|---|--:|--:|" + "--:|" * (2 * len(seeds))]
    failures = []
    for name in names:
        first = runs[seeds[0]][1][name]
        cells, slow_cells = [], []
        for s in seeds:
            row, srow = runs[s][1][name], slowed[s][1][name]
            change = relative_change(row["epsilon_lower_bound"], srow["epsilon_lower_bound"])
            if math.isnan(change):
                change = None
            committed = row_problems(row)
            slowed_problems = [f"slowed: {p}" for p in row_problems(srow)]
            if change is not None and change < -SLOWDOWN_LOSS:
                slowed_problems.append(f"loses {-change:.0%}{last_stages(row, srow)}")
            failures += [f"{name} seed {s}: {p}" for p in committed + slowed_problems]
            cells.append(f"{row['epsilon_lower_bound']:.4g}{' ⚠' if committed else ''}")
            pct = "" if change is None else f" ({change:+.1%})"
            slow_cells.append(f"{srow['epsilon_lower_bound']:.4g}{pct}"
                              f"{' ⚠' if slowed_problems else ''}")
        best = first["best_sound_published"]
        truth = first["true_epsilon"]
        lines.append(f"| {name} | {fmt(truth)} | {fmt(best)} | " + " | ".join(cells)
                     + " | " + " | ".join(slow_cells) + " |")
    return lines, failures


def busiest(rows: dict) -> str:
    """The row of a run during which other processes took most of the CPU, as text ("" for
    runs that did not record it)."""
    found = busiest_row(rows.values())
    if found is None:
        return ""
    share, name = found
    return f", other processes {at_most(share)} of the CPU ({name})"


def machine(meta: dict, rows: dict) -> str:
    """A run's speed reference, wall time and busiest row, as the report's list gives them."""
    return (f"numpy reference {meta['numpy_reference_seconds']:.3f} s, "
            f"{meta.get('total_seconds', 0):.0f} s{busiest(rows)}")


def report(runs: dict, slowed: dict) -> tuple[str, list[str]]:
    """The markdown report (header, machine lines, table, failed checks) and the failures."""
    lines, failures = table(runs, slowed)
    factor = next(iter(slowed.values()))[0].get("slowdown")
    meta = [f"seed {s}: {machine(m, rows)}; slowed {machine(*slowed[s])}"
            for s, (m, rows) in sorted(runs.items()) if s in slowed]
    text = [
        f"# Benchmark over seeds, at the committed budget and {factor:g}× slower",
        "",
        f"Each seed's table run twice, back to back on one machine: at the committed budget and "
        f"with every time budget divided by {factor:g} (`scripts/benchmark.py --slowdown "
        f"{factor:g}`), as a machine that much slower would run it. A cell is the certified "
        f"ε ≥ at confidence 0.9 for the whole table; the slowed cell gives the change from the "
        f"same seed at the committed budget. ⚠ marks the cell of a failed check: below the "
        f"best sound published bound (rows tied with it at the published 3 decimals, or "
        f"reported as ε likely ∞ by a support mismatch, excepted), above the true ε, a "
        f"verdict other than the expected, or a loss of more than {SLOWDOWN_LOSS:.0%}. Each "
        f"run's line gives the most CPU other processes took during one of its rows "
        f"(`_machine.OtherLoad`): a busy machine buys fewer runs in the same budget.",
        "", *[f"- {m}" for m in meta], "", *lines, "",
        f"**Failed checks: {len(failures)}.**", "", *[f"- {f}" for f in failures],
    ]
    return "\n".join(text) + "\n", failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", required=True, help="benchmark dirs, committed budget")
    parser.add_argument("--slowed", nargs="+", required=True, help="benchmark dirs, --slowdown F")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    text, failures = report(load(args.runs), load(args.slowed))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
