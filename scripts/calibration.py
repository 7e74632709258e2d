"""Calibration of dpverify: false-alarm rate on exactly tight mechanisms, detection power vs samples.

What is measured
    (a) False-alarm rate. Four correct mechanisms whose true ε is exactly 1 — Laplace
        (``make_laplace(1.0)``), binary and 64-ary randomized response
        (``make_randomized_response(1.0)``, ``k=64``) and the two-sided geometric mechanism
        (``make_geometric(1.0)``) — are each audited N times, seeds 0..N−1, at claimed ε = 1
        (their true ε: the hardest honest claim there is), ``samples=S`` certifying samples per
        input at the last stage, ``n_jobs=1``. Every "violation" verdict is a false alarm. Each
        is audited twice per seed: as an ordinary audit (a test by betting on the search rows
        with α/2, which may stop at any round, and the last stage with α/2) and as a
        measurement run (``stop_early=False``: only the last stage certifies, with all of α;
        what the benchmark uses). Ordinary audits are also stopped at a random point, a random
        run count (reproducible) or a random time, as a run cap, a time budget or Ctrl-C would
        stop them: the betting test's promise must hold whenever it stops. The script reports, per mechanism and mode and pooled over all rows,
        the count, the rate and a two-sided 95 % Clopper–Pearson interval on the rate
        (``dpverify.stats``, through scripts/_common.py), and where the
        interval lies against 1 − confidence, the rate the engine promises not to exceed:
        below it, containing it, or above it (a broken promise: exit code 1).
    (b) Detection power vs samples. ``make_laplace(1.0)`` (true ε = 1) is audited at claimed
        ε = 1/r for violation sizes r ∈ {1.1, 1.25, 1.5, 2} (the true ε is r times the claim)
        and samples ∈ {2^10, 2^12, 2^14, 2^16, 2^18}, with ``--power-seeds`` seeds each (40 by
        default, the same at every size). Power is the fraction flagged, with the same 95 %
        Clopper–Pearson interval. Every certified bound is also checked against the true ε = 1
        (each audit's bound may exceed it with probability at most 1 − confidence; the count is
        reported with its rate and interval).

    (c) False alarms of curve claims (dpverify.fdp). Three mechanisms audited at their exact
        trade-off curves, ``--curve-runs`` seeds each (500 by default) at the default budget:
        the Gaussian mechanism with σ = 1 at its μ = 1 GDP claim (``gdp=1``), binary
        randomized response at ε = 1 and Laplace at ε = 1, each at its exact trade-off
        function (``tradeoff=region.randomized_response_tradeoff(1.0)``,
        ``region.laplace_tradeoff(1.0)``). Every violation is a false alarm; the rate comes
        with the same interval, and the certified μ of each Gaussian audit is checked against
        the true μ = 1. Power: the Gaussian with σ = 0.85 (true μ ≈ 1.18, 15% less noise than
        the claim allows) at ``gdp=1``, on the same seeds, at the default budget.
        ``--curves-only`` recomputes these rows alone and keeps the rest of
        OUT/calibration.json.

Why
    The engine guarantees that a correct mechanism is flagged with probability at most
    1 − confidence, whatever the seed. That is a union bound: of the α = 1 − confidence budget,
    an ordinary audit's test by betting on its search rows spends half (anytime-valid), and its
    last stage the other half, split over the stage's certified candidates (a measurement run's
    last stage spends all of α); each candidate's share goes either to one
    conditional ratio test (exact with Poisson sample sizes; the default for δ = 0 whenever
    the search data expect it to be tighter) or to two one-sided Clopper–Pearson limits. On
    exactly tight mechanisms every event's true ratio can sit at e^ε, so the realised rate comes
    within a factor of a few of 1 − confidence: this script measures it, on the three mechanisms
    where an alarm is easiest to raise. Power is the other side of the
    coin: how many samples a violation of a given size needs before it is reliably caught.
    Rates are estimates from a finite number of seeds, so each comes with its interval.

Output
    DIR/calibration.json              strict JSON: {"false_alarms": [...], "power": [...],
                                      "meta": {...}}
    DIR/calibration.md                both tables and the explanation above, in short
    DIR/calibration_false_alarms.png  rate and 95 % CI per mechanism, with the nominal rate
    DIR/calibration_power.png         power vs samples (log x), one line per r, with 95 % CIs

Usage:
    python scripts/calibration.py --out DIR [--runs N] [--samples S] [--confidence C]
                                  [--power-seeds K] [--curve-runs M] [--curves-only]
    (defaults: N = 1000, S = 4096, C = 0.95, K = 40, M = 500)
"""
from __future__ import annotations

import argparse
from dataclasses import replace
import json
import random
import sys
import time
from pathlib import Path

from _common import clopper_pearson, write_json  # noqa: E402  (puts the repository on the path)

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
TIGHT = (
    ("laplace", "make_laplace(1.0)", make_laplace),
    ("randomized_response", "make_randomized_response(1.0)", make_randomized_response),
    ("geometric", "make_geometric(1.0)", make_geometric),
    # 64 categories: the event {o = D's value} and every union of it with others is tight at
    # once, so a search has many exactly tight events to choose among
    ("randomized_response_64", "make_randomized_response(1.0, k=64)",
     lambda eps: make_randomized_response(eps, k=64, name="randomized_response_64")),
)
# Ordinary audits stopped at a random point, as a run cap or a time budget would stop them
# (the stop arrives as Ctrl-C does, and the audit reports what it had proved by then): the
# betting test must keep its promise whenever it is stopped.
STOPS = ("run", "time")
RUN_CAP_RANGE = (1 << 8, 1 << 16)   # log-uniform: from the first search round to past the last
TIME_CAP_RANGE = (0.001, 0.04)      # seconds, uniform: the audits at 4096 take ~0.02-0.08 s
# The tight mechanisms whose rows also measure the coupled certificate: those whose pilots
# couple (tests/test_engine.py checks that Laplace does). Randomized response is left out
# because its shared coins make the two inputs' outputs always differ, so it never couples
# (test_randomized_response_keeps_independent_samples). Its row would repeat the measurement
# rows above and cost 220 s.
COUPLING_TIGHT = (TIGHT[0], TIGHT[2])
# A tight mechanism with its own randomness (randomness="own": no shared seeds, no coupled
# certificate, preflight run once). Its coins come from Python's `random`, which each audit
# seeds with the audit's seed, so these rows are reproducible too (n_jobs=1: one thread).
OWN_TIGHT = (("randomized_response_python_random",
              "make_randomized_response_python_random(1.0)",
              make_randomized_response_python_random),)
