"""DP-SGD's batch sampling audited against its accountant's curve: one epoch with Poisson
subsampling and one with shuffled fixed-size batches, both claiming the privacy profile that
dp_accounting's PLD accountant gives Poisson subsampling (mechanisms_under_test/dpsgd.py).

What is measured
    (a) The default configuration (T = 10 steps, batch 4, σ = 3): each version audited at its
        claim on seeds 0..S−1 (``--seeds``, default 10) at the default budget; for seed 0 the
        full result: verdict, the test certified against the curve, the ε where the
        certified δ most exceeds the claim's, and the certified ε at δ = 1e-5 beside the
        accountant's ε there.
    (b) A lower bound on the shuffled epoch's true ε at δ = 1e-5, computed without sampling:
        the sum of the short last batch alone, on the pair whose other gradients are −1, is
        a one-dimensional mixture whose exact δ(ε) is integrated numerically (post-processing
        can only lose privacy, so the epoch's true δ(ε) is at least this).
    (c) Where the gap exists: σ ∈ {0.5, 1, 2, 3} and T ∈ {1, 2, 10} (batch 4), each version
        audited once (seed 0): flagged or not, and the certified ε at δ = 1e-5 beside the
        accountant's.
    Pictures of seed 0 of (a): DIR/dpsgd/<version>/tradeoff.png and delta_curve.png.

Usage:
    python scripts/dpsgd.py --out DIR [--seeds S]       (writes DIR/dpsgd.md, DIR/dpsgd.json)
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import _common  # noqa: E402,F401  (puts the repository on the path)

import numpy as np  # noqa: E402
from scipy.optimize import brentq  # noqa: E402
from scipy.stats import norm  # noqa: E402

import dpverify  # noqa: E402
from dpverify.interfaces.fdp_report import write_fdp_plots  # noqa: E402
from dpverify.result import jsonable  # noqa: E402
from _machine import machine_meta, package_version  # noqa: E402
from mechanisms_under_test.dpsgd import (ACCOUNTANT_CLAIM, BATCH, NOISE, STEPS,  # noqa: E402
                                         epsilon_of_accountant, make_dpsgd)

REFERENCE_DELTA = 1e-5
SCAN_NOISE = (0.5, 1.0, 2.0, 3.0)
SCAN_STEPS = (1, 2, 10)


def audit_row(version: str, steps: int, noise: float, seed: int) -> dict:
    """One audit of one version at its claim, in the figures the report shows."""
    mech = make_dpsgd(version, steps=steps, noise=noise)
    result = dpverify.audit(mech, seed=seed)
    eps, certified, claimed = result.worst_epsilon
    ratio, delta, reached, claim_there = result.reached
    w = result.witness
    return {"version": version, "steps": steps, "batch": BATCH, "noise": noise, "seed": seed,
            "verdict": result.verdict, "outcome": result.outcome,
            "alpha_upper": result.alpha, "beta_upper": result.beta,
            "claimed_beta": result.claimed_beta,
            "worst_epsilon": eps, "certified_delta": certified, "claimed_delta": claimed,
            "reached_ratio": ratio, "reached_delta": delta, "reached_epsilon": reached,
            "claim_epsilon_there": claim_there,
            "certified_epsilon_at_reference": result.epsilon_lower_bound,
            "accountant_epsilon_at_reference": epsilon_of_accountant(REFERENCE_DELTA, steps,
                                                                     noise),
            "pair_others": None if w is None else float(w.D_prime[0] if len(w.D_prime) else 0),
            "event": None if w is None else w.event,
            "counts": None if w is None else [w.count_D, w.samples_D, w.count_D_prime,
                                              w.samples_D_prime],
            "samples": result.samples, "seconds": result.seconds, "result": result}


def last_batch_delta(epsilon: float, noise: float, steps: int, batch: int) -> float:
    """Exact δ(ε) of the shuffled epoch's last batch sum alone, pair with others at −1: under
    D′ (one example fewer) it is N(−(b − 1), σ²); under D it is N(−b, σ²) with probability
    (T − 1)/T and N(−b + 2, σ²) with 1/T (the added example, gradient 1, in it). Both orders,
    integrated on a fine grid."""
    x = np.linspace(-batch - 14 * noise, -batch + 2 + 14 * noise, 400001)
    dx = x[1] - x[0]
    q = norm.pdf(x, -(batch - 1), noise)
    p = (steps - 1) / steps * norm.pdf(x, -batch, noise) + norm.pdf(x, -batch + 2, noise) / steps
    e = np.exp(epsilon)
    return float(max(np.sum(np.maximum(p - e * q, 0)), np.sum(np.maximum(q - e * p, 0))) * dx)


def last_batch_epsilon(delta: float, noise: float, steps: int, batch: int) -> float:
    """The ε at which `last_batch_delta` falls to δ: a lower bound on the epoch's true ε."""
    if last_batch_delta(0.0, noise, steps, batch) <= delta:
        return 0.0
    return brentq(lambda e: last_batch_delta(e, noise, steps, batch) - delta, 0.0, 60.0)


