"""What the benchmark's two tightest rows can certify at the sizes they ran at.

What is measured
    SVT4 and ReportNoisyMax3 are the rows whose best sound published bound (0.172, 0.249) lies
    within 2% of the largest log-ratio any event on their declared pairs has (0.1749, 0.250).
    For each, this script takes the best event (SVT4: the output ⊥⁹⊤ on (1, …, 1) vs
    (2, …, 2, 0); RNM3: max ≤ t on (1, …, 1) vs (0, …, 0), t chosen to maximise the bound),
    computes its exact probabilities under both inputs by numerical integration (no sampling),
    and from them the bound the engine's coupled t-test is expected to certify on n runs per
    input (`stats.expected_coupled_epsilon`, the delta method of docs/theory.md; under common
    random numbers the event's hits under one input are a subset of those under the other, so
    the per-run variance is 1/q − 1/p). It does this at the last-stage size of every benchmark
    run given, at the row's level (the runs' recorded `row_confidence`, all of α on that one
    event, as `concentrate` does at best), and finds the size at which the expected bound
    reaches the best sound published figure (RNM3: 0.2485, which ties 0.249 at the published
    3 decimals).

Why
    A row below its published figure may lose to a planner cliff (runs lost for nothing) or to
    the sample itself (the best event certified on all the runs the budget buys still falls
    short). The second is a fact about the machine and the budget, not the planner; this says
    which. The expected bound is the median of the certified one; the certified bound of the
    best event scatters around it by about a third of its margin (the t quantile is ~3).

Output
    DIR/sample_limits.md, DIR/sample_limits.json

Usage: python scripts/sample_limits.py --out DIR --runs RUN_DIR ...
    (RUN_DIR: a directory holding a benchmark.json of scripts/benchmark.py)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from scipy import integrate
from scipy.optimize import brentq
from scipy.stats import laplace, norm

from dpverify.sampling import BATCHED_CHUNK_SIZE
from dpverify.stats import coupled_block_size, expected_coupled_epsilon
from benchmark import best_sound_published
from mechanisms_under_test import TRUE_EPSILON



def svt4_probability(queries, bottoms, epsilon=0.1, threshold=1.0):
    """P[⊥^bottoms ⊤] (then its abort) for SVT4 (mechanisms_under_test.svt: ε₁ = ε/4,
    ρ ~ Lap(1/ε₁), νᵢ ~ Lap(1/ε₂), cutoff 1) on query answers `queries`, integrating over ρ."""
    eps1 = epsilon / 4
    rho, nu = laplace(scale=1 / eps1), laplace(scale=1 / (epsilon - eps1))

    def density(r):
        below = np.prod([nu.cdf(threshold + r - a) for a in queries[:bottoms]], axis=0)
        return rho.pdf(r) * below * nu.sf(threshold + r - queries[bottoms])

    return integrate.quad(density, -2000, 2000, points=[0.0], limit=500)[0]


#: SVT4's two candidate events: (label, D', ⊥ before the ⊤), each against D = (1, …, 1). The
#: first has the largest ratio on the declared pairs; the second, a StatDP pattern, is 2× as
#: likely at a ratio capped below the published figure, and the search often prefers it.
SVT4_EVENTS = (("⊥⁹⊤, (1, …, 1) vs (2, …, 2, 0)", (2.0,) * 9 + (0.0,), 9),
               ("⊥⁵⊤, (1, …, 1) vs (2, 2, 2, 2, 2, 0, …, 0)", (2.0,) * 5 + (0.0,) * 5, 5))


def svt4_probabilities():
    """(label, p, q) of SVT4_EVENTS, p under D = (1, …, 1) (the likelier input)."""
    ones = (1.0,) * 10
    return [(label, svt4_probability(ones, k), svt4_probability(other, k))
            for label, other, k in SVT4_EVENTS]


def rnm3_probabilities(t, epsilon=0.1, n_queries=5):
    """P[max ≤ t] under (0, …, 0) and under (1, …, 1) for RNM3 (Lap(2/ε) noise, the max
    noisy value released)."""
    noise = laplace(scale=2 / epsilon)
    return noise.cdf(t) ** n_queries, noise.cdf(t - 1) ** n_queries


def expected_bound(p, q, n, alpha):
    """The coupled t-test's expected bound on n runs per input with all of α on one event
    whose hits under Q are a subset of those under P (per-run variance 1/q − 1/p)."""
    block = coupled_block_size(int(n), BATCHED_CHUNK_SIZE)
    blocks = max(-(-int(n) // block), 2) if block else 2
    return float(expected_coupled_epsilon(p, q, 1 / q - 1 / p, n, blocks, 0.0, alpha))


def best_rnm3(n, alpha):
    """(expected bound, t) of the best half-line max ≤ t at n runs."""
    grid = np.linspace(-10, 10, 401)
    bounds = [expected_bound(*rnm3_probabilities(t), n, alpha) for t in grid]
    i = int(np.argmax(bounds))
    return bounds[i], float(grid[i])


def pass_chance(p, q, n, alpha, target):
    """The chance that the coupled t-test's bound on n runs reaches `target`. The bound is the
    estimate ln(p̂/q̂) less a margin fixed by n and α, and the estimate scatters about ln(p/q)
    with standard error √((1/q − 1/p)/n) (the delta method, as `expected_bound`), so the
    bound is about normal around its expected value with that error:
    Φ((expected − target)/se)."""
    se = math.sqrt((1 / q - 1 / p) / n)
    return float(norm.cdf((expected_bound(p, q, n, alpha) - target) / se))


def runs_to_reach(target, bound_at):
    """The last-stage size at which `bound_at(n)` reaches `target`."""
    return float(math.exp(brentq(lambda x: bound_at(math.exp(x)) - target,
                                 math.log(1e5), math.log(1e10))))


def run_rows(run_dirs):
    """SVT4 and RNM3 of each run: seed, slowed or not, last-stage size, event, bound."""
    out = []
    for d in run_dirs:
        doc = json.loads((Path(d) / "benchmark.json").read_text())
        slowed = doc["meta"].get("slowdown", 1.0) not in (None, 1.0)
        for row in doc["rows"]:
            if row["mechanism"] in ("svt4", "rnm3"):
                out.append({"run": str(d), "seed": row["seed"], "slowed": slowed,
                            "mechanism": row["mechanism"], "last_stage": row["stage_sizes"][-1],
                            "event": short_event(row["event"]),
                            "certified": row["epsilon_lower_bound"]})
    return out


def short_event(text: str) -> str:
    """An SVT output (0 = ⊥, 1 = ⊤, −1 after the abort) as ⊥^k⊤; other events as given."""
    if "(e.g. (" not in text:
        return text
    values = [int(v) for v in text.split("(e.g. (")[1].split(")")[0].split(",")]
    bottoms = values.index(1) if 1 in values else len(values)
    power = str(bottoms).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"⊥{power}⊤" if 1 in values else f"⊥{power}"


def row_alpha(run_dirs) -> float:
    """1 − the per-row confidence the runs were certified at (`benchmark.row_confidence`,
    recorded in each run's meta); the runs must agree on it."""
    levels = {json.loads((Path(d) / "benchmark.json").read_text())["meta"]["row_confidence"]
              for d in run_dirs}
    if len(levels) != 1:
        raise SystemExit(f"the runs were certified at different row confidences: {levels}")
    return 1 - levels.pop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--runs", nargs="+", required=True)
    args = ap.parse_args(argv)
    alpha = row_alpha(args.runs)
    svt4 = svt4_probabilities()
    # each event: (label, its rates (p, q) at n runs per input, its log-ratio)
    events = {"svt4": [(label, lambda n, p=p, q=q: (p, q), math.log(p / q))
                       for label, p, q in svt4],
              "rnm3": [("max ≤ t, (1, …, 1) vs (0, …, 0)",
                        lambda n: rnm3_probabilities(best_rnm3(n, alpha)[1]),
                        TRUE_EPSILON["rnm3"])]}
    published = {m: best_sound_published(m, TRUE_EPSILON[m])[0] for m in events}
    # the benchmark counts a bound that rounds to the published 3 decimals as a tie
    target = {m: published[m] - 0.0005 for m in events}
    needed = {m: runs_to_reach(target[m], lambda n, rates=events[m][0][1]: expected_bound(
        *rates(n), n, alpha)) for m in events}
    rows = run_rows(args.runs)
    for r in rows:
        n = r["last_stage"]
        rates = [rates_at(n) for _, rates_at, _ in events[r["mechanism"]]]
        r["expected"] = [expected_bound(p, q, n, alpha) for p, q in rates]
        r["chance"] = pass_chance(*rates[0], n, alpha, target[r["mechanism"]])
    summary = {m: [{"event": label, "log_ratio": ratio} for label, _, ratio in evs]
               for m, evs in events.items()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sample_limits.json").write_text(json.dumps(
        {"alpha_per_row": alpha, "events": summary, "target": target, "runs_needed": needed,
         "rows": rows}, indent=1, ensure_ascii=False))
    command = "python scripts/sample_limits.py " + " ".join(sys.argv[1:] if argv is None else argv)
    (args.out / "sample_limits.md").write_text(
        markdown(rows, alpha, summary, target, needed, command))
    for r in rows:
        print(f"{r['mechanism']} seed {r['seed']}{' slowed' if r['slowed'] else ''}: "
              f"{r['last_stage']:,} runs, expected {r['expected']}, {r['event']} "
              f"certified {r['certified']:.4f}")
    return 0