RATIOS = (1.1, 1.25, 1.5, 2.0)
# violation sizes whose power with and without confirmation is measured on many seeds
CONFIRM_RATIOS = (1.25, 1.5)
SAMPLE_EXPONENTS = (10, 12, 14, 16, 18)




def _gaussian_gdp():
    @dpverify.mechanism(gdp=1.0, pairs=[(0.0, 1.0)], name="gaussian_gdp")
    def gaussian_gdp(x, rng, size):
        return x + rng.normal(0.0, 1.0, size)
    return gaussian_gdp


def _rr_curve():
    keep = np.exp(TRUE_EPS) / (1 + np.exp(TRUE_EPS))

    @dpverify.mechanism(tradeoff=randomized_response_tradeoff(TRUE_EPS), pairs=[(0, 1)],
                        name="randomized_response_curve")
    def randomized_response_curve(x, rng, size):
        return np.where(rng.random(size) < keep, x, 1 - x)
    return randomized_response_curve


def _laplace_curve():
    @dpverify.mechanism(tradeoff=laplace_tradeoff(TRUE_EPS), pairs=[(0.0, 1.0)],
                        name="laplace_curve")
    def laplace_curve(x, rng, size):
        return x + rng.laplace(0.0, 1.0 / TRUE_EPS, size)
    return laplace_curve


# Curve claims (dpverify.fdp) at their exact curves: (name, claim in words, mechanism factory)
CURVE_TIGHT = (
    ("gaussian_gdp", "x + N(0, 1) at gdp=1 (μ = 1 GDP, exact)", _gaussian_gdp),
    ("randomized_response_curve", "binary randomized response, ε = 1, at "
     "tradeoff=randomized_response_tradeoff(1.0) (exact)", _rr_curve),
    ("laplace_curve", "x + Lap(1) at tradeoff=laplace_tradeoff(1.0) (exact)", _laplace_curve),
)


# ---------------------------------------------------------------------------------------------
# (a) false alarms
# ---------------------------------------------------------------------------------------------

