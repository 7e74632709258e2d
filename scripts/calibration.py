"""Calibration of dpverify: how often a correct mechanism is flagged, against the promise of at
most 1 − confidence, and how many samples a violation needs to be caught. (a) False alarms of
mechanisms whose true ε is the claimed ε = 1, in ordinary audits, measurement runs, runs large
enough for the coupled certificate and audits stopped at random; (b) the power of Laplace claimed
at 1/r against the sample size; (c) curve claims (dpverify.fdp) at their exact curves; (d) the
headline bound of broken mechanisms against their true ε. How to read them: docs/results.md,
"Calibration: false alarms and power".

Writes OUT/calibration.json, .md and two plots; exits 1 if a false-alarm rate's interval lies
wholly above 1 − confidence.

Usage: python scripts/calibration.py --out DIR [--runs 1000] [--samples 4096]
       [--confidence 0.95] [--power-seeds 40] [--curve-runs 500] (other sizes: --help)
       [--curves-only: (c) alone | --headlines-only: (d) alone | --only NAME: those rows of (a),
       and (c) | --render-only]
"""
from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

from _common import ROOT, clopper_pearson, interval, machine_line, read_json, table, write_json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import dpverify  # noqa: E402
from dpverify.region import laplace_tradeoff, randomized_response_tradeoff  # noqa: E402
from dpverify.result import COUPLED  # noqa: E402
from _machine import load_average, machine_meta, package_version  # noqa: E402
from mechanisms_under_test.basic import (make_geometric, make_laplace,  # noqa: E402
                                         make_randomized_response)
from mechanisms_under_test.own_randomness import (  # noqa: E402
    make_randomized_response_python_random)

TRUE_EPS = 1.0
CI_LEVEL = 0.95  # level of the interval on each measured rate (not the audits' confidence)
# The exactly tight mechanisms: (name, factory in words, factory)
TIGHT = (
    ("laplace", "make_laplace(1.0)", make_laplace),
    ("randomized_response", "make_randomized_response(1.0)", make_randomized_response),
    ("geometric", "make_geometric(1.0)", make_geometric),
    # 64 categories: many exactly tight events at once for the search to choose among
    ("randomized_response_64", "make_randomized_response(1.0, k=64)",
     lambda eps: make_randomized_response(eps, k=64, name="randomized_response_64")),
)
# Randomness "own" (no shared seeds, no coupled certificate); each audit seeds `random`
OWN_TIGHT = (("randomized_response_python_random",
              "make_randomized_response_python_random(1.0)",
              make_randomized_response_python_random),)
# Those whose pilots couple (randomized response's outputs on the two inputs always differ)
COUPLING_TIGHT = (TIGHT[0], TIGHT[2])
# Ordinary audits stopped at a random point, as a run cap, a time budget or Ctrl-C stops them
STOPS = ("run", "time")
RUN_CAP_RANGE = (1 << 8, 1 << 16)   # log-uniform: from the first search round to past the last
TIME_CAP_RANGE = (0.001, 0.04)      # seconds, uniform: the audits at 4096 take ~0.02-0.08 s
RATIOS = (1.1, 1.25, 1.5, 2.0)
CONFIRM_RATIOS = (1.25, 1.5)  # power with and without confirmation on many seeds
SAMPLE_EXPONENTS = (10, 12, 14, 16, 18)


def gaussian(sigma: float, name: str):
    """x + N(0, σ²) under a μ = 1 GDP claim, exact at σ = 1."""
    @dpverify.mechanism(gdp=1.0, pairs=[(0.0, 1.0)], name=name)
    def released(x, rng, size):
        return x + rng.normal(0.0, sigma, size)
    return released


@dpverify.mechanism(tradeoff=randomized_response_tradeoff(TRUE_EPS), pairs=[(0, 1)],
                    name="randomized_response_curve")
def randomized_response_curve(x, rng, size):
    keep = np.exp(TRUE_EPS) / (1 + np.exp(TRUE_EPS))
    return np.where(rng.random(size) < keep, x, 1 - x)


@dpverify.mechanism(tradeoff=laplace_tradeoff(TRUE_EPS), pairs=[(0.0, 1.0)], name="laplace_curve")
def laplace_curve(x, rng, size):
    return x + rng.laplace(0.0, 1.0 / TRUE_EPS, size)


# Curve claims (dpverify.fdp) at their exact curves: (claim in words, mechanism)
CURVE_TIGHT = (
    ("x + N(0, 1) at gdp=1 (μ = 1 GDP, exact)", gaussian(1.0, "gaussian_gdp")),
    ("binary randomized response, ε = 1, at tradeoff=randomized_response_tradeoff(1.0) (exact)",
     randomized_response_curve),
    ("x + Lap(1) at tradeoff=laplace_tradeoff(1.0) (exact)", laplace_curve),
)
UNDER_NOISED = gaussian(0.85, "gaussian_sigma0.85")  # 15% less noise: true μ = 1/0.85


