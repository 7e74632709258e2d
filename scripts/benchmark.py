"""The DP-Sniper benchmark plus the floating-point pair: our certified bounds beside the published
ones, the true ε, verdicts, samples and seconds.

The 20 mechanisms of DP-Sniper's benchmark (Bichsel et al., S&P 2021; published bounds in
PUBLISHED) and the floating-point pair of docs/theory.md §6, each audited once as a measurement
run at a fixed number of certifying runs per input (ROW_SAMPLES: the same seed gives the same
table on any machine), at a confidence that holds for the whole table (`row_confidence`); how to
read it: docs/results.md, "The benchmark". Writes DIR/benchmark.json (after every row) and
DIR/benchmark.md. Exits 1 if a bound exceeds its true ε, a verdict is not the expected one, or a
row's bound, verdict or sample counts differ from those of --same-as FILE.

Usage: python scripts/benchmark.py --out DIR [--only NAME ...] [--confidence 0.9] [--seed 0]
                                   [--same-as FILE] [--rewrite-markdown]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
import timeit
from pathlib import Path

import numpy as np

from _common import machine_line, read_json, table, write_json  # puts the repository on the path
import dpverify
from dpverify.certificate_ids import certificate_id
from dpverify.result import COUPLED, RATIO_TEST, TWO_BOUNDS
from _machine import OtherLoad, at_most, busiest_row, machine_meta
from mechanisms_under_test import CORRECT, TRUE_EPSILON, ZOO
from mechanisms_under_test.dpsniper import CORRECT_DPSNIPER, DPSNIPER, TRUE_EPSILON_DPSNIPER
from mechanisms_under_test.floating_point import CORRECT_FLOATING, FLOATING, TRUE_EPSILON_FLOATING

# zoo name → (name in the paper, DP-Sniper LR, DP-Sniper NN, StatDP), as published by DP-Sniper
# (Bichsel et al., S&P 2021) and StatDP (Ding et al., CCS 2018)
PUBLISHED = {
    "laplace": ("Laplace", 0.097, 0.098, 0.100),
    "truncated_geometric": ("TruncatedGeometric", 0.116, 0.116, 0.117),
    "noisy_hist1": ("NoisyHist1", 0.098, 0.098, 0.099),
    "noisy_hist2": ("NoisyHist2", 4.602, 4.602, 10.00),
    "rnm1": ("ReportNoisyMax1", 0.092, 0.093, 0.092),
    "rnm2": ("ReportNoisyMax2", 0.098, 0.098, 0.100),
    "rnm3": ("ReportNoisyMax3", 0.248, 0.249, 0.199),
    "rnm4": ("ReportNoisyMax4", 0.346, 0.353, 0.199),
    "svt1": ("SVT1", 0.086, 0.086, 0.041),
    "svt2": ("SVT2", 0.086, 0.085, 0.041),
    "svt3": ("SVT3", 0.172, 0.182, 0.179),
    "svt4": ("SVT4", 0.169, 0.170, 0.172),
    "svt5": ("SVT5", 1.761, 1.761, 14.31),
    "svt6": ("SVT6", 0.272, 0.270, 0.322),
    "rappor": ("RAPPOR", 0.293, 0.301, 0.242),
    "one_time_rappor": ("OneTimeRAPPOR", 0.598, 0.600, 0.471),
    "laplace_parallel": ("LaplaceParallel", 0.035, 0.030, 0.014),
    "svt34_parallel": ("SVT34Parallel", 0.261, 0.262, 0.196),
    "prefix_sum": ("PrefixSum", 0.504, 0.577, 0.352),
    "numerical_svt": ("NumericalSVT", 0.034, 0.035, None),
}
# DP-Sniper's floating-point experiment: a classifier on the raw 64 bits
PUBLISHED_FLOAT = {
    "numpy_laplace": ("Laplace (numpy floats)", 0.252),
    "snapping_laplace": ("Snapping Laplace", 0.098),
}
# published figures that are not sound bounds (events chosen on the data that tested them)
UNSOUND = {("noisy_hist2", "statdp")}

MECHANISMS = {**ZOO, **DPSNIPER, **FLOATING}
TRUTH = {**TRUE_EPSILON, **TRUE_EPSILON_DPSNIPER, **TRUE_EPSILON_FLOATING}
EXPECTED_TO_PASS = set(CORRECT) | set(CORRECT_DPSNIPER) | set(CORRECT_FLOATING)


def fmt(x) -> str:
    """A bound or a figure at the published precision: 3 decimals, "∞", or "—" for none."""
    return "—" if x is None else "∞" if math.isinf(x) else f"{x:.3f}"


def best_sound_published(name: str, truth: float) -> tuple[float | None, str]:
    """The largest published bound that is sound (not above the truth, not marked unsound)."""
    if name in PUBLISHED_FLOAT:
        return PUBLISHED_FLOAT[name][1], "float experiment"
    tools = zip(("DP-Sniper LR", "DP-Sniper NN", "StatDP"), ("lr", "nn", "statdp"),
                PUBLISHED[name][1:])
    sound = [(x, label) for label, key, x in tools
             if x is not None and x <= truth and (name, key) not in UNSOUND]
    return max(sound) if sound else (None, "")


# Certifying runs per input of each row's last stage: what 30 s a row bought on the 2-core
# reference machine, rounded to a power of two (at most 2^27 ≈ 1.3·10^8; DP-Sniper: ~4·10^8).
ROW_SAMPLES = {
    "laplace": 1 << 27, "truncated_geometric": 1 << 27, "noisy_hist1": 1 << 26,
    "noisy_hist2": 1 << 26, "rnm1": 1 << 27, "rnm2": 1 << 27, "rnm3": 1 << 27,
    "rnm4": 1 << 26, "svt1": 1 << 27, "svt2": 1 << 25, "svt3": 1 << 25, "svt4": 1 << 26,
    "svt5": 1 << 27, "svt6": 1 << 24, "rappor": 1 << 23, "one_time_rappor": 1 << 24,
    "laplace_parallel": 1 << 25, "svt34_parallel": 1 << 23, "prefix_sum": 1 << 24,
    "numerical_svt": 1 << 25, "numpy_laplace": 1 << 27, "snapping_laplace": 1 << 27,
}


def numpy_reference_seconds(repeats: int = 3) -> float:
    """Best of `repeats` timings of 2^22 × 5 Laplace draws on one thread: the machine's speed."""
    rng = np.random.default_rng(0)
    return min(timeit.repeat(lambda: rng.laplace(0.0, 1.0, size=(1 << 22, 5)), number=1,
                             repeat=repeats))


