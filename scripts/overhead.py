"""Overhead of the dpverify engine over plain numpy sampling: `dpverify.audit(make_laplace(1.0),
samples=N)` at n_jobs 1 and 2, cold and warm, each beside numpy drawing as many values right
after it, against the target ratio 1.5 (reported, not asserted; how to read it: docs/results.md,
"Overhead, throughput and memory"). Writes DIR/overhead.json and DIR/overhead.md.

Usage: python scripts/overhead.py --out DIR [--samples N]    (default N = 10**7)
       python scripts/overhead.py --out DIR --render-only    (overhead.md from overhead.json)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from _common import machine_line, numpy_laplace_seconds, read_json, table, write_json


import dpverify
from _machine import load_average, machine_meta
from mechanisms_under_test.basic import make_laplace

TARGET_RATIO = 1.5
NUMPY_CHUNK = 1 << 20  # numpy_laplace_seconds' chunk
JOBS = (1, 2)


def timed_audit(mech, samples: int, n_jobs: int):
    """The audit's result and its wall-clock seconds."""
    started = time.perf_counter()
    res = dpverify.audit(mech, samples=samples, n_jobs=n_jobs)
    return res, time.perf_counter() - started


def measure(n_jobs: int, samples: int, log) -> dict:
    """A cold and a warm audit at `n_jobs`, each followed by numpy drawing as many values; the
    reference is the mean of the two numpy timings."""
    mech = make_laplace(1.0)
    cold, cold_s = timed_audit(mech, samples, n_jobs)
    log(f"  n_jobs={n_jobs} cold audit: {cold_s:.2f} s, {cold.samples:,} runs, "
        f"verdict {cold.verdict}, eps >= {cold.epsilon_lower_bound:.4g}")
    np_after_cold = numpy_laplace_seconds(cold.samples)
    warm, warm_s = timed_audit(mech, samples, n_jobs)
    np_after_warm = numpy_laplace_seconds(warm.samples)
    log(f"  n_jobs={n_jobs} warm audit: {warm_s:.2f} s; numpy {np_after_cold:.3f} s after "
        f"cold, {np_after_warm:.3f} s after warm")
    if warm.samples != cold.samples:  # same seed and budget: should never differ
        log(f"  WARNING: cold and warm audits made different numbers of runs "
            f"({cold.samples} vs {warm.samples})")
    numpy_s = (np_after_cold + np_after_warm) / 2
    return {
        "n_jobs": n_jobs,
        "cold_seconds": cold_s,
        "warm_seconds": warm_s,
        "cold_engine_seconds": cold.seconds,  # AuditResult.seconds, as the engine reports it
        "warm_engine_seconds": warm.seconds,
        "runs": int(cold.samples),
        "runs_warm": int(warm.samples),
        "samples_per_side": int(cold.samples_per_side),
        "stages": len(cold.stages),
        "verdict": cold.verdict,
        "epsilon_lower_bound": float(cold.epsilon_lower_bound),
        "numpy_seconds": numpy_s,
        "numpy_seconds_after_cold": np_after_cold,
        "numpy_seconds_after_warm": np_after_warm,
        "ratio_cold": cold_s / numpy_s,
        "ratio_warm": warm_s / numpy_s,
        "target_holds_cold": cold_s / numpy_s <= TARGET_RATIO,
        "target_holds_warm": warm_s / numpy_s <= TARGET_RATIO,
    }


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def write_markdown(path: Path, rows: list[dict], meta: dict, target: dict) -> None:
    """overhead.md from the JSON's rows, meta and target."""
    lines = [
        "# dpverify engine overhead", "",
        f"`dpverify.audit(make_laplace(1.0), samples={meta['samples']:,}, n_jobs=…)` (claimed "
        "ε = 1.0 is exact, so every stage runs) against plain single-threaded numpy drawing the "
        "same number of values (`data + rng.laplace(0, 1, size)`, chunks of 2^20), in one "
        "process; more in [docs/scaling.md](../docs/scaling.md#throughput-and-overhead).", "",
        machine_line(meta).rstrip(".") + f", joblib {meta['joblib']}.", "",
        *table(["n_jobs", "cold s", "warm s", "runs", "numpy s", "ratio cold", "ratio warm"],
               [[r["n_jobs"], f"{r['cold_seconds']:.3f}", f"{r['warm_seconds']:.3f}",
                 f"{r['runs']:,}", f"{r['numpy_seconds']:.3f}", f"{r['ratio_cold']:.2f}",
                 f"{r['ratio_warm']:.2f}"] for r in rows], align="rrrrrrr"), "",
        "*Cold*: the first audit with that n_jobs in this process (imports and worker start-up "
        "included); *warm*: the same audit right after. *Runs*: `result.samples`, every "
        "mechanism run. *numpy s*: the mean of the numpy timings after the cold and after the "
        "warm audit (both in the JSON). Ratio = audit seconds / numpy seconds; compare ratios "
        "within one run, not seconds across runs (the machine may be shared).", "",
        f"Target: ratio ≤ {TARGET_RATIO:g}."]
    for r in rows:
        lines.append(f"- n_jobs = {r['n_jobs']}: cold {r['ratio_cold']:.2f} "
                     f"({'holds' if r['target_holds_cold'] else 'misses'}), warm "
                     f"{r['ratio_warm']:.2f} ({'holds' if r['target_holds_warm'] else 'misses'})")
    lines += ["", f"Target holds for every row, cold and warm: {yes_no(target['holds_all'])} "
                  f"(warm only: {yes_no(target['holds_warm'])}). "
                  f"Total wall time {meta['total_seconds']:.1f} s."]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="directory for overhead.json/.md")
    p.add_argument("--samples", type=int, default=10 ** 7,
                   help="certifying samples per input at the last stage (default 10**7)")
    p.add_argument("--render-only", action="store_true",
                   help="only rewrite DIR/overhead.md from DIR/overhead.json")
    args = p.parse_args(argv)
    if args.samples < 100:
        p.error("--samples must be at least 100")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    json_path, md_path = args.out / "overhead.json", args.out / "overhead.md"
    if args.render_only:
        doc = read_json(json_path)
        write_markdown(md_path, doc["rows"], doc["meta"], doc["target"])
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    log = lambda msg: print(msg, flush=True)  # noqa: E731
    meta = {**machine_meta(), "samples": args.samples,
            "mechanism": "make_laplace(1.0), claimed epsilon 1.0", "numpy_chunk": NUMPY_CHUNK,
            "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS")}
    log(f"overhead: samples={args.samples:,}, n_jobs in {JOBS}, {meta['cpu_count']} CPUs, "
        f"load {meta['load_average_at_start']}")
    started = time.perf_counter()
    rows = []
    for n_jobs in JOBS:
        rows.append(measure(n_jobs, args.samples, log))
        log(f"n_jobs={n_jobs}: runs {rows[-1]['runs']:,}, ratio cold "
            f"{rows[-1]['ratio_cold']:.2f}, warm {rows[-1]['ratio_warm']:.2f}")
    meta["total_seconds"] = time.perf_counter() - started
    meta["load_average_at_end"] = load_average()
    target = {"ratio_max": TARGET_RATIO,
              "holds_all": all(r["target_holds_cold"] and r["target_holds_warm"] for r in rows),
              "holds_warm": all(r["target_holds_warm"] for r in rows)}
    write_json(json_path, {"rows": rows, "meta": meta, "target": target})
    write_markdown(md_path, rows, meta, target)
    log(f"target ratio <= {TARGET_RATIO:g}: all {yes_no(target['holds_all'])}, "
        f"warm {yes_no(target['holds_warm'])}; wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
