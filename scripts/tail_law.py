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

Usage: python scripts/tail_law.py --out reports
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark import table_bound_level  # noqa: E402
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
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
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tail_law.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