def row_confidence(family_confidence: float, rows: int) -> float:
    """Each row's confidence so that all `rows` bounds hold together at `family_confidence`
    (union bound)."""
    if not 0.0 < family_confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {family_confidence!r}")
    if rows < 1:
        raise ValueError("a table needs at least one row")
    return 1.0 - (1.0 - family_confidence) / rows


def audit_row(name: str, mech, truth: float, correct: bool, confidence: float, seed: int) -> dict:
    """One measurement run of `mech` at its fixed ROW_SAMPLES, as a table row."""
    r = dpverify.audit(mech, confidence=confidence, stop_early=False, seed=seed,
                       samples=ROW_SAMPLES[name])
    best, source = best_sound_published(name, truth)
    published = PUBLISHED.get(name, (None, None, None, None))
    return {
        "mechanism": name, "paper_name": (PUBLISHED_FLOAT.get(name) or published)[0],
        "true_epsilon": truth,
        "expected_verdict": "pass" if correct else "violation", "verdict": r.outcome,
        "epsilon_lower_bound": r.epsilon_lower_bound, "support_mismatch": r.support_mismatch,
        "dpsniper_lr": published[1], "dpsniper_nn": published[2], "statdp": published[3],
        "published_float": PUBLISHED_FLOAT.get(name, (None, None))[1],
        "best_sound_published": best, "best_source": source,
        "at_least_best_published": best is not None and r.epsilon_lower_bound >= best,
        # the published figures have 3 decimals: a bound that rounds to the figure ties with it
        "ties_at_published_precision": (best is not None and r.epsilon_lower_bound < best
                                        and round(r.epsilon_lower_bound, 3) >= best),
        "above_true_epsilon": r.epsilon_lower_bound > truth + 1e-12,
        "samples_per_side": r.samples_per_side, "samples": r.samples, "seconds": r.seconds,
        "stage_sizes": [s.samples_per_side for s in r.stages], "seed": seed,
        **{key: getattr(r.witness, key) if r.witness else None
           for key in ("certificate", "attack", "event")},
    }


# the witness's certificate (`result.Witness.certificate`), in a table cell
CERTIFICATES = {COUPLED: "coupled t-test", RATIO_TEST: "ratio test", TWO_BOUNDS: "two bounds"}


def read_run(path: Path) -> tuple[list[dict], dict]:
    """(rows, meta) of a benchmark.json, its infinities (written as strings) read back."""
    document = read_json(path)
    return document["rows"], document["meta"]


def differences(rows: list[dict], other: list[dict]) -> list[str]:
    """Where two runs of the table disagree, row by row: bound, verdict or sample counts."""
    theirs = {r["mechanism"]: r for r in other}
    out = []
    for r in rows:
        o = theirs.get(r["mechanism"])
        if o is None:
            out.append(f"{r['mechanism']}: not in the other run")
            continue
        out += [f"{r['mechanism']}: {key} {r[key]!r} here, {o[key]!r} there"
                for key in ("epsilon_lower_bound", "verdict", "samples_per_side", "samples")
                if r[key] != o[key]]
    return out