def fmt(x, digits=4) -> str:
    return f"{x:.{digits}g}"


def write_markdown(path: Path, doc: dict) -> None:
    meta, main = doc["meta"], doc["default"]
    poisson, shuffled = main["poisson"], main["shuffled"]
    acct = shuffled["accountant_epsilon_at_reference"]
    lines = [
        "# DP-SGD: shuffled batches against the Poisson accountant's curve",
        "",
        f"dpverify {meta['dpverify']}, dp-accounting {meta['dp_accounting']}, measured on "
        f"{meta['date']} ({meta['cpu_model']}, {meta['cpu_count']} logical CPUs); "
        f"{meta['seconds']:.0f} s in all. Written by `scripts/dpsgd.py`.",
        "",
        "## What is audited",
        "",
        f"One epoch of DP-SGD on one-dimensional per-example gradients clipped to [−1, 1]: "
        f"T = {STEPS} steps, each releasing its batch's gradient sum plus N(0, σ²), σ = "
        f"{NOISE:g} (noise multiplier, clip norm 1), batch size b = {BATCH}, a dataset of "
        f"N = {STEPS * BATCH} examples (`mechanisms_under_test/dpsgd.py`). Two ways to form "
        "the batches:",
        "",
        "- **Poisson**: each step takes every example independently with probability "
        f"q = b/N = 1/{STEPS}. This is what the accountant analyses.",
        "- **Shuffled**: one random permutation of the data cut into batches of b consecutive "
        "examples, the last one shorter when b does not divide the dataset's size, as a "
        "shuffling data loader does.",
        "",
        "**The claim, for both**: the privacy profile δ(ε) that `dp_accounting`'s PLD "
        f"accountant gives {STEPS} Poisson-subsampled Gaussian steps (q = 1/{STEPS}, "
        f"σ = {NOISE:g}), add-or-remove-one neighbours: at δ = {REFERENCE_DELTA:g} it reports "
        f"**ε = {fmt(acct)}**. Reporting this ε for a shuffled implementation is the common "
        "practice that Chua et al. (\"How Private are DP-SGD Implementations?\", ICML 2024) "
        "showed can understate the privacy loss.",
        "",
        "**Neighbours** (add or remove one example, the accountant's relation): N − 1 "
        "examples, and the same plus one example whose gradient is 1; the other gradients are "
        "all 0 (the accountant's worst case for Poisson sampling) or all −1 (a data set where "
        "the shuffled loader's short last batch reveals, through its sum, whether the example "
        "was there).",
        "",
        "The audit is `dpverify.audit(mechanism)` on the declared `profile=` claim "
        "(docs/fdp.md): one event chosen on search runs, counted on fresh runs, tested against "
        "the whole curve at confidence 0.95.",
        "",
        "## Result",
        "",
        "| version | verdict | certified test (α ≤, β ≤) | the claim's least β there | "
        f"certified ε at δ = {REFERENCE_DELTA:g} | accountant's ε there | runs | seconds |",
        "|---|---|---|--:|--:|--:|--:|--:|"]
    for row in (poisson, shuffled):
        lines.append(f"| {row['version']} | **{row['outcome']}** | {fmt(row['alpha_upper'])}, "
                     f"{fmt(row['beta_upper'])} | {fmt(row['claimed_beta'])} | "
                     f"{fmt(row['certified_epsilon_at_reference'])} | "
                     f"{fmt(row['accountant_epsilon_at_reference'])} | {row['samples']:,} | "
                     f"{row['seconds']:.1f} |")
    lines += [
        "",
        f"- **Shuffled: flagged.** Its best test (event `{shuffled['event']}`, on the pair "
        f"whose other gradients are {shuffled['pair_others']:g}) has false-positive rate at "
        f"most {fmt(shuffled['alpha_upper'])} and false-negative rate at most "
        f"{fmt(shuffled['beta_upper'])}, where the accountant's curve allows no test a "
        f"false-negative rate below {fmt(shuffled['claimed_beta'])}. In the accountant's own "
        f"terms: at ε = {fmt(shuffled['worst_epsilon'], 3)} the shuffled epoch's δ is at "
        f"least {fmt(shuffled['certified_delta'])}, the accountant's "
        f"{fmt(shuffled['claimed_delta'])}; and at δ = {REFERENCE_DELTA:g} its ε is at least "
        f"**{fmt(shuffled['certified_epsilon_at_reference'])}** where the accountant reports "
        f"{fmt(acct)}. All of these hold together at confidence 0.95 (one box; "
        "docs/theory.md §9.3).",
        f"- **Poisson: passes** (no violation found at this budget; not a proof). The audit "
        f"is conclusive: its best test reaches {poisson['reached_ratio']:.0%} of the "
        f"accountant's ε at δ = {fmt(poisson['reached_delta'], 3)} (certified "
        f"{fmt(poisson['reached_epsilon'])} against {fmt(poisson['claim_epsilon_there'])}), "
        "so the budget would have caught the curve broken by half.",
        f"- Over seeds 0..{meta['seeds'] - 1} at the default budget: shuffled flagged on "
        f"{doc['seeds']['shuffled_flagged']} of {meta['seeds']}, Poisson on "
        f"{doc['seeds']['poisson_flagged']} of {meta['seeds']} (each of those would be a false "
        "alarm, at most 5% of audits); the Poisson epoch's passes were conclusive in "
        f"{doc['seeds']['poisson_conclusive_passes']} of {meta['seeds']}.",
        "",
        "### How large the true gap is",
        "",
        f"The shuffled epoch's true curve has no closed form. A lower bound needs no sampling: "
        "on the pair with other gradients −1, the last batch's sum alone is N(−(b − 1), σ²) "
        "without the example and, with it, N(−b, σ²) or (when the example landed in it, "
        f"probability 1/T) N(−b + 2, σ²). Its exact δ(ε), integrated numerically, puts the "
        f"epoch's true ε at δ = {REFERENCE_DELTA:g} at **≥ {fmt(doc['last_batch_epsilon'])}**, "
        f"against the accountant's {fmt(acct)}. What the audit certified "
        f"({fmt(shuffled['certified_epsilon_at_reference'])}) lies below that, as a certified "
        "lower bound must.",
        "",
        "## Where the gap is",
        "",
        "Each cell: batch 4, seed 0, default budget; *certified ε* is at δ = "
        f"{REFERENCE_DELTA:g}, beside the accountant's ε there.",
        "",
        "| σ | T | shuffled | certified ε (shuffled) | Poisson | certified ε (Poisson) | "
        "accountant's ε |", "|--:|--:|---|--:|---|--:|--:|"]
    for cell in doc["scan"]:
        s, p = cell["shuffled"], cell["poisson"]
        lines.append(f"| {s['noise']:g} | {s['steps']} | {s['outcome']} | "
                     f"{fmt(s['certified_epsilon_at_reference'])} | {p['outcome']} | "
                     f"{fmt(p['certified_epsilon_at_reference'])} | "
                     f"{fmt(s['accountant_epsilon_at_reference'])} |")
    lines += [
        "",
        "With one step (T = 1) the two versions are the same mechanism, one full batch, and "
        "nothing is flagged. With more steps Poisson sampling's amplification lowers the "
        "accountant's curve, while the shuffled loader's short last batch keeps a shift of one "
        "gradient in one known release. At small σ the accountant's ε at δ = "
        f"{REFERENCE_DELTA:g} is large (runs in which the example is drawn into several steps dominate its tail), "
        "so the shuffled version's ε there may lie below it even where its curve is flagged "
        "elsewhere: the violation is then at smaller ε, where the accountant's δ is too small.",
        "",
        "Pictures of seed 0 (the trade-off plane and δ(ε) against the accountant's curve): "
        "[shuffled](dpsgd/shuffled/tradeoff.png), [its δ(ε)](dpsgd/shuffled/delta_curve.png), "
        "[Poisson](dpsgd/poisson/tradeoff.png), [its δ(ε)](dpsgd/poisson/delta_curve.png).",
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def strip(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "result"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    default = {v: audit_row(v, STEPS, NOISE, 0) for v in ("poisson", "shuffled")}
    for version, row in default.items():
        write_fdp_plots(row["result"], _folder(args.out / "dpsgd" / version))
        print(row["result"].summary(), flush=True)
    outcomes = {v: [dpverify.audit(make_dpsgd(v, claim=ACCOUNTANT_CLAIM), seed=s).outcome
                    for s in range(args.seeds)] for v in ("poisson", "shuffled")}
    flagged = {v: o.count("violation") for v, o in outcomes.items()}
    scan = []
    for noise in SCAN_NOISE:
        for steps in SCAN_STEPS:
            cell = {v: strip(audit_row(v, steps, noise, 0)) for v in ("shuffled", "poisson")}
            print(f"σ={noise:g} T={steps}: shuffled {cell['shuffled']['outcome']}, Poisson "
                  f"{cell['poisson']['outcome']}", flush=True)
            scan.append(cell)
    meta = {**machine_meta(), "dp_accounting": package_version("dp-accounting"),
            "seeds": args.seeds, "seconds": time.perf_counter() - started}
    doc = {"meta": meta, "default": {v: strip(r) for v, r in default.items()},
           "seeds": {**{f"{v}_flagged": n for v, n in flagged.items()},
                     "poisson_conclusive_passes": outcomes["poisson"].count("pass")},
           "last_batch_epsilon": last_batch_epsilon(REFERENCE_DELTA, NOISE, STEPS, BATCH),
           "scan": scan}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "dpsgd.json").write_text(json.dumps(jsonable(doc), indent=1,
                                                    ensure_ascii=False) + "\n")
    write_markdown(args.out / "dpsgd.md", doc)
    # Poisson meets its claim: more alarms than 5% of seeds (plus one) would break the promise
    sound = flagged["poisson"] <= 0.05 * args.seeds + 1
    return 0 if default["shuffled"]["verdict"] == "violation" and sound else 1


def _folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


if __name__ == "__main__":
    sys.exit(main())
