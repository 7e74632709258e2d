"""What an ideal auditor certifies on ReportNoisyMax4 at n runs per input.

RNM4 (true ε = ∞) releases the max of its answers plus Exp(scale 2/ε) noise. Its best events
are half-lines `output ≤ t` just above the support's edge, where both inputs' probabilities
vanish polynomially, P(max ≤ t) = Π_i (1 − e^{−(t − q_i)/b}) for t ≥ max q_i (0 below), so
the ratio grows without bound as t nears the edge of the input whose edge is higher. How close an
audit may go is set by its runs: a bound on n runs per input grows like a log of n, and a
machine 1.5× slower loses a fixed amount of it, not a fixed share (docs/scaling.md, "Time
budgets").

For each declared pair and direction this script takes the exact probabilities on a fine grid
of t, the expected counts n·p and n·q, and the conditional ratio test's bound on them
(`stats.ratio_epsilon_bound`, the benchmark's RNM4 certificate) at the benchmark's level per
bound (α = 0.1/22, two events: α/4); the best over t and pairs is an ideal auditor's bound:
it knows the best threshold for n exactly, which an audit has to find on its tuning runs.

With --runs and --slowed (the benchmark runs of the seeds table, reports/benchmark_seeds.md),
it also puts the ideal auditor beside each seed's RNM4 runs: its bound at the last-stage size
each run really had, and its change between the two budgets. A time-budgeted run buys more
than 1.5× fewer certifying runs on a budget 1.5× shorter (search and the first tuning stages
cost the same on both); the seeds table asks an audit to lose less than 10% where the ideal
auditor loses its change at those sizes.

Usage: python scripts/tail_law.py --out reports [--runs DIR... --slowed DIR...]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark import change_text, read_run, table_bound_level  # noqa: E402
from dpverify.stats import ratio_epsilon_bound  # noqa: E402
from mechanisms_under_test import ZOO  # noqa: E402

LEVEL = table_bound_level()  # each benchmark bound's one-sided level
SCALE = 2.0 / ZOO["rnm4"].epsilon  # RNM4's noise scale 2/ε at its claimed ε (0.1)
SIZES = (2 ** 27, 2 ** 26, 2 ** 25)  # each also at 1/1.5 of it


def max_cdf(answers: np.ndarray, t: np.ndarray) -> np.ndarray:
    """P(max_i (answers_i + Exp(SCALE)) ≤ t), for each t."""
    gaps = np.clip(t[:, None] - answers[None, :], 0.0, None)
    return np.prod(-np.expm1(-gaps / SCALE), axis=1)


def ideal_bound(n: float) -> tuple[float, float, tuple]:
    """(bound, threshold, pair) of the best half-line on any declared pair at n runs per input."""
    best = (-np.inf, np.nan, ())
    for d, d_prime in ZOO["rnm4"].pairs:
        for p_in, q_in in ((d, d_prime), (d_prime, d)):
            p_in, q_in = np.ravel(p_in).astype(float), np.ravel(q_in).astype(float)
            t = np.linspace(p_in.max(), p_in.max() + 40.0, 40_001)
            k_p, k_q = np.floor(n * max_cdf(p_in, t)), np.floor(n * max_cdf(q_in, t))
            with np.errstate(divide="ignore", invalid="ignore"):
                bounds = np.where(k_p > 0, ratio_epsilon_bound(k_p, k_q, LEVEL), -np.inf)
            i = int(np.argmax(bounds))
            if bounds[i] > best[0]:
                best = (float(bounds[i]), float(t[i]),
                        tuple(tuple(int(v) for v in x) for x in (p_in, q_in)))
    return best


def rnm4_runs(dirs: list[str]) -> dict:
    """seed → (last-stage runs per input, certified bound) of RNM4 in each benchmark run."""
    out = {}
    for d in dirs:
        rows, meta = read_run(Path(d) / "benchmark.json")
        for r in rows:
            if r["mechanism"] == "rnm4":
                out[meta["seed"]] = (r["stage_sizes"][-1], r["epsilon_lower_bound"])
    return out


def seed_lines(committed: dict, slowed: dict) -> list[str]:
    """Markdown rows: per seed, each budget's last-stage size, and the audit's bounds and the
    ideal auditor's at those sizes, each with its change."""
    lines = ["| seed | last stage: committed → slowed | audit | ideal auditor at those sizes |",
             "|--:|--:|--:|--:|"]
    for seed in sorted(set(committed) & set(slowed)):
        (n_c, b_c), (n_s, b_s) = committed[seed], slowed[seed]
        ideal = change_text(ideal_bound(n_c)[0], ideal_bound(n_s)[0])
        lines.append(f"| {seed} | {n_c / 1e6:.1f}M → {n_s / 1e6:.1f}M ({n_c / n_s:.2f}×) | "
                     f"{change_text(b_c, b_s)} | {ideal} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", nargs="*", default=[], metavar="DIR",
                        help="the seeds table's benchmark runs at the committed budget")
    parser.add_argument("--slowed", nargs="*", default=[], metavar="DIR",
                        help="...and the same seeds' runs with --slowdown 1.5")
    args = parser.parse_args()
    if bool(args.runs) != bool(args.slowed):
        parser.error("--runs and --slowed go together: the seeds table's runs at the committed "
                     "budget and the same seeds' slowed runs")
    rows = ["| runs per input | ideal bound | threshold t | at 1/1.5 of the runs | change |",
            "|--:|--:|--:|--:|--:|"]
    losses = []
    for n in SIZES:
        bound, t, pair = ideal_bound(n)
        slowed = ideal_bound(n / 1.5)[0]
        losses.append(slowed / bound - 1)
        rows.append(f"| {n:,} | {bound:.3f} | {t:.3f} | {slowed:.3f} | {losses[-1]:+.1%} |")
    text = "\n".join([
        "# ReportNoisyMax4: an ideal auditor's bound against its runs",
        "",
        "Written by `scripts/tail_law.py` (its docstring gives the method). The best half-line",
        f"is on the pair {pair[0]} vs {pair[1]}. A bound resting on a tail whose probabilities",
        "vanish near the support's edge grows like a log of the runs, so 1.5× fewer runs cost",
        f"even the ideal auditor {-max(losses):.1%} to {-min(losses):.1%} of it at these sizes,",
        "before any noise in the threshold an audit has to choose on its tuning runs.",
        "", *rows, ""])
    if args.runs:
        text += "\n".join([
            "", "## Beside the seeds table's runs", "",
            "Generated with `--runs " + " ".join(args.runs) + " --slowed "
            + " ".join(args.slowed) + "`: each seed's RNM4 runs at the committed budget and "
            "at a 1.5× slowdown (reports/benchmark_seeds.md), the last-stage runs per input "
            "each had, its certified bound, and the ideal auditor's bound at the same sizes. "
            "A budget 1.5× shorter buys more than 1.5× fewer certifying runs (search and the "
            "first tuning stages cost the same on both budgets); the table's check asks "
            "the audit to lose less than 10% where the ideal auditor loses what the last "
            "column gives.", "",
            *seed_lines(rnm4_runs(args.runs), rnm4_runs(args.slowed)), ""])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tail_law.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
