"""Benchmark dpverify on the mechanism zoo: one default audit per entry, verdicts against ground truth.

What is measured
    Every mechanism in ``mechanisms_under_test.ZOO`` (or the ``--only`` subset) is audited with
    ``dpverify.audit`` at its default budget (2^22 certifying samples per input at the last stage
    for batched mechanisms) and the given confidence (0.95 by default). For each entry the script
    records the verdict, the certified lower bound on ε, the number of mechanism runs (in total
    and on the busiest input) and the wall time, next to the entry's claimed ε, its true ε
    (``TRUE_EPSILON``) and the verdict it should get ("pass" if it is in ``CORRECT``, else
    "violation").

Why
    Two properties are checked: soundness — no certified lower bound may exceed the true ε — and
    power — every broken entry should be flagged at the default budget and every correct one
    should pass. A pass only means "no violation found at this budget", never "proven private".
    The seconds are there to compare entries *within one run*: the machine may be shared and
    noisy, so absolute timings from different runs or machines are not comparable and nothing
    here asserts on time.

Output
    DIR/benchmark.json  {"rows": [...], "meta": {...}} — strict JSON, infinite floats as the
                        strings "inf" / "-inf"; rewritten after every entry so an interrupted run
                        leaves its finished rows behind (meta.complete tells which).
    DIR/benchmark.md    an intro, one table row per mechanism and a one-line conclusion.

Exit code: 1 if any verdict differs from the expected one or any bound exceeds the true ε
(an audit that raises counts as a mismatch), else 0.

Usage:
    python scripts/benchmark.py --out DIR [--only NAME ...] [--seed S] [--jobs J] [--confidence C]
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import dpverify
from dpverify.result import jsonable
from _machine import cpu_model, package_version
from mechanisms_under_test import CORRECT, TRUE_EPSILON, ZOO


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------



def fmt_eps(x) -> str:
    """An ε for the Markdown table: 4 significant digits, ∞ for infinity, — for no bound."""
    if x is None:
        return "—"
    x = float(x)
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "—"
    return f"{x:.4g}"


def fmt_int(n) -> str:
    return "—" if n is None else f"{int(n):,}"






def machine_info() -> dict:
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        load = None
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "numpy": np.__version__,
        "scipy": package_version("scipy"),
        "joblib": package_version("joblib"),
        "dpverify": getattr(dpverify, "__version__", None),
        "load_average_at_start": load,
    }


def bound_exceeds_truth(lower: float, true_eps: float) -> bool:
    """Soundness failure: the certified lower bound is strictly above the true ε."""
    if math.isinf(true_eps) and true_eps > 0:
        return False
    return lower > true_eps


# ---------------------------------------------------------------------------------------------
# one audit
# ---------------------------------------------------------------------------------------------

def audit_one(name: str, seed: int, jobs: int, confidence: float) -> dict:
    mech = ZOO[name]
    true_eps = float(TRUE_EPSILON[name])
    expected = "pass" if name in CORRECT else "violation"
    row = {
        "mechanism": name,
        "claimed_epsilon": float(mech.epsilon),
        "true_epsilon": true_eps,
        "verdict": None,
        "epsilon_lower_bound": None,
        "samples": None,
        "samples_per_side": None,
        "seconds": None,
        "expected_verdict": expected,
        "attack": None,
    }
    started = time.perf_counter()
    try:
        res = dpverify.audit(mech, seed=seed, n_jobs=jobs, confidence=confidence)
    except Exception as exc:  # record and go on: one broken entry must not hide the others
        row.update(verdict="error", seconds=time.perf_counter() - started,
                   error=f"{type(exc).__name__}: {exc}")
        traceback.print_exc(file=sys.stderr)
    else:
        row.update(
            verdict=res.verdict,
            epsilon_lower_bound=float(res.epsilon_lower_bound),
            samples=int(res.samples),
            samples_per_side=int(res.samples_per_side),
            seconds=float(res.seconds),
            attack=res.witness.attack if res.witness is not None else None,
            event=res.witness.event if res.witness is not None else None,
            claimed_delta=float(res.claimed_delta),
        )
    lower = row["epsilon_lower_bound"]
    row["verdict_matches"] = row["verdict"] == expected
    row["bound_exceeds_true_epsilon"] = (lower is not None
                                         and bound_exceeds_truth(lower, true_eps))
    return row


def row_line(row: dict) -> str:
    flags = []
    if not row["verdict_matches"]:
        flags.append(f"MISMATCH (expected {row['expected_verdict']})")
    if row["bound_exceeds_true_epsilon"]:
        flags.append("BOUND ABOVE TRUE EPSILON")
    if row.get("error"):
        flags.append(row["error"])
    secs = row["seconds"]
    return (f"{row['mechanism']:<20} claim {fmt_eps(row['claimed_epsilon']):>6}  "
            f"true {fmt_eps(row['true_epsilon']):>7}  {str(row['verdict']):<9}  "
            f"eps >= {fmt_eps(row['epsilon_lower_bound']):>7}  "
            f"per side {fmt_int(row['samples_per_side']):>12}  runs {fmt_int(row['samples']):>12}  "
            f"{(secs or 0.0):8.2f} s" + ("  " + "; ".join(flags) if flags else ""))


# ---------------------------------------------------------------------------------------------
# reports
# ---------------------------------------------------------------------------------------------

def write_json(path: Path, rows: list[dict], meta: dict) -> None:
    text = json.dumps(jsonable({"rows": rows, "meta": meta}), indent=2, ensure_ascii=False,
                      allow_nan=False)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(path)


def outcome(rows: list[dict]) -> tuple[bool, bool]:
    all_match = all(r["verdict_matches"] for r in rows)
    sound = not any(r["bound_exceeds_true_epsilon"] for r in rows)
    return all_match, sound


def write_markdown(path: Path, rows: list[dict], meta: dict) -> None:
    all_match, sound = outcome(rows)
    names = ", ".join(f"`{r['mechanism']}`" for r in rows)
    subset = "the `--only` subset" if meta.get("only") else "every mechanism of the zoo"
    lines = [
        "# dpverify zoo benchmark",
        "",
        f"`dpverify.audit` {meta['dpverify']} was run at its default budget on {subset} "
        f"({len(rows)}: {names}) with confidence {meta['confidence']:g}, seed {meta['seed']} "
        f"and n_jobs {meta['jobs']}, on {meta['date']}.",
        "",
        f"Machine: {meta['platform']}, {meta['cpu_model']}, {meta['cpu_count']} logical CPUs "
        f"(load average at start {meta['load_average_at_start']}); Python {meta['python']}, "
        f"numpy {meta['numpy']}, scipy {meta['scipy']}, joblib {meta['joblib']}.",
        "",
        "A *violation* means that, with probability at least the confidence, the mechanism does "
        "not meet its claim; the certified ε ≥ column is that lower bound. A *pass* means only "
        "\"no violation found at this budget\", not a proof of privacy. *Expected* is `pass` "
        "for the entries whose claim holds and `violation` for the broken ones; a sound verifier "
        "never certifies a bound above the true ε. Seconds are wall time on a possibly shared "
        "machine: compare them within this run only.",
        "",
        "| mechanism | claim ε | true ε | verdict | expected | certified ε ≥ | samples per side "
        "| total runs | seconds |",
        "|---|--:|--:|---|---|--:|--:|--:|--:|",
    ]
    for r in rows:
        verdict = str(r["verdict"])
        if not r["verdict_matches"]:
            verdict = f"**{verdict}** ✗"
        bound = fmt_eps(r["epsilon_lower_bound"])
        if r["bound_exceeds_true_epsilon"]:
            bound = f"**{bound}** ✗"
        secs = "—" if r["seconds"] is None else f"{r['seconds']:.2f}"
        lines.append(
            f"| {r['mechanism']} | {fmt_eps(r['claimed_epsilon'])} | {fmt_eps(r['true_epsilon'])} "
            f"| {verdict} | {r['expected_verdict']} | {bound} | {fmt_int(r['samples_per_side'])} "
            f"| {fmt_int(r['samples'])} | {secs} |")
    errors = [r for r in rows if r.get("error")]
    if errors:
        lines += ["", "Errors:", ""]
        lines += [f"- `{r['mechanism']}`: {r['error']}" for r in errors]
    lines += [
        "",
        f"Total wall time {meta['total_seconds']:.1f} s. "
        f"Every verdict matched the expectation: {'yes' if all_match else 'no'}. "
        f"No bound exceeded the true ε: {'yes' if sound else 'no'}.",
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------

def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path, help="directory for benchmark.json/.md")
    p.add_argument("--only", nargs="+", metavar="NAME",
                   help=f"audit only these zoo entries (known: {', '.join(ZOO)})")
    p.add_argument("--seed", type=int, default=0, help="audit seed (default 0)")
    p.add_argument("--jobs", type=int, default=-1, help="n_jobs for dpverify.audit (default -1)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence (default 0.95)")
    args = p.parse_args(argv)
    if args.only:
        unknown = [n for n in args.only if n not in ZOO]
        if unknown:
            p.error(f"unknown mechanism(s) {', '.join(unknown)}; known: {', '.join(ZOO)}")
    if not 0.0 < args.confidence < 1.0:
        p.error("--confidence must be in (0, 1)")
    if args.seed < 0:
        p.error("--seed must be non-negative")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    names = list(dict.fromkeys(args.only)) if args.only else list(ZOO)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = args.out / "benchmark.json", args.out / "benchmark.md"

    meta = machine_info()
    meta.update(
        date=_dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds"),
        seed=args.seed, confidence=args.confidence, jobs=args.jobs,
        only=names if args.only else None, samples="default (2^22 per input at the last stage "
                                                   "for batched mechanisms)",
        total_seconds=0.0, complete=False,
    )
    print(f"dpverify {meta['dpverify']} benchmark: {len(names)} mechanism(s), confidence "
          f"{args.confidence:g}, seed {args.seed}, n_jobs {args.jobs}, "
          f"{meta['cpu_count']} CPUs", flush=True)

    rows: list[dict] = []
    started = time.perf_counter()
    for name in names:
        row = audit_one(name, args.seed, args.jobs, args.confidence)
        rows.append(row)
        print(row_line(row), flush=True)
        meta["total_seconds"] = time.perf_counter() - started
        write_json(json_path, rows, meta)  # partial results survive an interrupted run

    meta["total_seconds"] = time.perf_counter() - started
    meta["complete"] = True
    try:
        meta["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        meta["load_average_at_end"] = None
    write_json(json_path, rows, meta)
    write_markdown(md_path, rows, meta)

    all_match, sound = outcome(rows)
    print(f"total {meta['total_seconds']:.1f} s; all verdicts as expected: "
          f"{'yes' if all_match else 'no'}; no bound above true epsilon: "
          f"{'yes' if sound else 'no'}", flush=True)
    print(f"wrote {json_path} and {md_path}", flush=True)
    return 0 if (all_match and sound) else 1


if __name__ == "__main__":
    sys.exit(main())