# --- Measuring -------------------------------------------------------------------------------
def over_seeds(name: str, seeds: range, audit, log) -> tuple[list, float]:
    """`audit(seed)` for every seed, logging progress at each tenth: (results, seconds)."""
    started, results, step = time.perf_counter(), [], max(1, len(seeds) // 10)
    for done, seed in enumerate(seeds, start=1):
        results.append(audit(seed))
        if done % step == 0 or done == len(seeds):
            log(f"  {name}: {done}/{len(seeds)} audits, {time.perf_counter() - started:.1f} s")
    return results, time.perf_counter() - started


def confirmed_audit(mech, claim: float, samples: int, seed: int, confidence: float,
                    stop_early: bool = True) -> dict:
    """One audit with `confirm=True`: verdict before confirmation ("flagged") and after it."""
    random.seed(seed)  # the coins of a mechanism with randomness="own" (OWN_TIGHT)
    res = dpverify.audit(mech, epsilon=claim, samples=samples, seed=seed, n_jobs=1,
                         confidence=confidence, stop_early=stop_early, confirm=True)
    c = res.confirmation
    witness = res.witness if c is None else c.first
    return {"flagged": c is not None, "violation": res.verdict == "violation",
            "marginal": c is not None and c.first_marginal,
            "bound": float(c.first_bound if c is not None else res.epsilon_lower_bound),
            "runs": int(res.samples - (c.runs if c is not None else 0)),
            "confirmation_runs": int(c.runs) if c is not None else 0,
            "coupled": witness is not None and witness.certificate == COUPLED}


def stopped_at_random(mech, seed: int, kind: str):
    """`mech` raising KeyboardInterrupt (as Ctrl-C does) past a cap drawn for this seed: runs
    log-uniform over RUN_CAP_RANGE (kind "run"), or seconds over TIME_CAP_RANGE ("time")."""
    rng = np.random.default_rng([seed, 0x5709])
    cap = (float(np.exp(rng.uniform(*np.log(RUN_CAP_RANGE)))) if kind == "run"
           else float(rng.uniform(*TIME_CAP_RANGE)))
    state = {"runs": 0, "start": None}

    def stops(data, rng_, size):
        state["start"] = state["start"] or time.perf_counter()
        state["runs"] += size
        used = state["runs"] if kind == "run" else time.perf_counter() - state["start"]
        if used > cap:
            raise KeyboardInterrupt
        return mech.fn(data, rng_, size)

    return replace(mech, fn=stops, name=f"{mech.name} (stopped)")


def rate_against_promise(alarms: int, runs: int, confidence: float) -> dict:
    """A false-alarm count as a rate, its interval and where that lies against 1 − confidence."""
    lo, hi = clopper_pearson(alarms, runs, CI_LEVEL)
    promise = 1.0 - confidence
    return {"false_alarms": alarms, "rate": alarms / runs, "ci_low": lo, "ci_high": hi,
            "nominal_max_rate": promise, "ci_high_within_nominal": hi <= promise,
            "ci_low_above_nominal": lo > promise}


def row_specs(args) -> list[tuple]:
    """(label, factory in words, factory, kind, seeds, samples) of every row of (a), in the
    table's order; kind is "ordinary", "measurement" (`stop_early=False`) or one of STOPS."""
    seeds = range(args.first_seed, args.first_seed + args.runs)
    stopped = range(args.first_seed, args.first_seed + args.stopped_runs)
    coupled = f" at 2^{args.coupled_samples.bit_length() - 1}"
    modes = (("ordinary", "", ""), ("measurement", " (measurement)", ", stop_early=False"))
    return ([(name + label, text + words, make, kind, seeds, args.samples)
             for kind, label, words in modes for name, text, make in TIGHT + OWN_TIGHT]
            + [(f"{name} (measurement){coupled}", f"{text}, stop_early=False", make,
                "measurement", range(args.coupled_runs), args.coupled_samples)
               for name, text, make in COUPLING_TIGHT]
            + [(f"{name} (stopped at a random {'run count' if kind == 'run' else 'time'})",
                f"{text}, stopped at a random {kind}", make, kind, stopped, args.samples)
               for kind in STOPS for name, text, make in TIGHT])


def false_alarms(label: str, factory_text: str, make, kind: str, seeds: range, samples: int,
                 confidence: float, log) -> dict:
    """A row of (a): audits of a tight mechanism at its true ε. A false alarm is a flag before
    confirmation, or for stopped audits (which do not confirm) a violation."""
    mech = make(TRUE_EPS)
    if kind in STOPS:
        audits, seconds = over_seeds(label, seeds, lambda seed: dpverify.audit(
            stopped_at_random(mech, seed, kind), epsilon=TRUE_EPS, samples=samples, seed=seed,
            n_jobs=1, confidence=confidence), log)
        alarms = [res.verdict == "violation" for res in audits]
        counts = {"stopped_before_the_end": sum(res.interrupted for res in audits),
                  "bound_max": None, "bound_median": None, "runs_per_audit_median": None,
                  "coupled_witnesses": 0}
    else:
        audits, seconds = over_seeds(label, seeds, lambda seed: confirmed_audit(
            mech, TRUE_EPS, samples, seed, confidence, kind == "ordinary"), log)
        alarms = [a["flagged"] for a in audits]
        finite = [a["bound"] for a in audits if np.isfinite(a["bound"])]
        counts = {"marginal_false_alarms": sum(a["marginal"] for a in audits),
                  "confirmed_false_alarms": sum(a["flagged"] and a["violation"] for a in audits),
                  "bound_max": max(finite) if finite else None,
                  "bound_median": float(np.median(finite)) if finite else None,
                  "runs_per_audit_median": int(np.median([a["runs"] for a in audits])),
                  "coupled_witnesses": sum(a["coupled"] for a in audits)}
    return {"mechanism": label, "factory": factory_text, "claimed_epsilon": TRUE_EPS,
            "true_epsilon": TRUE_EPS, "runs": len(seeds), "samples": samples,
            "confidence": confidence, "alarm_seeds": [s for s, a in zip(seeds, alarms) if a],
            **rate_against_promise(sum(alarms), len(seeds), confidence), **counts,
            "seconds": seconds, "seconds_per_audit": seconds / len(seeds)}


def power_cell(ratio: float, exponent: int, seeds: int, confidence: float, log) -> dict:
    """Confirmed audits of Laplace (true ε = 1) at 1/ratio, 2^exponent samples, seeds 0..seeds-1."""
    mech, claim = make_laplace(TRUE_EPS), TRUE_EPS / ratio
    audits, seconds = over_seeds(f"r={ratio:g} samples=2^{exponent}", range(seeds),
                                 lambda seed: confirmed_audit(mech, claim, 1 << exponent, seed,
                                                              confidence), log)
    caught = sum(a["flagged"] for a in audits)
    confirmed = sum(a["violation"] for a in audits)
    lo, hi = clopper_pearson(caught, seeds, CI_LEVEL)
    finite = [a["bound"] for a in audits if np.isfinite(a["bound"])]
    return {
        "ratio": ratio, "claimed_epsilon": claim, "true_epsilon": TRUE_EPS,
        "samples": 1 << exponent, "samples_log2": exponent, "seeds": seeds, "caught": caught,
        "power": caught / seeds, "ci_low": lo, "ci_high": hi,
        "marginal": sum(a["marginal"] for a in audits), "confirmed": confirmed,
        "power_confirmed": confirmed / seeds, "lost_by_confirmation": caught - confirmed,
        "confirmation_runs_median": int(np.median([a["confirmation_runs"] for a in audits])),
        "bound_median": float(np.median(finite)) if finite else None,
        "bounds_above_true_epsilon": sum(a["bound"] > TRUE_EPS for a in audits),
        "runs_per_audit_median": int(np.median([a["runs"] for a in audits])), "seconds": seconds,
    }


def curve_false_alarms(text: str, mech, seeds: range, confidence: float, log) -> dict:
    """Curve audits of `mech` at its exact curve (default budget): violations, and for a GDP
    claim how many certified μ exceed the true μ = 1."""
    audits, seconds = over_seeds(mech.name, seeds, lambda seed: dpverify.audit(
        mech, seed=seed, n_jobs=1, confidence=confidence), log)
    alarms = [res.verdict == "violation" for res in audits]
    gdp = mech.curve.kind == "gdp"
    return {"mechanism": mech.name, "claim": text, "runs": len(seeds), "confidence": confidence,
            "first_seed": seeds.start, "alarm_seeds": [s for s, a in zip(seeds, alarms) if a],
            **rate_against_promise(sum(alarms), len(seeds), confidence),
            "mu_above_truth": int(sum(res.mu_lower_bound > 1.0 for res in audits)) if gdp else None,
            "runs_per_audit_median": int(np.median([res.samples for res in audits])),
            "seconds": seconds, "seconds_per_audit": seconds / len(seeds)}


def curve_power(runs: int, confidence: float) -> dict:
    """Seeds 0..runs − 1 of the under-noised Gaussian: how many are flagged, certified μ's range."""
    results = [dpverify.audit(UNDER_NOISED, seed=s, n_jobs=1, confidence=confidence)
               for s in range(runs)]
    caught = sum(r.verdict == "violation" for r in results)
    mus = [r.mu_lower_bound for r in results]
    low, high = clopper_pearson(caught, runs, CI_LEVEL)
    return {"mechanism": "x + N(0, 0.85²) at gdp=1", "true_mu": 1 / 0.85, "runs": runs,
            "caught": caught, "power": caught / runs, "ci_low": low, "ci_high": high,
            "mu_min": min(mus), "mu_median": float(np.median(mus)), "mu_max": max(mus)}


# --- Markdown --------------------------------------------------------------------------------
def fmt_num(x) -> str:
    return "—" if x is None else f"{x:.4g}"


def against(low: float, high: float, promise: float) -> str:
    """Where a rate's interval lies against the promised rate."""
    return "**above**" if low > promise else "below" if high <= promise else "consistent"


def rate_cells(r: dict, promise: float) -> list:
    """A row's false alarms, rate, interval and `against`."""
    return [r["false_alarms"], f"{r['rate']:.4f}", interval(r["ci_low"], r["ci_high"]),
            against(r["ci_low"], r["ci_high"], promise)]


def false_alarm_lines(rows: list[dict], pool: dict, meta: dict) -> list[str]:
    """The tight mechanisms' false alarms: the table, its columns, the pooled confirmed rate."""
    nominal, first = 1.0 - meta["confidence"], meta.get("first_seed", 0)
    seeds = f"{first}..{first + meta['runs'] - 1}" + (" where recomputed"
                                                      if meta.get("recomputed_only") else "")
    header = ["mechanism", "samples", "audits", "false alarms", "rate", "95% CI",
              f"against {nominal:g}", "marginal", "confirmed", "coupled witnesses",
              "median ε lower bound", "max ε lower bound", "s / audit"]
    body = [[r["factory"], f"{r['samples']:,}", f"{r['runs']:,}", *rate_cells(r, nominal),
             r.get("marginal_false_alarms", "—"), r.get("confirmed_false_alarms", "—"),
             r["coupled_witnesses"], fmt_num(r["bound_median"]), fmt_num(r["bound_max"]),
             f"{r['seconds_per_audit']:.3f}"] for r in rows]
    body.append([f"**{pool['mechanism']}**", "", f"{pool['runs']:,}", *rate_cells(pool, nominal)]
                + [""] * 6)
    stopped = [r for r in rows if "stopped_before_the_end" in r]
    confirming = [r for r in rows if "confirmed_false_alarms" in r]
    audits = sum(r["runs"] for r in confirming)
    confirmed = sum(r["confirmed_false_alarms"] for r in confirming)
    lo, hi = clopper_pearson(confirmed, audits, CI_LEVEL)
    return [
        "## False alarms on exactly tight mechanisms", "",
        f"True ε = claimed ε = 1, `confidence={meta['confidence']:g}`, seeds {seeds} "
        f"(0..{meta['coupled_runs'] - 1} at {meta['coupled_samples']:,} samples, enough for the "
        f"coupled certificate). A *violation* is a false alarm, promised at most {nominal:g}.", "",
        *table(header, body, "lrrrrllrrrrrr"), "",
        f"*Against*: where the {CI_LEVEL:.0%} Clopper–Pearson interval lies against the promise. "
        f"*Marginal*: not firm at every level × {nominal:g}; *confirmed*: surviving "
        "`confirm=True`'s fresh runs; *coupled witnesses*: certified by the coupled certificate. "
        f"The rows *stopped at a random* run count ({RUN_CAP_RANGE[0]:,}–{RUN_CAP_RANGE[1]:,}, "
        f"log-uniform) or time ({TIME_CAP_RANGE[0]:g}–{TIME_CAP_RANGE[1]:g} s) do not confirm; "
        f"{sum(r['stopped_before_the_end'] for r in stopped):,} of "
        f"{sum(r['runs'] for r in stopped):,} stopped before their end.", "",
        f"Pooled over the {len(confirming)} rows that confirm: "
        f"{sum(r['false_alarms'] for r in confirming)} false alarms in {audits:,} audits, "
        f"{sum(r['marginal_false_alarms'] for r in confirming)} of them marginal; **with "
        f"confirmation {confirmed} of {audits:,} (rate {confirmed / audits:.4f}, 95% CI "
        f"{interval(lo, hi)})**, against the promised (1 − confidence)² = {nominal ** 2:g} "
        f"({against(lo, hi, nominal ** 2)}).",
    ]


def grid(cells: list[dict], text) -> list[str]:
    """The power grid as a table, a row per r and a column per sample size; `text` writes a cell."""
    cell = {(c["ratio"], c["samples_log2"]): c for c in cells if not c.get("many_seeds")}
    return table(["r (claim ε)"] + [f"2^{e}" for e in SAMPLE_EXPONENTS],
                 [[f"{r:g} ({TRUE_EPS / r:.3g})"] + [text(cell[r, e]) for e in SAMPLE_EXPONENTS]
                  for r in RATIOS])


def power_lines(cells: list[dict], meta: dict) -> list[str]:
    """Detection power: the grid, its runs, the grid confirmed, the many-seed cells, the bounds."""
    many = [c for c in cells if c.get("many_seeds")]
    many_header = ["r (claim ε)", "audits", "power", "marginal", "power confirmed", "lost",
                   "lost share 95% CI", "median audit runs", "median confirmation runs"]
    many_body = [[f"{c['ratio']:g} ({c['claimed_epsilon']:.3g})", f"{c['seeds']:,}",
                  f"{c['power']:.4f}", c["marginal"], f"{c['power_confirmed']:.4f}",
                  c["lost_by_confirmation"],
                  interval(*clopper_pearson(c["lost_by_confirmation"], c["seeds"])),
                  f"{c['runs_per_audit_median']:,}", f"{c['confirmation_runs_median']:,}"]
                 for c in many]
    over = sum(c["bounds_above_true_epsilon"] for c in cells)
    audits = sum(c["seeds"] for c in cells)
    low, high = clopper_pearson(over, audits, CI_LEVEL)
    return [
        "## Detection power vs samples", "",
        f"`make_laplace(1.0)` (true ε = 1) at claimed ε = 1/r, `confidence={meta['confidence']:g}`"
        f", seeds 0..{meta['power_seeds'] - 1} per cell, against the certifying samples per input "
        f"at the last stage. Power (share of *violation* verdicts), {CI_LEVEL:.0%} interval:", "",
        *grid(cells, lambda c: f"{c['power']:.2f} {interval(c['ci_low'], c['ci_high'], 2)}"), "",
        "Median mechanism runs per audit (all stages, both inputs, search + certify):", "",
        *grid(cells, lambda c: f"{c['runs_per_audit_median']:,}"), "",
        "Power with `confirm=True` (median fresh runs a confirmation drew):", "",
        *grid(cells, lambda c: f"{c['power_confirmed']:.2f} ({c['confirmation_runs_median']:,})"),
        "", f"On {many[0]['seeds']:,} seeds at `samples={many[0]['samples']}`, the false-alarm "
        "audits' budget (*lost*: violations the confirmation did not confirm):", "",
        *table(many_header, many_body, "lrrrrrlrr"), "",
        f"Certified bounds above the true ε = 1 in all these power audits: {over} of {audits} "
        f"(rate {over / audits:.4f}, {CI_LEVEL:.0%} CI {interval(low, high)}); each may exceed it "
        f"with probability at most 1 − confidence = {1 - meta['confidence']:.2g}.",
    ]


def curve_lines(rows: list[dict], power: dict) -> list[str]:
    """The curve claims' false alarms and the under-noised Gaussian's power."""
    first = rows[0]["first_seed"]
    header = ["mechanism and claim", "audits", "false alarms", "rate", "95% CI",
              "against 1 − confidence", "certified μ > 1", "seconds per audit"]
    body = [[r["claim"], r["runs"], *rate_cells(r, r["nominal_max_rate"]),
             "—" if r["mu_above_truth"] is None else r["mu_above_truth"],
             f"{r['seconds_per_audit']:.3f}"] for r in rows]
    truth = ("never above the true μ" if power["mu_max"] <= power["true_mu"]
             else "**above** the true μ in some audits")
    return [
        "## False alarms of curve claims (dpverify.fdp)", "",
        "Each mechanism audited at its exact trade-off curve at the default budget (median "
        f"{rows[0]['runs_per_audit_median']:,} runs per audit), "
        f"`confidence={rows[0]['confidence']:g}`, seeds {first}..{first + rows[0]['runs'] - 1}; "
        "every violation is a false alarm, promised at most 1 − confidence whatever the curve "
        "(docs/theory.md §9.3); *certified μ > 1*: GDP audits whose certified μ exceeds the true "
        "μ = 1 (each may with probability ≤ 1 − confidence).", "",
        *table(header, body, "lrrrllrr"), "",
        f"Power: {power['mechanism']} (true μ = {power['true_mu']:.4g}, 15% less "
        f"noise than μ = 1 allows) flagged in {power['caught']} of {power['runs']} audits at the "
        f"default budget ({CI_LEVEL:.0%} CI {interval(power['ci_low'], power['ci_high'])}); "
        f"certified μ from {power['mu_min']:.4g} to {power['mu_max']:.4g} (median "
        f"{power['mu_median']:.4g}), {truth}.",
    ]


def headline_rows(seeds: int, log) -> list[dict]:
    """(d) The headline bound of the default audit (a proof, then its measurement) of the
    broken mechanisms that NEAR_TRUTH selects from reports/detection.json, over `seeds` seeds:
    how many exceed the true ε (each may with probability at most 1 − confidence)."""
    from detection import broken_mechanisms
    reached = {r["mechanism"]: r["headline_max"]
               for r in read_json(ROOT / "reports" / "detection.json")["rows"]}
    rows = []
    for name, (mech, truth) in broken_mechanisms().items():
        if not math.isfinite(truth) or reached.get(name, 0.0) < NEAR_TRUTH * truth:
            continue
        audits, seconds = over_seeds(name, range(seeds), lambda seed: dpverify.audit(
            mech, seed=seed, n_jobs=1, progress=False), log)
        bounds = [float(a.epsilon_lower_bound) for a in audits]
        above = sum(b > truth for b in bounds)
        rows.append({"mechanism": name, "claimed": mech.epsilon, "true_epsilon": truth,
                     "audits": seeds, "violations": sum(a.verdict == "violation" for a in audits),
                     "marginal": sum(bool(a.marginal) for a in audits),
                     "bound_median": float(np.median(bounds)), "bound_max": max(bounds),
                     "above_truth": above, "ci": clopper_pearson(above, seeds, CI_LEVEL),
                     "runs_median": int(np.median([a.samples for a in audits])),
                     "seconds_per_audit": seconds / seeds})
    return rows


def headline_lines(rows: list[dict], confidence: float) -> list[str]:
    """(d) as a table, with the bounds above the truth pooled."""
    header = ["mechanism", "claimed ε", "true ε", "audits", "violations", "marginal",
              "median bound", "max bound", "above true ε", f"{CI_LEVEL:.0%} CI of that rate",
              "runs per audit (median)", "s / audit"]
    body = [[r["mechanism"], f"{r['claimed']:g}", f"{r['true_epsilon']:.4g}", r["audits"],
             r["violations"], r["marginal"], fmt_num(r["bound_median"]), fmt_num(r["bound_max"]),
             r["above_truth"], interval(*r["ci"]), f"{r['runs_median']:,}",
             f"{r['seconds_per_audit']:.1f}"] for r in rows]
    above, audits = sum(r["above_truth"] for r in rows), sum(r["audits"] for r in rows)
    lo, hi = clopper_pearson(above, audits, CI_LEVEL)
    return [
        "## Headline bounds of broken mechanisms against their true ε", "",
        "The default audit (the proof by betting, then its measurement; "
        f"`confidence={confidence:g}`, `n_jobs=1`) of the broken mechanisms of "
        "[detection.md](detection.md) with a finite true ε whose headline bounds there came "
        f"within {NEAR_TRUTH:.0%} of it (the others sit far below it, or their ε is infinite), "
        f"seeds 0..{rows[0]['audits'] - 1}. Each bound may exceed the true ε with probability at "
        f"most {1 - confidence:.2g}.", "",
        *table(header, body, "lrrrrrrrrlrr"), "",
        f"Pooled: {above} of {audits} headline bounds above the true ε (rate "
        f"{above / audits:.4f}, {CI_LEVEL:.0%} CI {interval(lo, hi)}), against at most "
        f"{1 - confidence:.2g}.",
    ]


def render(out: Path, doc: dict) -> None:
    """calibration.md and the two plots from the JSON document."""
    meta = doc["meta"]
    guide = Path(os.path.relpath(ROOT / "docs" / "results.md", out)).as_posix()
    recomputed = (f" Only the rows of `{meta['recomputed_only']}` were recomputed on this date; "
                  f"the others are those of {meta['other_rows_from']}."
                  if meta.get("recomputed_only") else "")
    lines = [
        "# dpverify calibration: false alarms and detection power", "",
        f"{machine_line(meta)} Every audit runs with `n_jobs=1`; the audits took "
        f"{meta['total_seconds']:.1f} s (false alarms {meta['false_alarm_seconds']:.1f} s, "
        f"power grid {meta['power_seconds']:.1f} s).{recomputed} Why most rates sit below the "
        f"promise and what each kind of row measures: [docs/results.md]({guide}"
        "#calibration-false-alarms-and-power). Plots: `calibration_false_alarms.png`, "
        "`calibration_power.png`.", "",
        *false_alarm_lines(doc["false_alarms"], doc["false_alarms_pooled"], meta), "",
        *power_lines(doc["power"], meta), "",
        *curve_lines(doc["curve_false_alarms"], meta["curve_power"]),
        *(["", *headline_lines(doc["headlines"], meta["confidence"])]
          if doc.get("headlines") else []),
    ]
    (out / "calibration.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    plot_false_alarms(out / "calibration_false_alarms.png", doc["false_alarms"], meta)
    plot_power(out / "calibration_power.png", doc["power"], meta)


# --- Plots -----------------------------------------------------------------------------------
def with_errors(rows: list[dict], key: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows' values under `key` and their distances down to ci_low and up to ci_high."""
    values = np.array([r[key] for r in rows])
    return values, np.array([values - [r["ci_low"] for r in rows],
                             [r["ci_high"] for r in rows] - values])


def plot_false_alarms(path: Path, rows: list[dict], meta: dict) -> None:
    """Each row's rate and interval (in the table's order) against the promised maximum."""
    nominal = 1.0 - meta["confidence"]
    fig, ax = plt.subplots(figsize=(11, 1.6 + 0.32 * len(rows)))
    y = np.arange(len(rows))[::-1]
    rate, err = with_errors(rows, "rate")
    ax.errorbar(rate, y, xerr=err, fmt="o", capsize=4, color="tab:blue",
                label=f"observed rate, {CI_LEVEL:.0%} Clopper–Pearson CI")
    ax.axvline(nominal, color="tab:red", linestyle="--",
               label=f"guaranteed maximum 1 − confidence = {nominal:g}")
    ax.set_yticks(y, [r["mechanism"].replace("_", " ") for r in rows], fontsize=7.5)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlim(0, max(nominal, max(r["ci_high"] for r in rows)) * 1.15)
    ax.set_xlabel("false-alarm rate (violation verdicts / audits); true ε = claimed ε = 1")
    ax.set_title(f"false alarms on exactly tight mechanisms, confidence {meta['confidence']:g}, "
                 f"{meta['samples']:,} samples per input unless stated", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_power(path: Path, cells: list[dict], meta: dict) -> None:
    """Power against samples (log x), one line per r, with the intervals."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, ratio in enumerate(RATIOS):
        row = sorted((c for c in cells if c["ratio"] == ratio and not c.get("many_seeds")),
                     key=lambda c: c["samples"])
        # a small horizontal offset per line, so overlapping points (power 1) stay visible
        dodge = 2.0 ** (0.12 * (i - (len(RATIOS) - 1) / 2))
        ax.errorbar(np.array([c["samples"] for c in row], dtype=float) * dodge,
                    *with_errors(row, "power"), marker="o", capsize=3,
                    label=f"r = {ratio:g} (claim ε = {TRUE_EPS / ratio:.3g})")
    ax.set_xscale("log", base=2)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("certifying samples per input at the last stage (log scale, lines offset)")
    ax.set_ylabel("power (fraction of audits flagging the violation)")
    ax.set_title("dpverify detection power: Laplace with true ε = 1 claimed at 1/r\n"
                 f"confidence = {meta['confidence']:g}, {CI_LEVEL:.0%} Clopper–Pearson CIs")
    ax.legend(loc="lower right", fontsize=8, framealpha=0.95)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --- Running ---------------------------------------------------------------------------------
# The integer options: --flag: (default, what it sizes)
SIZES = {
    "runs": (1000, "seeded audits per tight mechanism, ordinary and measurement (a)"),
    "stopped-runs": (250, "seeded audits per tight mechanism and kind of stop (a)"),
    "samples": (4096, "certifying samples per input of the false-alarm audits (a)"),
    "coupled-runs": (400, "seeded measurement runs per mechanism at --coupled-samples (a)"),
    "coupled-samples": (1 << 20, "samples of those runs, large enough to couple (a)"),
    "first-seed": (0, "first seed of (a) but the coupled rows; a follow-up starts past it"),
    "power-seeds": (40, "seeds per (r, samples) cell of the power grid (b)"),
    "confirm-power-seeds": (1000, "seeds of the power at r = 1.25 and 1.5 at --samples (b)"),
    "curve-runs": (500, "seeded audits per curve claim (c)"),
    "curve-power-runs": (100, "seeds of the curve power row (c)"),
    "headline-seeds": (20, "seeds of each broken mechanism's default audit (d)"),
}
# (d) audits the broken mechanisms of reports/detection.md with a finite true ε whose headline
# bounds there came within this share of it: those a bound could exceed the truth on
NEAR_TRUTH = 0.8


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path,
                   help="directory for calibration.json/.md and the two PNG plots")
    for flag, (default, text) in SIZES.items():
        p.add_argument(f"--{flag}", type=int, default=default, help=f"{text} (default {default})")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence of every audit (default 0.95)")
    p.add_argument("--curves-only", action="store_true", help="recompute only (c); keep the rest")
    p.add_argument("--headlines-only", action="store_true",
                   help="recompute only (d); keep the rest")
    p.add_argument("--render-only", action="store_true", help="rewrite the .md and plots only")
    p.add_argument("--only", metavar="NAME", help="recompute only (c) and the rows of (a) "
                   "naming NAME; the others from OUT/calibration.json")
    args = p.parse_args(argv)
    if args.runs < 1 or args.power_seeds < 1:
        p.error("--runs and --power-seeds must be at least 1")
    if args.samples < 100:
        p.error("--samples must be at least 100")
    if not 0.0 < args.confidence < 1.0:
        p.error("--confidence must be in (0, 1)")
    return args


def measure_tables(args, log) -> dict:
    """(a) and (b) with machine and timings; --only reads the other rows and (b) back."""
    meta = {
        **machine_meta(), "statsmodels": package_version("statsmodels"),
        "matplotlib": matplotlib.__version__, "runs": args.runs, "first_seed": args.first_seed,
        "samples": args.samples, "coupled_runs": args.coupled_runs,
        "coupled_samples": args.coupled_samples, "confidence": args.confidence,
        "power_seeds": args.power_seeds, "power_ratios": list(RATIOS),
        "power_samples": [1 << e for e in SAMPLE_EXPONENTS], "ci_level": CI_LEVEL,
        "ci_method": "Clopper-Pearson, dpverify.stats cp_lower and cp_upper, two-sided",
        "n_jobs": 1, "load_average_at_start": load_average(),
    }
    old = read_json(args.out / "calibration.json") if args.only else None
    kept = {} if old is None else {
        r["mechanism"]: r for r in old["false_alarms"] if args.only not in r["mechanism"]}
    rows = [kept.get(spec[0]) or false_alarms(*spec, args.confidence, log)
            for spec in row_specs(args)]
    runs = sum(r["runs"] for r in rows)
    pool = {"mechanism": f"all {len(rows)} rows (pooled)", "runs": runs,
            **rate_against_promise(sum(r["false_alarms"] for r in rows), runs, args.confidence),
            "seconds": sum(r["seconds"] for r in rows)}
    if old is not None:
        cells = old["power"]
    else:
        cells = [power_cell(ratio, exponent, args.power_seeds, args.confidence, log)
                 for ratio in RATIOS for exponent in SAMPLE_EXPONENTS]
        cells += [power_cell(ratio, args.samples.bit_length() - 1, args.confirm_power_seeds,
                             args.confidence, log) | {"many_seeds": True}
                  for ratio in CONFIRM_RATIOS]
    meta["false_alarm_seconds"] = pool["seconds"]
    meta["power_seconds"] = (old["meta"]["power_seconds"] if old is not None
                             else sum(c["seconds"] for c in cells))
    meta["total_seconds"] = meta["false_alarm_seconds"] + meta["power_seconds"]
    if old is not None:
        meta["recomputed_only"], meta["other_rows_from"] = args.only, old["meta"]["date"]
    return {"false_alarms": rows, "false_alarms_pooled": pool, "power": cells, "meta": meta}


def main(argv=None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / "calibration.json"
    if args.render_only:
        render(args.out, read_json(json_path))
        return 0
    log = partial(print, flush=True)
    partly = args.curves_only or args.headlines_only
    doc = read_json(json_path) if partly else measure_tables(args, log)
    if not args.headlines_only:
        doc["curve_false_alarms"] = [
            curve_false_alarms(text, mech, range(args.curve_runs), args.confidence, log)
            for text, mech in CURVE_TIGHT]
        doc["meta"]["curve_power"] = curve_power(args.curve_power_runs, args.confidence)
    if not args.curves_only:
        doc["headlines"] = headline_rows(args.headline_seeds, log)
    curves = doc["curve_false_alarms"]
    if not partly:
        doc["meta"]["load_average_at_end"] = load_average()
    write_json(json_path, doc)
    render(args.out, read_json(json_path))
    log(f"wrote {json_path}, calibration.md and the plots beside it")
    checked = curves + ([] if partly else doc["false_alarms"] + [doc["false_alarms_pooled"]])
    broken = [r.get("factory", r["mechanism"]) for r in checked if r["ci_low_above_nominal"]]
    if broken:
        log(f"false-alarm rate above the promise: {broken}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