def same_as(rows: list[dict], path: Path) -> dict:
    """--same-as: `differences` from another run, and how that one ran (seconds, load)."""
    other_rows, other = read_run(path)
    diff = differences(rows, other_rows)
    print(f"against {path}: " + ("identical bounds, verdicts and sample counts" if not diff
                                 else "\n  ".join(["differs:", *diff])))
    busiest = busiest_row(other_rows)
    return {"file": str(path), "seed": other.get("seed"), "differences": diff,
            "total_seconds": other.get("total_seconds"),
            "numpy_reference_seconds": other.get("numpy_reference_seconds"),
            "busiest_other_share": busiest[0] if busiest else None}


def same_as_text(check: dict | None) -> list[str]:
    """The report's sentence on the --same-as check (none without one)."""
    if not check:
        return []
    how = (f"seed {check['seed']}, {check['total_seconds']:.0f} s, numpy reference "
           f"{check['numpy_reference_seconds']:.3f} s")
    if check.get("busiest_other_share") is not None:
        how += (f", other processes taking {at_most(check['busiest_other_share'])} of the CPU "
                "during a row")
    found = ("**identical bounds, verdicts and sample counts in every row**; only the seconds "
             "differ" if not check["differences"] else "**differs** in "
             + "; ".join(check["differences"]))
    return [f"- Checked against another run of this table ({how}): {found}."]


def table_cells(row: dict) -> list[str]:
    ours = fmt(row["epsilon_lower_bound"]) + (" (support mismatch: likely ∞)"
                                              if row["support_mismatch"] else "")
    verdict = row["verdict"] + ("" if row["verdict"] == row["expected_verdict"]
                                else f" (**expected {row['expected_verdict']}**)")
    published = ([fmt(row["dpsniper_lr"]), fmt(row["dpsniper_nn"]), fmt(row["statdp"])]
                 if row["published_float"] is None
                 else ["—", "—", f"— (float experiment: {fmt(row['published_float'])})"])
    reached = ("yes" if row["at_least_best_published"]
               else f"ties at 3 decimals ({row['epsilon_lower_bound']:.4f})"
               if row.get("ties_at_published_precision")
               else "no, but ε likely ∞ (support mismatch)" if row["support_mismatch"]
               else "**no**")
    return [row["paper_name"], fmt(row["true_epsilon"]), verdict, f"**{ours}**", *published,
            reached, f"{row['samples_per_side']:,}", f"{row['samples']:,}",
            f"{row['seconds']:.1f}", str(row["attack"]),
            CERTIFICATES.get(certificate_id(row.get("certificate")), "—")]


def preamble(rows: list[dict], meta: dict) -> list[str]:
    """The paragraphs above the table: what is certified, and where and how it ran."""
    facts = [f"Seed {meta['seed']}", f"total **{meta['total_seconds']:.0f} s** for {len(rows)} "
             "mechanisms (DP-Sniper LR: 2047 s for its 20 on a larger machine)",
             f"speed reference {meta['numpy_reference_seconds']:.3f} s for numpy to draw "
             "2^22 × 5 Laplace values on one thread (the seconds scale with it)"]
    busiest = busiest_row(rows)
    if busiest is not None:
        facts.append(f"other processes took {at_most(busiest[0])} of the CPU during any row "
                     f"({busiest[1]}; a busy machine takes longer, with the same result)")
    return [f"Every mechanism claims ε = 0.1. Our bounds hold at confidence "
            f"{meta['confidence']:g} (DP-Sniper's level) **for the whole table**: each row is "
            f"certified at {meta['row_confidence']:.4f} (union bound over {meta['rows_planned']}) "
            "by one measurement run at a fixed number of certifying runs per input, so the same "
            "seed gives the same table on any machine. A pass means no violation was found at this "
            "budget. Published figures: DP-Sniper (Bichsel et al., S&P 2021; ~4·10^8 samples "
            "per mechanism, 90% Clopper–Pearson) and StatDP (best of two runs). How to read the "
            "table: [docs/results.md](../docs/results.md#the-benchmark).", "",
            machine_line(meta) + " " + "; ".join(facts) + "."]


def paper_names(rows: list[dict], keep=lambda row: True) -> str:
    """The paper names of the rows `keep` keeps, support mismatches marked."""
    mismatch = " (support mismatch: ε likely ∞)"
    return ", ".join(r["paper_name"] + (mismatch if r["support_mismatch"] else "")
                     for r in rows if keep(r)) or "none"


