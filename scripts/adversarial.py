"""Adversarial false-alarm suite: correct mechanisms chosen to stress the certificates.

What is measured
    Each case is a mechanism that meets its claim exactly (mechanisms_under_test/adversarial.py
    and the k-ary and own-randomness randomized responses), so every "violation" is a false
    alarm. Each is audited with seeds 0..N−1 (N = --seeds, at least 200) in three modes:
      ordinary     `audit(mech, samples=S, seed=s, n_jobs=1)`: a test by betting on the search
                   rows spends half of α, the last stage the other half, and the audit stops
                   at the first violation;
      measurement  `stop_early=False`: only the last stage certifies, with all of α;
      time budget  `stop_early=False, seconds=T, samples=16·S`: a pilot of the mechanism's
                   cost, timed before the run, sizes it (docs/method.md, "Time budgets").
    Per row: false alarms, their rate and a two-sided 95 % Clopper–Pearson interval
    (`dpverify.stats`, through scripts/_common.py), where the interval lies against the
    promise 1 − confidence, how many audits were inconclusive (docs/theory.md §2.11), how many
    witnesses used the coupled certificate, the largest certified bound and the seconds.
    A row whose interval lies wholly above the promise is measured again on FOLLOW_UP times as
    many fresh seeds (N..(1 + FOLLOW_UP)·N − 1), and both rows are reported: among 21 rows one
    lies above by chance now and then even where every rate is at the promise. If the follow-up
    interval also lies wholly above, the promise is broken and the script exits 1.

Cases
    k_ary_rr          8-ary randomized response at ε = 1, exactly tight on every output.
    rare_atom         the whole privacy loss on one output of probability 10⁻³ (S = 2^18).
    heavy_tail        Gaussian scale mixture σ ∈ {0.5, 1, 3}, claimed at its exact δ(1).
    unaligned         Laplace drawing 1 value per run on D and 2 on D′ (shared seeds misalign).
    coupled_minimum   an atom of probability 10⁻² at S = 2^20: 64 blocks of 2^14 runs, the
                      coupled certificate's least, with about 60 hits per block under D′
                      against the 50 it needs.
    input_search      a clipped sum, tight only on pairs input search has to find.
    own_randomness    binary randomized response on Python's `random` (randomness="own").
    repeated          Laplace whose batch repeats each draw twice (np.repeat);
    tiled             randomized response whose batch is two copies of half its draws (np.tile);
    shared_noise      Laplace drawn once per call plus fresh Gaussian noise per output;
    call_coin         subsampled Laplace whose subsampling coin is drawn once per call:
                      each run meets its claim, the batch breaks the batched contract, so an
                      audit must refuse it (ContractError, counted apart) or pass it;
    signed_zero       −0.0 on one input, 0.0 on the other, the same law over the reals;
    int_or_float      the same digits as int on one input and float on the other.

Rare leaks (a table of their own: every violation is a catch)
    Laplace at ε = 1 that releases its input in the clear in a fraction r of runs (ε = ∞),
    audited ordinarily at the default budget, LEAK_SEEDS seeds each: r = 10⁻⁴, r = 10⁻⁵, and r
    = the leak reach a pass of the leak-free mechanism states (seed 0). Per row: catches with a
    Clopper–Pearson interval, and the passes whose statement "a leak in ≥ 1 of N runs would have
    been caught" covers r (N ≤ 1/r), each a statement the audit proved false. In the main table
    every pass states a leak reach too; there the mechanisms leak nothing, so no statement can
    be false, and the column shows the median N.

Usage: python scripts/adversarial.py --out DIR [--seeds N] [--seconds T] [--jobs J]
                                    [--only CASE ...] [--modes MODE ...] [--first-seed F]
                                    [--keep OLD/adversarial.json] [--leak-seeds L]
       (--keep: the rows of the cases not in --only are taken from OLD, and with
        --leak-seeds 0 its rare-leak rows)
       (defaults N = 200, T = 0.4, J = 2: audits run J at a time, each on one core)
Writes DIR/adversarial.md and DIR/adversarial.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _common import clopper_pearson, write_json  # noqa: E402  (puts the repository on the path)

import numpy as np  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402

import dpverify  # noqa: E402
from dpverify.result import COUPLED  # noqa: E402
from _machine import load_average, machine_meta, package_version  # noqa: E402
from mechanisms_under_test import adversarial  # noqa: E402
from mechanisms_under_test.basic import make_randomized_response  # noqa: E402
from mechanisms_under_test.own_randomness import (  # noqa: E402
    make_randomized_response_python_random)

CI_LEVEL = 0.95   # level of the interval on each measured rate (not the audits' confidence)
MIN_SEEDS = 200   # the floor: fewer seeds cannot place a 5 % rate
LEAK_SEEDS = 40   # seeds per rare-leak row (default budget, about 3 s an audit)
LEAK_RATES = (1e-4, 1e-5, None)  # None: the reach a leak-free audit's pass states
FOLLOW_UP = 5     # a row above the promise is measured again on this many times the seeds


@dataclass(frozen=True)
class Case:
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
    if mode == "ordinary":
        return {"samples": samples}
    if mode == "measurement":
        return {"samples": samples, "stop_early": False}
    return {"samples": 16 * samples, "stop_early": False, "seconds": seconds}


def kept_rows_in_words(kept: list) -> list:
    """The rows kept from an earlier run, by mode: "the ordinary rows" where every case's row of
    that mode was kept, else "the ordinary rows of a, b" (joined with "and" in the report)."""
    words = []
    for mode in MODES:
        cases = [c.name for c in CASES if any(r["case"] == c.name and r["mode"] == mode
                                              for r in kept)]
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
    row = summarise(case, mode, audits, promise)
    row["options"] = dict(options)
    row["seed_range"] = [seeds.start, seeds.stop - 1]
    print(f"{case.name:16s} {mode:12s} {row['false_alarms']:3d}/{row['seeds']} "
          f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}] {row['against_promise']:10s} "
          f"refused {row['refused']:3d}  inconclusive {row['inconclusive']:3d}  coupled {row['coupled_witnesses']:3d}  "
          f"{row['seconds']:.0f} s", flush=True)
    return row


def table_row(r: dict) -> str:
    seeds = f"{r['seed_range'][0]}–{r['seed_range'][1]}"
    return (f"| {r['case']} | {r['mode']} | 2^{int(np.log2(r['options']['samples']))} | "
            f"{seeds} | {r['false_alarms']}/{r['seeds']} | {r['rate']:.3f} | "
            f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] | {r['against_promise']} | "
            f"{r.get('refused', 0)} | {r['inconclusive']} | {r['coupled_witnesses']} | "
            f"{r['bound_max']:.4g} | {one_in(r.get('reach_median'))} | "
            f"{r['runs_median']:,.0f} | {r['seconds_median']:.2f} |")


def one_in(reach) -> str:
    """A leak reach r as "1 in N" (N = ⌊1/r⌋), "–" where no pass stated one."""
    if reach is None or np.isnan(reach):
        return "–"
    return "none" if np.isinf(reach) else f"1 in {int(1 / reach):,}"


TABLE_HEAD = ["| case | mode | S | seeds | false alarms | rate | 95% CI | vs promise | "
              "refused | inconclusive | coupled | max bound | leak reach (median) | "
              "median runs | median s |",
              "|---|---|--:|---|--:|--:|---|---|--:|--:|--:|--:|--:|--:|--:|"]


def leak_audit(rate: float, seed: int) -> dict:
    """One ordinary audit at the default budget of Laplace (ε = 1) leaking in `rate` of runs."""
    started = time.perf_counter()
    result = dpverify.audit(adversarial.make_curator_laplace(1.0, rate), seed=seed, n_jobs=1)
    return {"seed": seed, "caught": result.verdict == "violation",
            "reach": result.leak_reach if result.verdict == "pass" else None,
            "bound": result.epsilon_lower_bound, "runs": result.samples,
            "seconds": time.perf_counter() - started}


def leak_row(rate, seeds: range, jobs: int) -> dict:
    """A rare-leak row: catches, and passes whose stated reach covers the leak (false)."""
    origin = "fixed"
    if rate is None:  # the reach a pass of the leak-free mechanism states, on seed 0
        rate, origin = leak_audit(0.0, 0)["reach"], "stated by a leak-free audit (seed 0)"
    audits = Parallel(n_jobs=jobs)(delayed(leak_audit)(rate, seed) for seed in seeds)
    k, n = sum(a["caught"] for a in audits), len(audits)
    lo, hi = clopper_pearson(k, n, CI_LEVEL)
    passes = [a for a in audits if not a["caught"]]
    false = [a["seed"] for a in passes if a["reach"] is not None and a["reach"] <= rate]
    row = {"rate": rate, "origin": origin, "seeds": n, "seed_range": [seeds.start, seeds.stop - 1],
           "caught": k, "caught_rate": k / n, "ci_low": lo, "ci_high": hi,
           "passes": len(passes), "false_statements": len(false), "false_statement_seeds": false,
           "reach_median": float(np.median([a["reach"] for a in passes])) if passes else None,
           "runs_median": float(np.median([a["runs"] for a in audits])),
           "seconds_median": float(np.median([a["seconds"] for a in audits]))}
    print(f"leak 1 in {1 / rate:,.0f}: caught {k}/{n} [{lo:.3f}, {hi:.3f}], passes "
          f"{len(passes)}, false statements {len(false)}", flush=True)
    return row


def leak_table(rows: list[dict]) -> list[str]:
    lines = ["| leak in | rate from | seeds | caught | 95% CI | passes | passes whose statement "
             "covers the leak | leak reach stated (median) | median runs | median s |",
             "|---|---|---|--:|---|--:|--:|--:|--:|--:|"]
    for r in rows:
        lines.append(f"| 1 in {1 / r['rate']:,.0f} runs | {r['origin']} | "
                     f"{r['seed_range'][0]}–{r['seed_range'][1]} | {r['caught']}/{r['seeds']} | "
                     f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] | {r['passes']} | "
                     f"{r['false_statements']} | {one_in(r['reach_median'])} | "
                     f"{r['runs_median']:,.0f} | {r['seconds_median']:.2f} |")
    return lines


def markdown(rows: list[dict], follow_ups: list[dict], meta: dict,
             leaks: list[dict] | None = None) -> str:
    promise = 1.0 - meta["confidence"]
    lines = ["# Adversarial false-alarm suite", "",
             f"dpverify {meta['dpverify']}, {meta['date']}; {meta['platform']}, "
             f"{meta['cpu_model']}, numpy {meta['numpy']}. Generated by "
             f"`python scripts/adversarial.py --out reports --seeds {meta['seeds']}` in "
             f"{meta['total_seconds']:.0f} s ({meta['jobs']} audits at a time, each on one "
             "core)" + (f"; {' and '.join(meta['kept'])} are kept from the run "
                        f"of {meta['kept_date']}" if meta.get("kept") else "") + ".", "",
             "Every case is a correct mechanism, tight at its claim, chosen to stress a "
             "certificate; every violation is a false alarm. The promise: at confidence "
             f"{meta['confidence']:g} an audit flags a correct mechanism with probability at "
             f"most {promise:g}, in every mode. Each rate has a two-sided {CI_LEVEL:.0%} "
             "Clopper–Pearson interval; *above* would mean the interval lies wholly above the "
             "promise (a broken promise), *consistent* that it contains it, *below* that it lies "
             "wholly below.", "",
             f"Modes: **ordinary** (`samples=S`), **measurement** (`stop_early=False`), "
             f"**time budget** (`stop_early=False, seconds={meta['seconds']:g}, samples=16·S`: "
             "a pilot of the mechanism's cost, timed before the run, sizes it). *Refused* counts "
             "audits stopped with a "
             "`ContractError` because a batch's runs were not independent",
             "(docs/method.md, \"Independent runs\"): counted apart, never as false alarms; "
             "the rate is over all seeds. *Inconclusive* counts audits whose budget could "
             "not have caught a gross violation (docs/theory.md §2.11); *coupled* counts "
             "witnesses certified by the coupled t-test.", "",
             *TABLE_HEAD, *(table_row(r) for r in rows)]
    if follow_ups:
        lines += ["", "**Follow-ups.** Rows whose interval lay wholly above the promise, measured "
                  f"again on {FOLLOW_UP}× as many fresh seeds (the promise is broken only if the "
                  "follow-up lies above too):", "", *TABLE_HEAD,
                  *(table_row(r) for r in follow_ups)]
    k = sum(r["false_alarms"] for r in rows)
    n = sum(r["seeds"] for r in rows)
    lo, hi = clopper_pearson(k, n, CI_LEVEL)
    lines += ["", f"Pooled: {k} false alarms in {n} audits, {k / n:.4f} "
              f"(95% CI [{lo:.4f}, {hi:.4f}]) against the promised {promise:g}."]
    dependent = [r for r in rows if r["case"] in DEPENDENT]
    if dependent:
        lines.append(f"Batches that are not independent runs ({', '.join(DEPENDENT)}): refused "
                     f"in {sum(r['refused'] for r in dependent)} of "
                     f"{sum(r['seeds'] for r in dependent)} audits, flagged in "
                     f"{sum(r['false_alarms'] for r in dependent)}.")
    lines += ["", "Cases:", ""]
    seen = set()
    for r in rows:
        if r["case"] not in seen:
            seen.add(r["case"])
            lines.append(f"- **{r['case']}**: {r['what']}.")
    if leaks:
        lines += ["", "## Rare leaks", "",
                  "Laplace at ε = 1 that releases its input in the clear in a fraction of runs "
                  "(`make_curator_laplace`, ε = ∞), ordinary audits at the default budget: here "
                  "every violation is a catch. A pass states its leak reach, \"an output seen "
                  "under one input only, in at least 1 of N runs, would have been caught with "
                  "probability ≥ 0.95\" (docs/theory.md §2.13); a pass whose N is at most the "
                  "leak's 1/r made a statement the leak proves false, and the confidence allows "
                  "that in at most 5% of audits. In the table above nothing leaks, so no pass "
                  "statement there can be false; its column shows the median N stated.", "",
                  *leak_table(leaks)]
    lines += ["", "The mechanisms are in `mechanisms_under_test/adversarial.py` (with their "
              "exact claims); the seeds of every false alarm are in `adversarial.json`.", ""]
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="directory for the report")
    p.add_argument("--seeds", type=int, default=MIN_SEEDS, help="seeds per row (≥ 200)")
    p.add_argument("--seconds", type=float, default=0.4, help="time budget per audit")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--jobs", type=int, default=2, help="audits run at once")
    p.add_argument("--only", nargs="*", help="case names to run (default: all)")
    p.add_argument("--rewrite-markdown", action="store_true",
                   help="only rewrite DIR/adversarial.md from DIR/adversarial.json")
    p.add_argument("--modes", nargs="*", choices=MODES, help="modes to run (default: all)")
    p.add_argument("--first-seed", type=int, default=0, help="seeds first..first+N−1")
    p.add_argument("--keep", type=Path,
                   help="an adversarial.json whose rows of the cases and modes not run now "
                        "are kept")
    p.add_argument("--leak-seeds", type=int, default=LEAK_SEEDS,
                   help="seeds per rare-leak row (0: keep them from --keep, or skip)")
    args = p.parse_args(argv)
    if args.seeds < MIN_SEEDS and not args.only:
        p.error(f"--seeds must be at least {MIN_SEEDS} for the full report")
    args.modes = args.modes or list(MODES)
    return args


def read_document(path: Path) -> dict:
    """An adversarial.json, with the infinities JSON spells as strings read back as floats."""
    return json.loads(path.read_text(encoding="utf-8"),
                      object_hook=lambda d: {k: float(v) if v in ("inf", "-inf", "nan") else v
                                             for k, v in d.items()})


def main(argv=None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.rewrite_markdown:   # the report again from its JSON, without rerunning an audit
        document = read_document(args.out / "adversarial.json")
        (args.out / "adversarial.md").write_text(
            markdown(document["rows"], document["follow_ups"], document["meta"],
                     document["leaks"]), encoding="utf-8")
        return 0
    promise = 1.0 - args.confidence
    started = time.perf_counter()
    first = range(args.first_seed, args.first_seed + args.seeds)
    rows = [run_row(case, mode, args, promise, first) for case in CASES
            if not args.only or case.name in args.only for mode in args.modes]
    if args.keep:  # rows of the other cases and modes from an earlier run, in CASES order
        ran = {(r["case"], r["mode"]) for r in rows}
        kept = [r for r in read_document(args.keep)["rows"]
                if (r["case"], r["mode"]) not in ran]
        order = [c.name for c in CASES]
        rows = sorted(kept + rows, key=lambda r: (order.index(r["case"]),
                                                  MODES.index(r["mode"])))
    leaks = [leak_row(rate, range(args.first_seed, args.first_seed + args.leak_seeds),
                      args.jobs) for rate in LEAK_RATES] if args.leak_seeds > 0 else []
    if not leaks and args.keep:
        leaks = read_document(args.keep).get("leaks", [])
    cases = {case.name: case for case in CASES}
    follow_ups = [dict(run_row(cases[r["case"]], r["mode"], args, promise,
                               range(first.stop, first.stop + FOLLOW_UP * args.seeds)),
                       follow_up=True)
                  for r in rows if r["ci_low"] > promise]
    meta = {**machine_meta(), "dpverify": dpverify.__version__,
            "numpy": package_version("numpy"), "seeds": args.seeds, "seconds": args.seconds,
            "confidence": args.confidence, "jobs": args.jobs,
            "total_seconds": time.perf_counter() - started, "load_average": load_average()}
    meta.setdefault("date", time.strftime("%Y-%m-%d"))
    if args.keep:
        meta["kept"] = kept_rows_in_words(kept)
        meta["kept_date"] = read_document(args.keep)["meta"]["date"]
    write_json(args.out / "adversarial.json",
               {"rows": rows, "follow_ups": follow_ups, "leaks": leaks, "meta": meta})
    (args.out / "adversarial.md").write_text(markdown(rows, follow_ups, meta, leaks),
                                             encoding="utf-8")
    broken = [r for r in follow_ups if r["ci_low"] > promise]
    for r in broken:
        print(f"BROKEN PROMISE: {r['case']} ({r['mode']}): {r['false_alarms']}/{r['seeds']}",
              file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
