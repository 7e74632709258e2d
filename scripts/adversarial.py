"""Adversarial false-alarm suite: correct mechanisms chosen to stress the certificates.

Each case in CASES meets its claim exactly, so every violation is a false alarm. Each is audited
on seeds 0..N−1 in the three MODES, its false-alarm rate set against the promise 1 − confidence
(a two-sided 95% Clopper–Pearson interval); a row lying wholly above it is measured again on
FOLLOW_UP·N fresh seeds, and if that lies above too the promise is broken (exit 1). Rare leaks:
Laplace releasing its input in a fraction LEAK_RATES of runs. Writes DIR/adversarial.json and
DIR/adversarial.md; how to read them: docs/results.md, "Adversarial false alarms".

Usage: python scripts/adversarial.py --out DIR [--seeds 200] [--seconds 0.4] [--jobs 2]
           [--only CASE ...] [--modes MODE ...] [--first-seed 0] [--leak-seeds 40]
           [--keep OLD/adversarial.json] [--rewrite-markdown]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from joblib import Parallel, delayed

from _common import (clopper_pearson, interval, machine_line, read_json, table,  # repo on path
                     write_json)
import dpverify
from dpverify.result import COUPLED
from _machine import load_average, machine_meta, package_version
from mechanisms_under_test import adversarial
from mechanisms_under_test.basic import make_randomized_response
from mechanisms_under_test.own_randomness import make_randomized_response_python_random

CI_LEVEL = 0.95   # level of the interval on each measured rate (not the audits' confidence)
MIN_SEEDS = 200   # the floor: fewer seeds cannot place a 5 % rate
LEAK_SEEDS = 40   # seeds per rare-leak row (default budget, about 3 s an audit)
LEAK_RATES = (1e-4, 1e-5, None)  # None: the reach a leak-free audit's pass states
FOLLOW_UP = 5     # a row above the promise is measured again on this many times the seeds


class Case(NamedTuple):
    name: str
    what: str
    build: object   # () -> dpverify.Mechanism
    samples: int    # certifying runs per input at the last stage (ordinary and measurement)


CASES = (
    Case("k_ary_rr", "8-ary randomized response, ε = 1, exactly tight",
         lambda: make_randomized_response(1.0, k=8), 1 << 16),
    Case("rare_atom", "exactly tight atom of probability 10⁻³, ε = 1",
         lambda: adversarial.make_rare_atom(1.0, atom=1e-3), 1 << 18),
    Case("heavy_tail", "Gaussian scale mixture σ ∈ {0.5, 1, 3} at its exact δ(ε = 1)",
         lambda: adversarial.make_gaussian_scale_mixture(1.0), 1 << 16),
    Case("unaligned", "Laplace, ε = 1, 1 draw per run on D and 2 on D′",
         lambda: adversarial.make_unaligned_laplace(1.0), 1 << 16),
    Case("coupled_minimum", "atom of probability 10⁻², ε = 1, at 64 blocks of 2^14 runs",
         lambda: adversarial.make_rare_atom(1.0, atom=1e-2, name="coupled_minimum"), 1 << 20),
    Case("input_search", "clipped sum over [0, 4]^5 behind input search, ε = 1",
         lambda: adversarial.make_clipped_sum(1.0), 1 << 14),
    Case("own_randomness", "binary randomized response on Python's random, ε = 1",
         lambda: make_randomized_response_python_random(1.0), 1 << 16),
    Case("repeated", "Laplace, ε = 1, each draw serving two consecutive outputs of a batch",
         lambda: adversarial.make_repeated_laplace(1.0), 1 << 16),
    Case("tiled", "binary randomized response, ε = 1, each batch two copies of half its draws",
         lambda: adversarial.make_tiled_response(1.0), 1 << 16),
    Case("shared_noise", "Laplace, ε = 1, drawn once per call, plus fresh Gaussian noise per "
         "output (96% of the variance shared)",
         lambda: adversarial.make_shared_noise_laplace(1.0), 1 << 16),
    Case("call_coin", "Laplace (ε = 2) Poisson-subsampled at rate 0.1 with one coin per call, "
         "claimed at its exact ε = 0.4732",
         lambda: adversarial.make_call_subsampled_laplace(2.0, 0.1), 1 << 16),
    Case("signed_zero", "(1 − 2·data)·G, G uniform on {−1, 0, 1}: −0.0 on one input, 0-DP",
         lambda: adversarial.make_signed_zero(), 1 << 16),
    Case("int_or_float", "a uniform digit as int on one input and float on the other, 0-DP",
         lambda: adversarial.make_int_or_float(), 1 << 16),
)

MODES = ("ordinary", "measurement", "time budget")
# the cases whose batches break the batched contract: an audit must refuse them or pass them
DEPENDENT = ("repeated", "tiled", "shared_noise", "call_coin")


def mode_options(mode: str, samples: int, seconds: float) -> dict:
    """The audit options of `mode`: time-budgeted runs are capped at 16× the samples."""
    return {"ordinary": {"samples": samples},
            "measurement": {"samples": samples, "stop_early": False},
            "time budget": {"samples": 16 * samples, "stop_early": False,
                            "seconds": seconds}}[mode]


def kept_rows_in_words(kept: list) -> list:
    """The kept rows by mode: "the ordinary rows" (every case kept), else "... of a, b"."""
    pairs, words = {(r["case"], r["mode"]) for r in kept}, []
    for mode in MODES:
        cases = [c.name for c in CASES if (c.name, mode) in pairs]
        if cases:
            words.append(f"the {mode} rows" + ("" if len(cases) == len(CASES)
                                               else " of " + ", ".join(cases)))
    return words


def one_audit(case: Case, options: dict, seed: int) -> dict:
    """One seeded audit, reduced to what the table needs."""
    started = time.perf_counter()
    try:
        result = dpverify.audit(case.build(), seed=seed, n_jobs=1, **options)
    except dpverify.ContractError as exc:  # refused: the batch is not independent runs
        return {"seed": seed, "violation": False, "refused": True, "inconclusive": False,
                "coupled": False, "bound": float("-inf"), "runs": 0, "reason": str(exc),
                "seconds": time.perf_counter() - started}
    w = result.witness
    return {"seed": seed, "violation": result.verdict == "violation", "refused": False,
            "inconclusive": result.outcome == "inconclusive",
            "coupled": w is not None and w.certificate == COUPLED,
            "bound": result.epsilon_lower_bound, "runs": result.samples,
            "reach": result.leak_reach if result.verdict == "pass" else None,
            "seconds": time.perf_counter() - started}


def summarise(case: Case, mode: str, audits: list[dict], promise: float) -> dict:
    k, n = sum(a["violation"] for a in audits), len(audits)
    lo, hi = clopper_pearson(k, n, CI_LEVEL)
    return {"case": case.name, "what": case.what, "mode": mode, "seeds": n, "false_alarms": k,
            "rate": k / n, "ci_low": lo, "ci_high": hi,
            "against_promise": "**above**" if lo > promise else
                               ("below" if hi < promise else "consistent"),
            "false_alarm_seeds": [a["seed"] for a in audits if a["violation"]],
            "refused": sum(a["refused"] for a in audits),
            "refusal_reasons": sorted({a["reason"].split(":")[0][:160] for a in audits
                                       if a["refused"]}),
            "inconclusive": sum(a["inconclusive"] for a in audits),
            "coupled_witnesses": sum(a["coupled"] for a in audits),
            "bound_max": max(a["bound"] for a in audits),
            "runs_median": float(np.median([a["runs"] for a in audits if not a["refused"]]
                                           or [0])),
            "reach_median": float(np.median([a["reach"] for a in audits
                                             if a.get("reach") is not None] or [np.nan])),
            "seconds": sum(a["seconds"] for a in audits),
            "seconds_median": float(np.median([a["seconds"] for a in audits]))}


def run_row(case: Case, mode: str, args, promise: float, seeds: range) -> dict:
    options = mode_options(mode, case.samples, args.seconds)
    audits = Parallel(n_jobs=args.jobs)(delayed(one_audit)(case, options, seed)
                                        for seed in seeds)
    row = {**summarise(case, mode, audits, promise), "options": dict(options),
           "seed_range": [seeds[0], seeds[-1]]}
    print(f"{case.name:16s} {mode:12s} {row['false_alarms']:3d}/{row['seeds']} "
          f"{row['against_promise']:10s} refused {row['refused']:3d}  {row['seconds']:.0f} s",
          flush=True)
    return row


def curator(rate: float) -> Case:
    """Laplace (ε = 1) releasing its input in `rate` of runs (default budget: no `samples`)."""
    return Case("curator", "", lambda: adversarial.make_curator_laplace(1.0, rate), 0)


def leak_row(rate, seeds: range, jobs: int) -> dict:
    """A rare-leak row: catches, and passes whose stated reach covers the leak (false)."""
    origin = "fixed"
    if rate is None:  # the reach a pass of the leak-free mechanism states, on seed 0
        rate = one_audit(curator(0.0), {}, 0)["reach"]
        origin = "stated by a leak-free audit (seed 0)"
    mechanism = curator(rate)
    audits = Parallel(n_jobs=jobs)(delayed(one_audit)(mechanism, {}, seed) for seed in seeds)
    k, n = sum(a["violation"] for a in audits), len(audits)
    lo, hi = clopper_pearson(k, n, CI_LEVEL)
    passes = [a for a in audits if not a["violation"]]
    false = [a["seed"] for a in passes if a["reach"] is not None and a["reach"] <= rate]
    row = {"rate": rate, "origin": origin, "seeds": n, "seed_range": [seeds[0], seeds[-1]],
           "caught": k, "caught_rate": k / n, "ci_low": lo, "ci_high": hi,
           "passes": len(passes), "false_statements": len(false), "false_statement_seeds": false,
           "reach_median": float(np.median([a["reach"] for a in passes])) if passes else None,
           "runs_median": float(np.median([a["runs"] for a in audits])),
           "seconds_median": float(np.median([a["seconds"] for a in audits]))}
    print(f"leak 1 in {1 / rate:,.0f}: caught {k}/{n} [{lo:.3f}, {hi:.3f}], passes "
          f"{len(passes)}, false statements {len(false)}", flush=True)
    return row


def one_in(reach) -> str:
    """A leak reach r as "1 in ⌊1/r⌋", "–" where no pass stated one."""
    if reach is None or np.isnan(reach):
        return "–"
    return "none" if np.isinf(reach) else f"1 in {int(1 / reach):,}"


def rows_table(rows: list[dict]) -> list[str]:
    """The false-alarm table: one row per case and mode."""
    header = ("case", "mode", "S", "seeds", "false alarms", "rate", "95% CI", "vs promise",
              "refused", "inconclusive", "coupled", "max bound", "leak reach (median)",
              "median runs", "median s")
    return table(header, [
        [r["case"], r["mode"], f"2^{int(np.log2(r['options']['samples']))}",
         "–".join(map(str, r["seed_range"])), f"{r['false_alarms']}/{r['seeds']}",
         f"{r['rate']:.3f}", interval(r["ci_low"], r["ci_high"], 3), r["against_promise"],
         r.get("refused", 0), r["inconclusive"], r["coupled_witnesses"], f"{r['bound_max']:.4g}",
         one_in(r.get("reach_median")), f"{r['runs_median']:,.0f}", f"{r['seconds_median']:.2f}"]
        for r in rows], align="llrlrrllrrrrrrr")


def leak_table(leaks: list[dict]) -> list[str]:
    """The rare-leak table: one row per leak rate."""
    header = ("leak in", "rate from", "seeds", "caught", "95% CI", "passes",
              "passes whose statement covers the leak", "leak reach stated (median)",
              "median runs", "median s")
    return table(header, [
        [f"1 in {1 / r['rate']:,.0f} runs", r["origin"], "–".join(map(str, r["seed_range"])),
         f"{r['caught']}/{r['seeds']}", interval(r["ci_low"], r["ci_high"], 3), r["passes"],
         r["false_statements"], one_in(r["reach_median"]), f"{r['runs_median']:,.0f}",
         f"{r['seconds_median']:.2f}"] for r in leaks], align="lllrlrrrrr")


def markdown(document: dict) -> str:
    """The report, from an adversarial.json document."""
    rows, follow_ups, meta = document["rows"], document["follow_ups"], document["meta"]
    promise = 1.0 - meta["confidence"]
    kept = (f"; {' and '.join(meta['kept'])} are kept from the run of {meta['kept_date']}"
            if meta.get("kept") else "")
    lines = ["# Adversarial false-alarm suite", "",
             machine_line({**meta, "load_average_at_end": meta.get("load_average")})
             + f" Generated by `python scripts/adversarial.py --out reports --seeds "
             f"{meta['seeds']}` in {meta['total_seconds']:.0f} s ({meta['jobs']} audits at a "
             f"time, each on one core){kept}.", "",
             "Every case is a correct mechanism, tight at its claim: every violation is a false "
             f"alarm, and the promise is at most {promise:g} of them in every mode. *vs promise*: "
             "the 95% Clopper–Pearson interval wholly *above* the promise (a broken promise), "
             "*consistent* with it, or wholly *below*; *refused*: audits stopped with a "
             "`ContractError`, counted apart; *coupled*: witnesses of the coupled t-test. The "
             "modes and the other columns: "
             "[docs/results.md](../docs/results.md#adversarial-false-alarms).", "",
             *rows_table(rows)]
    if follow_ups:
        lines += ["", "**Follow-ups.** Rows whose interval lay wholly above the promise, measured "
                  f"again on {FOLLOW_UP}× as many fresh seeds (the promise is broken only if the "
                  "follow-up lies above too):", "", *rows_table(follow_ups)]
    k, n = sum(r["false_alarms"] for r in rows), sum(r["seeds"] for r in rows)
    lines += ["", f"Pooled: {k} false alarms in {n} audits, {k / n:.4f} (95% CI "
              f"{interval(*clopper_pearson(k, n, CI_LEVEL))}) against the promised {promise:g}."]
    dependent = [r for r in rows if r["case"] in DEPENDENT]
    if dependent:
        refused, audits = sum(r["refused"] for r in dependent), sum(r["seeds"] for r in dependent)
        lines.append(f"Batches that are not independent runs ({', '.join(DEPENDENT)}): refused in "
                     f"{refused} of {audits} audits, flagged in "
                     f"{sum(r['false_alarms'] for r in dependent)}.")
    what = {r["case"]: r["what"] for r in rows}
    lines += ["", "Cases (`mechanisms_under_test/adversarial.py`, with their exact claims; the "
              "seeds of every false alarm are in `adversarial.json`):", "",
              *(f"- **{case}**: {text}." for case, text in what.items())]
    if document["leaks"]:
        lines += ["", "## Rare leaks", "",
                  "Laplace at ε = 1 releasing its input in a fraction r of runs "
                  "(`make_curator_laplace`, ε = ∞), ordinary audits at the default budget: "
                  "every violation is a catch, and a pass whose stated leak reach "
                  "(docs/theory.md §2.13) covers r is a false statement.", "",
                  *leak_table(document["leaks"])]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="directory for the report")
    p.add_argument("--seeds", type=int, default=MIN_SEEDS, help="seeds per row (≥ 200)")
    p.add_argument("--seconds", type=float, default=0.4, help="time budget per audit")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--jobs", type=int, default=2, help="audits run at once, each on one core")
    p.add_argument("--only", nargs="*", help="case names to run (default: all)")
    p.add_argument("--modes", nargs="*", choices=MODES, help="modes to run (default: all)")
    p.add_argument("--first-seed", type=int, default=0, help="seeds first..first+N−1")
    p.add_argument("--keep", type=Path, help="adversarial.json giving the rows "
                   "not run now (and its leaks, with --leak-seeds 0)")
    p.add_argument("--leak-seeds", type=int, default=LEAK_SEEDS, help="seeds per rare-leak row")
    p.add_argument("--rewrite-markdown", action="store_true", help="only the .md from the JSON")
    args = p.parse_args(argv)
    if args.seeds < MIN_SEEDS and not args.only:
        p.error(f"--seeds must be at least {MIN_SEEDS} for the full report")
    args.modes = args.modes or list(MODES)
    return args


def measure(args) -> dict:
    """The adversarial.json document: rows (with those of --keep), follow-ups, rare leaks."""
    meta = {**machine_meta(), "dpverify": dpverify.__version__, "numpy": package_version("numpy")}
    promise, started = 1.0 - args.confidence, time.perf_counter()
    first = range(args.first_seed, args.first_seed + args.seeds)
    rows = [run_row(case, mode, args, promise, first) for case in CASES
            if not args.only or case.name in args.only for mode in args.modes]
    old = read_json(args.keep) if args.keep else None
    if old:  # rows of the other cases and modes from an earlier run, in CASES order
        ran = {(r["case"], r["mode"]) for r in rows}
        kept = [r for r in old["rows"] if (r["case"], r["mode"]) not in ran]
        position = [c.name for c in CASES].index
        rows = sorted(kept + rows, key=lambda r: (position(r["case"]), MODES.index(r["mode"])))
    leaks = [leak_row(rate, range(args.first_seed, args.first_seed + args.leak_seeds),
                      args.jobs) for rate in LEAK_RATES] if args.leak_seeds > 0 else []
    if not leaks and old:
        leaks = old.get("leaks", [])
    cases = {case.name: case for case in CASES}
    follow_ups = [dict(run_row(cases[r["case"]], r["mode"], args, promise,
                               range(first.stop, first.stop + FOLLOW_UP * args.seeds)),
                       follow_up=True)
                  for r in rows if r["ci_low"] > promise]
    meta.update(seeds=args.seeds, seconds=args.seconds, confidence=args.confidence,
                jobs=args.jobs, total_seconds=time.perf_counter() - started,
                load_average=load_average())
    if old:
        meta.update(kept=kept_rows_in_words(kept), kept_date=old["meta"]["date"])
    return {"rows": rows, "follow_ups": follow_ups, "leaks": leaks, "meta": meta}


def main(argv=None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.rewrite_markdown:   # the report again from its JSON, without rerunning an audit
        document = read_json(args.out / "adversarial.json")
    else:
        document = measure(args)
        write_json(args.out / "adversarial.json", document)
    (args.out / "adversarial.md").write_text(markdown(document), encoding="utf-8")
    promise = 1.0 - document["meta"]["confidence"]
    broken = [r for r in document["follow_ups"] if r["ci_low"] > promise]
    for r in broken:
        print(f"BROKEN PROMISE: {r['case']} ({r['mode']}): {r['false_alarms']}/{r['seeds']}",
              file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