def summary(rows: list[dict], meta: dict) -> list[str]:
    """The bullets under the table: what the rows found, the --same-as check, the certificates."""
    above = paper_names(rows, lambda r: r["above_true_epsilon"])
    ties = paper_names(rows, lambda r: r.get("ties_at_published_precision"))
    below = paper_names(rows, lambda r: not r["at_least_best_published"]
                        and not r.get("ties_at_published_precision"))
    dpsniper = [r for r in rows if r["dpsniper_lr"] is not None]
    short = [r for r in dpsniper
             if r["epsilon_lower_bound"] < max(r["dpsniper_lr"], r["dpsniper_nn"])]
    allowed = f" (a false alarm each row's confidence {meta['row_confidence']:.4f} allows)"
    return [
        f"- Bounds above the true ε: **{above}**" + ("" if above == "none" else allowed) + ".",
        "- Verdicts different from the expected one: "
        f"**{paper_names(rows, lambda r: r['verdict'] != r['expected_verdict'])}**.",
        *same_as_text(meta.get("same_as")),
        "- At least the best sound published bound (the largest not above the true ε): "
        f"**{sum(r['at_least_best_published'] for r in rows)} of {len(rows)}**; tied with it at "
        f"its 3 decimals: {ties}; below it: {below}.",
        "- At least both DP-Sniper bounds (LR and NN, ~4·10^8 samples each): "
        f"**{len(dpsniper) - len(short)} of {len(dpsniper)}**"
        + (f"; short: {paper_names(short)}" if short else "") + ".",
        "- *Certificate*: how the witness was certified (docs/method.md, \"How a violation is "
        "certified\").",
    ]


def write_outputs(out: Path, rows: list[dict], meta: dict) -> None:
    """DIR/benchmark.json and DIR/benchmark.md of the rows so far."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "benchmark.json", {"rows": rows, "meta": meta})
    header = ("mechanism", "true ε", "verdict", "ours: certified ε ≥", "DP-Sniper LR",
              "DP-Sniper NN", "StatDP", "≥ best sound published", "samples per input",
              "runs in total", "seconds", "attack", "certificate")
    lines = ["# Benchmark: the DP-Sniper mechanisms and the floating-point pair", "",
             *preamble(rows, meta), "",
             *table(header, [table_cells(r) for r in rows], align="lrlrrrrlrrrll"), "",
             *summary(rows, meta)]
    if not meta.get("complete"):
        lines += ["", "*Partial run: the rows above are the ones that finished.*"]
    (out / "benchmark.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def run(names: list[str], confidence: float, seed: int, out: Path) -> tuple[list[dict], dict]:
    """Audit the rows `names` one by one, writing the outputs after each."""
    per_row = row_confidence(confidence, len(names))
    meta = {**machine_meta(), "confidence": confidence, "row_confidence": per_row,
            "rows_planned": len(names), "seed": seed,
            "numpy_reference_seconds": numpy_reference_seconds(), "complete": False}
    rows, started = [], time.perf_counter()
    for name in names:
        with OtherLoad() as load:
            row = audit_row(name, MECHANISMS[name], TRUTH[name], name in EXPECTED_TO_PASS,
                            per_row, seed)
        # what else ran meanwhile: it slows a row down, never changes its result
        row["other_cpu_share"], row["steal_share"] = load.others, load.steal
        rows.append(row)
        meta["total_seconds"] = time.perf_counter() - started
        write_outputs(out, rows, meta)
        print(f"{name:20s} {row['verdict']:9s} ours {fmt(row['epsilon_lower_bound']):>7}  "
              f"true {fmt(row['true_epsilon']):>6}  {row['seconds']:6.1f} s", flush=True)
    meta["complete"] = True
    meta["total_seconds"] = time.perf_counter() - started
    return rows, meta


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=[*PUBLISHED, *PUBLISHED_FLOAT])
    parser.add_argument("--confidence", type=float, default=0.9,
                        help="the whole table's confidence (each of R rows at 1 − (1 − C)/R)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--same-as", type=Path, metavar="FILE",
                        help="another run's benchmark.json, to compare row by row")
    parser.add_argument("--rewrite-markdown", action="store_true",
                        help="only rewrite DIR/benchmark.md from DIR/benchmark.json")
    args = parser.parse_args(argv)
    if args.rewrite_markdown:
        rows, meta = read_run(args.out / "benchmark.json")
    else:
        names = [n for n in [*PUBLISHED, *PUBLISHED_FLOAT] if not args.only or n in args.only]
        rows, meta = run(names, args.confidence, args.seed, args.out)
    if args.same_as:
        meta["same_as"] = same_as(rows, args.same_as)
    write_outputs(args.out, rows, meta)
    # a rewrite judges only the --same-as check; a run also its bounds and verdicts
    bad = not args.rewrite_markdown and any(
        r["above_true_epsilon"] or r["verdict"] != r["expected_verdict"] for r in rows)
    return 1 if bad or meta.get("same_as", {}).get("differences") else 0


if __name__ == "__main__":
    sys.exit(main())