def markdown(rows, alpha, events, target, needed, command) -> str:
    s4, r3 = events["svt4"], events["rnm3"][0]
    lines = [
        "# What the tightest rows can certify at their sample sizes", "",
        f"Generated by `{command}`, from the benchmark runs of "
        "`reports/benchmark_seeds.md`. For each run, the bound an event is *expected* to "
        "certify (the median; exact probabilities, no sampling) by the coupled t-test with "
        f"all of the row's α = {alpha:.5f} on it, on the run's last-stage size; beside it the "
        "event the run certified and its bound. An expected figure below the published one "
        "means that event cannot reach it on that many runs; a certified bound below the "
        "expected one of the same event is the sample's scatter (about a third of the "
        "margin either way) or an α split over several events.", "",
        f"- SVT4, best event {s4[0]['event']}: log-ratio {s4[0]['log_ratio']:.4f}; "
        f"{target['svt4']:.4f} (ties the published 0.172) needs {needed['svt4'] / 1e6:.1f} M "
        f"last-stage runs per input. The StatDP pattern {s4[1]['event']} is twice as likely "
        f"but its log-ratio is {s4[1]['log_ratio']:.4f}, so close to the tie that only the "
        "largest runs are expected to reach it.",
        f"- RNM3, best event {r3['event']} (t chosen per size): log-ratio ≤ 0.2500; "
        f"{target['rnm3']:.4f} (ties the published 0.249) needs {needed['rnm3'] / 1e6:.1f} M.",
        *chance_lines(rows, target),
        "", "Expected (best): the first event of each row above; expected (⊥⁵⊤): SVT4's "
        "second; chance: that the best event's certified bound reaches the figure above "
        "(`pass_chance`).", "",
        "| row | run | last-stage runs per input | event certified | certified | "
        "expected (best) | expected (⊥⁵⊤) | chance |",
        "|---|---|--:|---|--:|--:|--:|--:|"]
    for r in rows:
        label = f"seed {r['seed']}" + (" slowed" if r["slowed"] else "")
        other = f"{r['expected'][1]:.4f}" if len(r["expected"]) > 1 else "—"
        lines.append(f"| {r['mechanism']} | {label} | {r['last_stage']:,} | {r['event']} | "
                     f"{r['certified']:.4f} | {r['expected'][0]:.4f} | {other} | "
                     f"{r['chance']:.0%} |")
    return "\n".join(lines) + "\n"


def chance_lines(rows, target) -> list[str]:
    """Per row and budget, the chance that every run's best event reaches the row's figure
    (the runs' chances multiplied: their samples are independent)."""
    lines = []
    for m in ("svt4", "rnm3"):
        for slowed in (False, True):
            runs = [r for r in rows if r["mechanism"] == m and r["slowed"] == slowed]
            if runs:
                lines.append(
                    f"- {m.upper()}, {'slowed' if slowed else 'committed'} runs "
                    f"({len(runs)}): all {len(runs)} reach {target[m]:g} with chance "
                    f"{math.prod(r['chance'] for r in runs):.0%}, for an auditor that "
                    "certifies the best event with all of α on it.")
    return lines


if __name__ == "__main__":
    sys.exit(main())