def false_alarms(name: str, factory_text: str, make, runs: int, samples: int,
                 confidence: float, log, stop_early: bool = True, first_seed: int = 0) -> dict:
    """`stop_early=False`: measurement runs, whose last stage spends all of α; seeds
    first_seed..first_seed + runs − 1."""
    mech = make(TRUE_EPS)
    if not stop_early:
        name, factory_text = f"{name} (measurement)", f"{factory_text}, stop_early=False"
    alarms, alarm_seeds, bounds, runs_made, coupled = 0, [], [], [], 0
    marginal, confirmed = 0, 0
    started = time.perf_counter()
    step = max(1, runs // 10)
    for seed in range(first_seed, first_seed + runs):
        random.seed(seed)  # the coins of a mechanism with randomness="own" (OWN_TIGHT)
        # confirm=True runs the same audit, then confirms a violation on fresh runs: one run
        # gives the verdict without confirmation (a confirmation ran) and with it
        res = dpverify.audit(mech, epsilon=TRUE_EPS, samples=samples, seed=seed, n_jobs=1,
                             confidence=confidence, stop_early=stop_early, confirm=True)
        c = res.confirmation
        bounds.append(float(c.first_bound if c is not None else res.epsilon_lower_bound))
        runs_made.append(int(res.samples - (c.runs if c is not None else 0)))
        coupled += (c is None and res.witness is not None
                    and res.witness.certificate == COUPLED) or (
            c is not None and c.first.certificate == COUPLED)
        if c is not None:
            alarms += 1
            alarm_seeds.append(seed)
            marginal += c.first_marginal
            confirmed += res.verdict == "violation"
        done = seed - first_seed + 1
        if done % step == 0 or done == runs:
            log(f"  {name}: {done}/{runs} audits, {alarms} false alarm(s), "
                f"{time.perf_counter() - started:.1f} s")
    seconds = time.perf_counter() - started
    finite = [b for b in bounds if np.isfinite(b)]
    return {
        "mechanism": name,
        "factory": factory_text,
        "claimed_epsilon": TRUE_EPS,
        "true_epsilon": TRUE_EPS,
        "runs": runs,
        "samples": samples,
        "confidence": confidence,
        "alarm_seeds": alarm_seeds,
        **rate_against_promise(alarms, runs, confidence),
        "marginal_false_alarms": marginal,
        "confirmed_false_alarms": confirmed,
        "bound_max": max(finite) if finite else None,
        "bound_median": float(np.median(finite)) if finite else None,
        "runs_per_audit_median": int(np.median(runs_made)),
        "coupled_witnesses": coupled,
        "seconds": seconds,
        "seconds_per_audit": seconds / runs,
    }


def curve_false_alarms(name: str, text: str, make, runs: int, confidence: float, log,
                       first_seed: int = 0) -> dict:
    """Seeds first_seed..first_seed + runs − 1 of the curve audit of `make()` at its default
    budget; every violation is a false alarm. For a GDP claim, how many certified μ exceed the
    true μ = 1 (each may with probability ≤ 1 − confidence)."""
    mech = make()
    alarms, alarm_seeds, above, runs_made = 0, [], 0, []
    started = time.perf_counter()
    for seed in range(first_seed, first_seed + runs):
        res = dpverify.audit(mech, seed=seed, n_jobs=1, confidence=confidence)
        runs_made.append(res.samples)
        if res.verdict == "violation":
            alarms += 1
            alarm_seeds.append(seed)
        above += mech.curve.kind == "gdp" and res.mu_lower_bound > 1.0
        if (seed - first_seed + 1) % max(1, runs // 5) == 0:
            log(f"  {name}: {seed - first_seed + 1}/{runs}, {alarms} false alarm(s)")
    seconds = time.perf_counter() - started
    return {"mechanism": name, "claim": text, "runs": runs, "confidence": confidence,
            "first_seed": first_seed, "alarm_seeds": alarm_seeds,
            **rate_against_promise(alarms, runs, confidence),
            "mu_above_truth": int(above) if mech.curve.kind == "gdp" else None,
            "runs_per_audit_median": int(np.median(runs_made)), "seconds": seconds,
            "seconds_per_audit": seconds / runs}


def curve_power(runs: int, confidence: float) -> dict:
    """Seeds 0..runs − 1 of σ = 0.85 under a μ = 1 GDP claim: how many are flagged, and the
    certified μ's range (true μ = 1/0.85)."""
    @dpverify.mechanism(gdp=1.0, pairs=[(0.0, 1.0)], name="gaussian_sigma0.85")
    def under_noised(x, rng, size):
        return x + rng.normal(0.0, 0.85, size)
    results = [dpverify.audit(under_noised, seed=s, n_jobs=1, confidence=confidence)
               for s in range(runs)]
    caught = sum(r.verdict == "violation" for r in results)
    mus = [r.mu_lower_bound for r in results]
    low, high = clopper_pearson(caught, runs, CI_LEVEL)
    return {"mechanism": "x + N(0, 0.85²) at gdp=1", "true_mu": 1 / 0.85, "runs": runs,
            "caught": caught, "power": caught / runs, "ci_low": low, "ci_high": high,
            "mu_min": min(mus), "mu_median": float(np.median(mus)), "mu_max": max(mus)}


def curve_lines(rows: list[dict], power: dict | None = None) -> list[str]:
    """The Markdown section of the curve claims' false alarms."""
    if not rows:
        return []
    lines = ["", "## False alarms of curve claims (dpverify.fdp)", "",
             "Each mechanism is audited at its exact trade-off curve, at the default budget "
             f"(median {rows[0]['runs_per_audit_median']:,} runs per audit), "
             f"`confidence={rows[0]['confidence']:g}`, seeds {rows[0]['first_seed']}.."
             f"{rows[0]['first_seed'] + rows[0]['runs'] - 1}. A violation is a false alarm; "
             "the curve audit promises a rate of at most 1 − confidence whatever the curve "
             "(docs/theory.md §9.3). The interval is a two-sided "
             f"{CI_LEVEL:.0%} Clopper–Pearson interval on the rate.", "",
             "| mechanism and claim | audits | false alarms | rate | 95% CI | against 1 − "
             "confidence | seconds per audit |", "|---|--:|--:|--:|---|---|--:|"]
    for r in rows:
        lines.append(f"| {r['claim']} | {r['runs']} | {r['false_alarms']} | {r['rate']:.4f} "
                     f"| {fmt_ci(r['ci_low'], r['ci_high'])} | {against_nominal(r)} "
                     f"| {r['seconds_per_audit']:.3f} |")
    gdp = [r for r in rows if r.get("mu_above_truth") is not None]
    for r in gdp:
        lines += ["", f"Certified μ above the true μ = 1 on the GDP rows: {r['mu_above_truth']} "
                      f"of {r['runs']} (each audit may with probability ≤ 1 − confidence)."]
    if power:
        truth = ("never above the true μ" if power["mu_max"] <= power["true_mu"]
                 else "ABOVE the true μ in some audits")
        lines += ["", f"Power: {power['mechanism']} (true μ = {power['true_mu']:.4g}, 15% less "
                      f"noise than μ = 1 allows) flagged in {power['caught']} of "
                      f"{power['runs']} audits at the default budget ({CI_LEVEL:.0%} CI "
                      f"{fmt_ci(power['ci_low'], power['ci_high'])}); certified μ from "
                      f"{power['mu_min']:.4g} to {power['mu_max']:.4g} (median "
                      f"{power['mu_median']:.4g}), {truth}."]
    return lines


def rate_against_promise(alarms: int, runs: int, confidence: float) -> dict:
    """A false-alarm count as a rate with its interval (`clopper_pearson`) and where the
    interval lies against the promised 1 − confidence."""
    lo, hi = clopper_pearson(alarms, runs, CI_LEVEL)
    promise = 1.0 - confidence
    return {"false_alarms": alarms, "rate": alarms / runs, "ci_low": lo, "ci_high": hi,
            "nominal_max_rate": promise, "ci_high_within_nominal": hi <= promise,
            "ci_low_above_nominal": lo > promise}


def stopped_at_random(mech, seed: int, kind: str):
    """`mech` that raises KeyboardInterrupt (what Ctrl-C raises in the audit's thread) once it
    has run more runs than a cap, or for longer than a number of seconds, drawn for this seed:
    log-uniform over RUN_CAP_RANGE runs (kind "run") or uniform over TIME_CAP_RANGE seconds
    (kind "time", measured from the first call; not reproducible)."""
    rng = np.random.default_rng([seed, 0x5709])
    if kind == "run":
        cap = float(np.exp(rng.uniform(*np.log(RUN_CAP_RANGE))))
    else:
        cap = float(rng.uniform(*TIME_CAP_RANGE))
    state = {"runs": 0, "start": None}

    def stops(data, rng_, size):
        state["start"] = state["start"] or time.perf_counter()
        state["runs"] += size
        used = state["runs"] if kind == "run" else time.perf_counter() - state["start"]
        if used > cap:
            raise KeyboardInterrupt
        return mech.fn(data, rng_, size)

    return replace(mech, fn=stops, name=f"{mech.name} (stopped)")


def stopped_false_alarms(name: str, factory_text: str, make, kind: str, runs: int,
                         samples: int, confidence: float, log, first_seed: int = 0) -> dict:
    """Ordinary audits of a tight mechanism, each stopped at a random point
    (`stopped_at_random`): every "violation" is a false alarm, as in `false_alarms`."""
    mech = make(TRUE_EPS)
    label = f"{name} (stopped at a random {'run count' if kind == 'run' else 'time'})"
    alarms, alarm_seeds, stopped = 0, [], 0
    started = time.perf_counter()
    for seed in range(first_seed, first_seed + runs):
        res = dpverify.audit(stopped_at_random(mech, seed, kind), epsilon=TRUE_EPS,
                             samples=samples, seed=seed, n_jobs=1, confidence=confidence)
        stopped += res.interrupted
        if res.verdict == "violation":
            alarms += 1
            alarm_seeds.append(seed)
    seconds = time.perf_counter() - started
    log(f"  {label}: {alarms}/{runs} false alarms, {stopped} stopped before the end, "
        f"{seconds:.1f} s")
    return {"mechanism": label, "factory": f"{factory_text}, stopped at a random {kind}",
            "claimed_epsilon": TRUE_EPS, "true_epsilon": TRUE_EPS, "runs": runs,
            "samples": samples, "confidence": confidence, "alarm_seeds": alarm_seeds,
            **rate_against_promise(alarms, runs, confidence),
            "stopped_before_the_end": stopped, "bound_max": None, "bound_median": None,
            "runs_per_audit_median": None, "coupled_witnesses": 0, "seconds": seconds,
            "seconds_per_audit": seconds / runs}


def pooled(rows: list[dict], confidence: float) -> dict:
    runs = sum(r["runs"] for r in rows)
    return {
        "mechanism": f"all {len(rows)} rows (pooled)",
        "runs": runs,
        **rate_against_promise(sum(r["false_alarms"] for r in rows), runs, confidence),
        "seconds": sum(r["seconds"] for r in rows),
    }


# ---------------------------------------------------------------------------------------------
# (b) power
# ---------------------------------------------------------------------------------------------

def power_cell(ratio: float, exponent: int, seeds: int, confidence: float) -> dict:
    mech = make_laplace(TRUE_EPS)
    claim = TRUE_EPS / ratio
    samples = 1 << exponent
    caught, bounds, runs_made, over_truth = 0, [], [], 0
    confirmed, marginal, confirm_runs = 0, 0, []
    started = time.perf_counter()
    for seed in range(seeds):
        # as in `false_alarms`: one run gives the verdict without confirmation and with it
        res = dpverify.audit(mech, epsilon=claim, samples=samples, seed=seed, n_jobs=1,
                             confidence=confidence, confirm=True)
        c = res.confirmation
        first = c.first_bound if c is not None else res.epsilon_lower_bound
        caught += c is not None
        confirmed += res.verdict == "violation"
        marginal += c is not None and c.first_marginal
        bounds.append(float(first))
        runs_made.append(int(res.samples - (c.runs if c is not None else 0)))
        confirm_runs.append(int(c.runs) if c is not None else 0)
        over_truth += first > TRUE_EPS
    seconds = time.perf_counter() - started
    lo, hi = clopper_pearson(caught, seeds, CI_LEVEL)
    finite = [b for b in bounds if np.isfinite(b)]
    return {
        "ratio": ratio,
        "claimed_epsilon": claim,
        "true_epsilon": TRUE_EPS,
        "samples": samples,
        "samples_log2": exponent,
        "seeds": seeds,
        "caught": caught,
        "power": caught / seeds,
        "ci_low": lo,
        "ci_high": hi,
        "marginal": marginal,
        "confirmed": confirmed,
        "power_confirmed": confirmed / seeds,
        "lost_by_confirmation": caught - confirmed,
        "confirmation_runs_median": int(np.median(confirm_runs)),
        "bound_median": float(np.median(finite)) if finite else None,
        "bounds_above_true_epsilon": over_truth,
        "runs_per_audit_median": int(np.median(runs_made)),
        "seconds": seconds,
    }


# ---------------------------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------------------------

def plot_false_alarms(path: Path, rows: list[dict], meta: dict) -> None:
    """Each row's rate with its interval, one line per row (rows read top to bottom as in the
    table), against the promised maximum."""
    fig, ax = plt.subplots(figsize=(11, 1.6 + 0.32 * len(rows)))
    names = [r["factory"].replace("stop_early=False", "measurement").removeprefix("make_")
             .replace("(1.0)", "").replace("(1.0, k=64)", " k=64").replace("_", " ")
             for r in rows]
    y = np.arange(len(rows))[::-1]
    rate = np.array([r["rate"] for r in rows])
    err = np.array([[r["rate"] - r["ci_low"] for r in rows], [r["ci_high"] - r["rate"] for r in rows]])
    ax.errorbar(rate, y, xerr=err, fmt="o", capsize=4, color="tab:blue",
                label=f"observed rate, {CI_LEVEL:.0%} Clopper–Pearson CI")
    nominal = 1.0 - meta["confidence"]
    ax.axvline(nominal, color="tab:red", linestyle="--",
               label=f"guaranteed maximum 1 − confidence = {nominal:g}")
    ax.set_yticks(y, [f"{n} ({r['samples']:,})" for n, r in zip(names, rows)], fontsize=7.5)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlim(0, max(nominal, max(r["ci_high"] for r in rows)) * 1.15)
    ax.set_xlabel("false-alarm rate (violation verdicts / audits); true ε = claimed ε = 1")
    ax.set_title(f"false alarms on exactly tight mechanisms, confidence {meta['confidence']:g}"
                 " (samples per input in brackets)", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_power(path: Path, cells: list[dict], meta: dict) -> None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, ratio in enumerate(RATIOS):
        row = sorted((c for c in cells if c["ratio"] == ratio and not c.get("many_seeds")),
                     key=lambda c: c["samples"])
        # a small horizontal offset per line, so overlapping points (power 1) stay visible
        dodge = 2.0 ** (0.12 * (i - (len(RATIOS) - 1) / 2))
        xs = np.array([c["samples"] for c in row], dtype=float) * dodge
        ps = np.array([c["power"] for c in row])
        err = np.array([[c["power"] - c["ci_low"] for c in row],
                        [c["ci_high"] - c["power"] for c in row]])
        ax.errorbar(xs, ps, yerr=err, marker="o", capsize=3,
                    label=f"r = {ratio:g} (claim ε = {TRUE_EPS / ratio:.3g})")
    ax.set_xscale("log", base=2)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("certifying samples per input at the last stage (log scale; lines offset "
                  "slightly)")
    ax.set_ylabel("power (fraction of audits flagging the violation)")
    ax.set_title("dpverify detection power: Laplace with true ε = 1 claimed at 1/r\n"
                 f"confidence = {meta['confidence']:g}, {CI_LEVEL:.0%} Clopper–Pearson CIs")
    ax.legend(loc="lower right", fontsize=8, framealpha=0.95)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def stopped_text(rows: list[dict]) -> str:
    """How many of the stopped rows' audits the stop reached before their end."""
    stopped = [r for r in rows if "stopped_before_the_end" in r]
    if not stopped:
        return "no such rows in this run"
    return (f"{sum(r['stopped_before_the_end'] for r in stopped):,} of "
            f"{sum(r['runs'] for r in stopped):,} were stopped before their end")


def fmt_num(x) -> str:
    return "—" if x is None else f"{x:.4g}"


def against_nominal(row: dict) -> str:
    """Where a rate's interval lies against the promised rate."""
    if row["ci_low_above_nominal"]:
        return "**above**"
    return "below" if row["ci_high_within_nominal"] else "consistent"


def fmt_ci(lo: float, hi: float, digits: int = 4) -> str:
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def write_markdown(path: Path, fa_rows: list[dict], pool: dict, cells: list[dict],
                   meta: dict, curve_rows: list[dict] | None = None) -> None:
    nominal = 1.0 - meta["confidence"]
    first = meta.get("first_seed", 0)
    lines = [
        "# dpverify calibration: false alarms and detection power",
        "",
        f"dpverify {meta['dpverify']}, measured on {meta['date']}. Machine: {meta['platform']}, "
        f"{meta['cpu_model']}, {meta['cpu_count']} logical CPUs (load average "
        f"{meta['load_average_at_start']} at start, {meta['load_average_at_end']} at end); "
        f"Python {meta['python']}, numpy {meta['numpy']}, statsmodels {meta['statsmodels']}. "
        f"Every audit runs with `n_jobs=1`; total wall time {meta['total_seconds']:.1f} s "
        f"(false alarms {meta['false_alarm_seconds']:.1f} s, power grid "
        f"{meta['power_seconds']:.1f} s)."
        + (f" Only the rows of `{meta['recomputed_only']}` were recomputed on this date; the "
           f"others are those measured on {meta['other_rows_from']} (seeded audits of "
           "mechanisms whose behaviour had not changed)." if meta.get("recomputed_only") else ""),
        "",
        "## False alarms on exactly tight mechanisms",
        "",
        f"Each mechanism has true ε = 1 and is audited at claimed ε = 1 with "
        f"`samples={meta['samples']}`, `confidence={meta['confidence']:g}`, seeds "
        f"{first}..{first + meta['runs'] - 1}"
        + (" (the recomputed rows; the others keep the seeds of the run they come from)"
           if meta.get("recomputed_only") else "")
        + "; the rows *at 2^k* are measurement runs at "
        f"`samples={meta['coupled_samples']}`, seeds 0..{meta['coupled_runs'] - 1}, large "
        "enough for the coupled certificate (*coupled witnesses*: how many audits' witness it "
        "certified; randomized response never couples, as shared coins make its outputs "
        "disagree). `make_randomized_response_python_random(1.0)` is the same binary "
        "randomized response with its coins drawn from Python's `random` module and declared "
        "`randomness=\"own\"`: it takes the own-randomness path (no shared seeds, no coupled "
        "certificate); each audit seeds `random` with its own seed, so its rows are "
        "reproducible. A *violation* verdict is a false alarm. The interval is a "
        f"two-sided {CI_LEVEL:.0%} Clopper–Pearson interval on the rate; the engine promises a "
        f"rate of at most 1 − confidence = {nominal:g}.",
        "",
        f"| mechanism | samples | audits | false alarms | rate | 95% CI | against {nominal:g} "
        "| marginal | confirmed | coupled witnesses | median ε lower bound | max ε lower bound "
        "| s / audit |",
        "|---|--:|--:|--:|--:|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in fa_rows:
        lines.append(
            f"| {r['factory']} | {r['samples']:,} | {r['runs']:,} | {r['false_alarms']} "
            f"| {r['rate']:.4f} | {fmt_ci(r['ci_low'], r['ci_high'])} | {against_nominal(r)} "
            f"| {r.get('marginal_false_alarms', '—')} | {r.get('confirmed_false_alarms', '—')} "
            f"| {r['coupled_witnesses']} | {fmt_num(r['bound_median'])} | {fmt_num(r['bound_max'])} "
            f"| {r['seconds_per_audit']:.3f} |")
    lines.append(
        f"| **{pool['mechanism']}** | | {pool['runs']:,} | {pool['false_alarms']} "
        f"| {pool['rate']:.4f} | {fmt_ci(pool['ci_low'], pool['ci_high'])} "
        f"| {against_nominal(pool)} | | | | | | |")
    lines += confirmation_lines(fa_rows, meta["confidence"])
    lines += [
        "",
        "*Against*: *below* when the whole interval is below the promised rate, *consistent* "
        "when it contains it, **above** when the whole interval is above it (a broken promise).",
        "",
        "Why most rates sit below the promise: 1 − confidence is a union bound. An ordinary "
        "audit spends half of α = 1 − confidence on its test by betting (a supermartingale "
        "that reaches 2/α with probability at most α/2 under any stopping rule, by Ville's "
        "inequality, which is rarely tight) and half on its last stage, split over the "
        "candidate events it certifies. The rows *stopped at a random run count / time* stop "
        f"ordinary audits at a random point (log-uniform over {RUN_CAP_RANGE[0]:,}–"
        f"{RUN_CAP_RANGE[1]:,} runs, or uniform over {TIME_CAP_RANGE[0]:g}–{TIME_CAP_RANGE[1]:g} "
        "s) by the Ctrl-C a run cap or a time budget would send; what they had proved by then "
        f"is their verdict ({stopped_text(fa_rows)}). Each last-stage event's share goes to one conditional ratio test (exact, given Poisson sample "
        "sizes; used for δ = 0 where the search data expect it to be tighter) or to two "
        "one-sided Clopper–Pearson limits (P[M(D) ∈ S] from below, P[M(D′) ∈ S] from above, "
        "which must miss together, so that certificate is conservative). On these exactly tight "
        "mechanisms many events have a true ratio of e^ε, so the ratio test spends its share "
        "almost fully; the misses of different events and stages overlap, which keeps the sum "
        "of the pieces above the realised rate. The interval on the measured rate is "
        "Clopper–Pearson too. The rows with `stop_early=False` are measurement runs: only the "
        "last stage certifies, with all of α split over the events it certifies — on these "
        "mechanisms often one event with all of α, whose ratio is exactly e^ε — so their rate "
        "is expected at the promise itself, and an interval around it is the expected outcome. "
        "The coupled certificate (both inputs drawn on common random numbers in ≥ 64 "
        "independently seeded blocks; a one-sided t-test on the block means, inverted by "
        "Fieller's quadratic, its quantile shaded to 95% of its level) rests on the normal "
        "approximation of block means, not on an exact distribution: its rows measure it.",
        "",
        "## Detection power vs samples",
        "",
        f"`make_laplace(1.0)` (true ε = 1) audited at claimed ε = 1/r, so the true ε is r times "
        f"the claim; `confidence={meta['confidence']:g}`, {meta['power_seeds']} seeds "
        f"(0..{meta['power_seeds'] - 1}) in every cell, at every sample size including 2^18. "
        "Power = fraction of audits that return *violation*, with a two-sided "
        f"{CI_LEVEL:.0%} Clopper–Pearson interval. *samples* is the certifying sample size per "
        "input at the last stage; an audit that finds the violation at an earlier stage stops "
        "there.",
        "",
    ]
    header = "| r (claim ε) | " + " | ".join(f"2^{e}" for e in SAMPLE_EXPONENTS) + " |"
    lines += [header, "|---|" + "--:|" * len(SAMPLE_EXPONENTS)]
    grid = [c for c in cells if not c.get("many_seeds")]
    for ratio in RATIOS:
        row = {c["samples_log2"]: c for c in grid if c["ratio"] == ratio}
        parts = []
        for e in SAMPLE_EXPONENTS:
            c = row[e]
            parts.append(f"{c['power']:.2f} {fmt_ci(c['ci_low'], c['ci_high'], 2)}")
        lines.append(f"| {ratio:g} ({TRUE_EPS / ratio:.3g}) | " + " | ".join(parts) + " |")
    over = sum(c["bounds_above_true_epsilon"] for c in cells)
    lines += [
        "",
        "Median mechanism runs per audit (all stages, both inputs, search + certify), same "
        "layout:",
        "",
        header, "|---|" + "--:|" * len(SAMPLE_EXPONENTS),
    ]
    for ratio in RATIOS:
        row = {c["samples_log2"]: c for c in grid if c["ratio"] == ratio}
        lines.append(f"| {ratio:g} | " + " | ".join(
            f"{row[e]['runs_per_audit_median']:,}" for e in SAMPLE_EXPONENTS) + " |")
    lines += power_confirmation_lines(cells, meta)
    audits = sum(c["seeds"] for c in cells)
    low, high = clopper_pearson(over, audits, CI_LEVEL)
    lines += [
        "",
        f"Certified bounds above the true ε = 1 in the power grid: {over} of {audits} audits "
        f"(rate {over / audits:.4f}, {CI_LEVEL:.0%} CI {fmt_ci(low, high)}); each audit's bound "
        f"may exceed the true ε with probability at most 1 − confidence = "
        f"{1 - meta['confidence']:.2g}, so a rate whose interval lies above that would be a "
        "soundness failure.",
        "",
        "Plots: `calibration_false_alarms.png`, `calibration_power.png`.",
    ] + curve_lines(curve_rows or [], meta.get("curve_power"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def confirmation_lines(fa_rows: list[dict], confidence: float) -> list[str]:
    """The false alarms left after confirmation, pooled over the rows that confirmed
    (docs/method.md, "Marginal violations and confirmation"), against (1 − confidence)²."""
    rows = [r for r in fa_rows if "confirmed_false_alarms" in r]
    if not rows:
        return []
    audits = sum(r["runs"] for r in rows)
    alarms = sum(r["false_alarms"] for r in rows)
    marginal = sum(r["marginal_false_alarms"] for r in rows)
    confirmed = sum(r["confirmed_false_alarms"] for r in rows)
    lo, hi = clopper_pearson(confirmed, audits, CI_LEVEL)
    promise = (1 - confidence) ** 2
    return [
        "",
        f"*Marginal* and *confirmed* count the false alarms of each row that were marginal "
        f"(not firm at every level × {1 - confidence:g}) and that survived a confirmation on "
        "fresh runs (`confirm=True`; one audit gives both, as the confirmation only starts "
        "after the audit's verdict); the rows *stopped at a random* point are not confirmed. "
        f"Pooled over the {len(rows)} rows that confirm: {alarms} false alarms in "
        f"{audits:,} audits, {marginal} of them marginal; **with confirmation {confirmed} of "
        f"{audits:,} (rate {confirmed / audits:.4f}, 95% CI {fmt_ci(lo, hi)})**, against the "
        f"promised (1 − confidence)² = {promise:g} for confirmed audits "
        f"({'below' if hi <= promise else 'consistent' if lo <= promise else '**above**'}).",
    ]


def power_confirmation_lines(cells: list[dict], meta: dict) -> list[str]:
    """Power with confirmation: the grid again, then the many-seed cells."""
    if not cells or "confirmed" not in cells[0]:
        return []
    header = "| r (claim ε) | " + " | ".join(f"2^{e}" for e in SAMPLE_EXPONENTS) + " |"
    lines = ["", "The same audits with `confirm=True` (a violation counts only if fresh runs "
             "confirm it); power, then median fresh runs a confirmation drew:", "",
             header, "|---|" + "--:|" * len(SAMPLE_EXPONENTS)]
    grid = [c for c in cells if not c.get("many_seeds")]
    for ratio in RATIOS:
        row = {c["samples_log2"]: c for c in grid if c["ratio"] == ratio}
        lines.append(f"| {ratio:g} ({TRUE_EPS / ratio:.3g}) | " + " | ".join(
            f"{row[e]['power_confirmed']:.2f} ({row[e]['confirmation_runs_median']:,})"
            for e in SAMPLE_EXPONENTS) + " |")
    many = [c for c in cells if c.get("many_seeds")]
    if many:
        lines += ["", f"Power with and without confirmation on {many[0]['seeds']:,} seeds "
                  f"at `samples={many[0]['samples']}` (the false-alarm audits' budget); "
                  "*lost* is how many violations the confirmation did not confirm, with a 95% "
                  "Clopper–Pearson interval on that share:", "",
                  "| r (claim ε) | audits | power | marginal | power confirmed | lost | lost "
                  "share 95% CI | median audit runs | median confirmation runs |",
                  "|---|--:|--:|--:|--:|--:|---|--:|--:|"]
        for c in many:
            lo, hi = clopper_pearson(c["lost_by_confirmation"], c["seeds"])
            lines.append(
                f"| {c['ratio']:g} ({c['claimed_epsilon']:.3g}) | {c['seeds']:,} "
                f"| {c['power']:.4f} | {c['marginal']} | {c['power_confirmed']:.4f} "
                f"| {c['lost_by_confirmation']} | {fmt_ci(lo, hi)} "
                f"| {c['runs_per_audit_median']:,} | {c['confirmation_runs_median']:,} |")
    return lines


def kept_rows(args) -> dict | None:
    """With --only: the rows of OUT/calibration.json that are not recomputed, keyed by (name,
    stop_early) for the tight rows, (name, "coupled") for the coupled ones, and "power"."""
    if args.only is None:
        return None
    old = json.loads((args.out / "calibration.json").read_text(encoding="utf-8"))
    kept: dict = {"power": old["power"], "meta": old["meta"]}
    for row in old["false_alarms"]:
        name = row["mechanism"]
        if args.only in name:
            continue
        if " at 2^" in name:
            kept[name.split(" (measurement)")[0], "coupled"] = row
        else:
            kept[name.removesuffix(" (measurement)"), "(measurement)" not in name] = row
    return kept


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path,
                   help="directory for calibration.json/.md and the two PNG plots")
    p.add_argument("--runs", type=int, default=1000,
                   help="seeded audits per tight mechanism for the false-alarm rate (default 1000)")
    p.add_argument("--stopped-runs", type=int, default=250,
                   help="seeded audits per tight mechanism and kind of stop (default 250)")
    p.add_argument("--samples", type=int, default=4096,
                   help="certifying samples per input for the false-alarm audits (default 4096)")
    p.add_argument("--coupled-runs", type=int, default=400,
                   help="seeded measurement runs per mechanism at --coupled-samples (default 400)")
    p.add_argument("--coupled-samples", type=int, default=1 << 20,
                   help="samples of those runs, large enough to couple (default 1048576)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence of every audit (default 0.95)")
    p.add_argument("--first-seed", type=int, default=0,
                   help="the first seed of the false-alarm audits of the tight mechanisms "
                        "(default 0; a follow-up on fresh seeds starts past the last run's)")
    p.add_argument("--power-seeds", type=int, default=40,
                   help="seeds per (r, samples) cell of the power grid (default 40)")
    p.add_argument("--confirm-power-seeds", type=int, default=1000,
                   help="seeds of the power with and without confirmation at r = 1.25 and "
                        "1.5, at --samples (default 1000)")
    p.add_argument("--curve-runs", type=int, default=500,
                   help="seeded audits per curve claim (c) (default 500)")
    p.add_argument("--curve-power-runs", type=int, default=100,
                   help="seeds of the curve power row (c) (default 100)")
    p.add_argument("--curves-only", action="store_true",
                   help="recompute only the curve claims' rows (c); keep the rest of "
                        "OUT/calibration.json")
    p.add_argument("--render-only", action="store_true",
                   help="rewrite calibration.md and the plots from OUT/calibration.json")
    p.add_argument("--only", metavar="NAME",
                   help="recompute only the false-alarm rows whose mechanism name contains "
                        "NAME; every other row and the power grid are read back from "
                        "OUT/calibration.json (the audits are seeded: for a mechanism whose "
                        "behaviour did not change they would give the same counts)"),
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be at least 1")
    if args.samples < 100:
        p.error("--samples must be at least 100")
    if not 0.0 < args.confidence < 1.0:
        p.error("--confidence must be in (0, 1)")
    if args.power_seeds < 1:
        p.error("--power-seeds must be at least 1")
    return args


def render(out: Path) -> None:
    """calibration.md and the two plots from OUT/calibration.json."""
    doc = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    write_markdown(out / "calibration.md", doc["false_alarms"], doc["false_alarms_pooled"],
                   doc["power"], doc["meta"], doc.get("curve_false_alarms"))
    plot_false_alarms(out / "calibration_false_alarms.png", doc["false_alarms"], doc["meta"])
    plot_power(out / "calibration_power.png", doc["power"], doc["meta"])


def main(argv=None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.render_only:
        render(args.out)
        return 0

    def log(msg):
        print(msg, flush=True)

    def curve_rows():
        log("(c) false alarms of curve claims at their exact curves")
        return [curve_false_alarms(name, text, make, args.curve_runs, args.confidence, log)
                for name, text, make in CURVE_TIGHT]

    if args.curves_only:
        doc = json.loads((args.out / "calibration.json").read_text(encoding="utf-8"))
        doc["curve_false_alarms"] = rows = curve_rows()
        doc["meta"]["curve_power"] = curve_power(args.curve_power_runs, args.confidence)
        write_json(args.out / "calibration.json", doc)
        render(args.out)
        return 1 if any(r["ci_low_above_nominal"] for r in rows) else 0

    meta = {
        **machine_meta(),
        "statsmodels": package_version("statsmodels"),
        "matplotlib": matplotlib.__version__,
        "runs": args.runs,
        "first_seed": args.first_seed,
        "samples": args.samples,
        "coupled_runs": args.coupled_runs,
        "coupled_samples": args.coupled_samples,
        "confidence": args.confidence,
        "power_seeds": args.power_seeds,
        "power_ratios": list(RATIOS),
        "power_samples": [1 << e for e in SAMPLE_EXPONENTS],
        "ci_level": CI_LEVEL,
        "ci_method": "Clopper-Pearson, dpverify.stats cp_lower and cp_upper, two-sided",
        "n_jobs": 1,
        "load_average_at_start": load_average(),
    }
    log(f"calibration: {args.runs} runs x {len(TIGHT)} tight mechanisms at samples={args.samples}, "
        f"confidence={args.confidence:g}; power grid {len(RATIOS)} x {len(SAMPLE_EXPONENTS)} "
        f"cells x {args.power_seeds} seeds; load {meta['load_average_at_start']}")
    started = time.perf_counter()

    log("(a) false alarms at claim = true epsilon = 1")
    fa_rows = []
    kept = kept_rows(args)
    for stop_early, (name, factory_text, make) in [(s, t) for s in (True, False)
                                                   for t in TIGHT + OWN_TIGHT]:
        row = (kept.get((name, stop_early)) if kept is not None else None) or false_alarms(
            name, factory_text, make, args.runs, args.samples, args.confidence, log, stop_early,
            args.first_seed)
        fa_rows.append(row)
        log(f"{factory_text}: {row['false_alarms']}/{row['runs']} false alarms, rate "
            f"{row['rate']:.4f}, 95% CI {fmt_ci(row['ci_low'], row['ci_high'])}, "
            f"{row['seconds']:.1f} s")
    # Measurement runs large enough for the coupled certificate (common random numbers, a t-test
    # on ≥ 64 blocks): its own approximation, so its own rows
    for name, factory_text, make in COUPLING_TIGHT:
        if kept is not None and (name, "coupled") in kept:
            fa_rows.append(kept[name, "coupled"])
            continue
        row = false_alarms(name, factory_text, make, args.coupled_runs, args.coupled_samples,
                           args.confidence, log, False)
        row["mechanism"] += f" at 2^{args.coupled_samples.bit_length() - 1}"
        fa_rows.append(row)
        log(f"{factory_text} at samples={args.coupled_samples}: {row['false_alarms']}/"
            f"{row['runs']} false alarms ({row['coupled_witnesses']} coupled witnesses), "
            f"rate {row['rate']:.4f}, 95% CI {fmt_ci(row['ci_low'], row['ci_high'])}")
    for kind in STOPS:
        for name, factory_text, make in TIGHT:
            label = f"{name} (stopped at a random {'run count' if kind == 'run' else 'time'})"
            row = (kept.get((label, True)) if kept is not None else None) or \
                stopped_false_alarms(name, factory_text, make, kind, args.stopped_runs,
                                     args.samples, args.confidence, log, args.first_seed)
            fa_rows.append(row)
    pool = pooled(fa_rows, args.confidence)
    log(f"pooled: {pool['false_alarms']}/{pool['runs']}, rate {pool['rate']:.4f}, "
        f"95% CI {fmt_ci(pool['ci_low'], pool['ci_high'])}")
    meta["false_alarm_seconds"] = time.perf_counter() - started

    log("(b) detection power, Laplace true epsilon 1 audited at 1/r")
    power_started = time.perf_counter()
    cells = [] if kept is None else kept["power"]
    for ratio in RATIOS if kept is None else ():
        for exponent in SAMPLE_EXPONENTS:
            cell = power_cell(ratio, exponent, args.power_seeds, args.confidence)
            cells.append(cell)
            log(f"  r={ratio:g} samples=2^{exponent}: {cell['caught']}/{cell['seeds']} caught, "
                f"power {cell['power']:.2f} {fmt_ci(cell['ci_low'], cell['ci_high'], 2)}, "
                f"{cell['seconds']:.1f} s")
    for ratio in CONFIRM_RATIOS if kept is None else ():
        cell = power_cell(ratio, args.samples.bit_length() - 1, args.confirm_power_seeds,
                          args.confidence)
        cell["many_seeds"] = True
        cells.append(cell)
        log(f"  r={ratio:g} samples={args.samples}, {args.confirm_power_seeds} seeds: power "
            f"{cell['power']:.4f}, confirmed {cell['power_confirmed']:.4f}, "
            f"{cell['seconds']:.1f} s")
    meta["power_seconds"] = time.perf_counter() - power_started
    meta["total_seconds"] = time.perf_counter() - started
    if kept is not None:  # seconds of the whole table, as if run at once
        meta["false_alarm_seconds"] = sum(r["seconds"] for r in fa_rows)
        meta["power_seconds"] = kept["meta"]["power_seconds"]
        meta["total_seconds"] = meta["false_alarm_seconds"] + meta["power_seconds"]
        meta["recomputed_only"] = args.only
        meta["other_rows_from"] = kept["meta"]["date"]
    curves = curve_rows()
    meta["curve_power"] = curve_power(args.curve_power_runs, args.confidence)
    meta["load_average_at_end"] = load_average()

    json_path, md_path = args.out / "calibration.json", args.out / "calibration.md"
    fa_png, power_png = args.out / "calibration_false_alarms.png", args.out / "calibration_power.png"
    write_json(json_path, {"false_alarms": fa_rows, "false_alarms_pooled": pool, "power": cells,
                           "meta": meta, "curve_false_alarms": curves})
    write_markdown(md_path, fa_rows, pool, cells, meta, curves)
    plot_false_alarms(fa_png, fa_rows, meta)
    plot_power(power_png, cells, meta)
    log(f"total {meta['total_seconds']:.1f} s; wrote {json_path}, {md_path}, {fa_png}, {power_png}")
    broken = [r.get("factory", r["mechanism"]) for r in fa_rows + curves
              if r["ci_low_above_nominal"]]
    if broken or pool["ci_low_above_nominal"]:
        log(f"false-alarm rate above the promise: {broken or 'pooled'}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
