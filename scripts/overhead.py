"""Overhead of the dpverify engine over the mechanism's own sampling: for each of six mechanisms,
a default `dpverify.audit(mech, n_jobs=1)` against a bare loop that calls the same mechanism
function for as many runs (`result.samples`), in chunks of the engine's batched chunk size,
alternating over the inputs of its pairs, on one thread, right after the audit in the same
process. The target is a ratio ≤ 1.5 (reported, not asserted; how to read it: docs/results.md,
"Overhead, throughput and memory"). Writes DIR/overhead.json and DIR/overhead.md.

Usage: python scripts/overhead.py --out DIR [--only NAME ...]
       python scripts/overhead.py --out DIR --render-only    (overhead.md from overhead.json)
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _common import machine_line, read_json, table, write_json  # puts the repository on the path

import numpy as np  # noqa: E402

import dpverify  # noqa: E402
from dpverify.mechanism import as_mechanism  # noqa: E402
from dpverify.sampling.sampler import BATCHED_CHUNK_SIZE  # noqa: E402
from _machine import machine_meta  # noqa: E402
from mechanisms_under_test import ZOO  # noqa: E402
from mechanisms_under_test.basic import make_gaussian, make_laplace  # noqa: E402
from mechanisms_under_test.dpsniper import DPSNIPER  # noqa: E402

TARGET_RATIO = 1.5
GAUSSIAN_DIMS, GAUSSIAN_RHO = 20, 0.125  # σ = 2 on a unit shift of one coordinate: ρ = 1/(2σ²)


def gaussian_20d():
    """A 20-dimensional Gaussian under a ρ-zCDP claim: N(D, σ² I) with σ = 2 and D, D′ one
    unit apart in one coordinate, exactly ρ = Δ²/(2σ²) = 0.125-zCDP (docs/theory.md §8)."""
    sigma = 2.0
    unit = np.zeros(GAUSSIAN_DIMS)
    unit[0] = 1.0

    @dpverify.mechanism(zcdp=GAUSSIAN_RHO, pairs=[(np.zeros(GAUSSIAN_DIMS), unit)],
                        name="gaussian_20d")
    def gaussian(data, rng, size):
        return np.asarray(data) + rng.normal(0.0, sigma, (size, GAUSSIAN_DIMS))
    return gaussian


MECHANISMS = {
    "laplace": lambda: make_laplace(1.0),
    "gaussian": lambda: make_gaussian(0.5, 1e-5),
    "svt1": lambda: ZOO["svt1"],
    "rnm1": lambda: ZOO["rnm1"],
    "rappor": lambda: DPSNIPER["rappor"],
    "gaussian_20d_zcdp": gaussian_20d,
}


def bare_seconds(mech, runs: int, seed: int = 12345) -> float:
    """Seconds the mechanism's own function takes for `runs` runs, BATCHED_CHUNK_SIZE a call,
    the calls alternating over every input of its pairs, touching each chunk's first output."""
    fn = as_mechanism(mech).fn
    inputs = [d for pair in mech.pairs for d in pair]
    rng = np.random.default_rng(seed)
    started, done, i = time.perf_counter(), 0, 0
    while done < runs:
        size = min(BATCHED_CHUNK_SIZE, runs - done)
        out = fn(inputs[i % len(inputs)], rng, size)
        np.asarray(out[0])
        done, i = done + size, i + 1
    return time.perf_counter() - started


def measure(name: str, log) -> dict:
    """A default audit of mechanism `name` on one thread, then its bare loop for as many runs."""
    mech = MECHANISMS[name]()
    started = time.perf_counter()
    res = dpverify.audit(mech, n_jobs=1, progress=False)
    audit_s = time.perf_counter() - started
    bare_s = bare_seconds(mech, int(res.samples))
    ratio = audit_s / bare_s
    log(f"  {name}: {res.verdict}, {res.samples:,} runs, audit {audit_s:.2f} s, bare loop "
        f"{bare_s:.2f} s, ratio {ratio:.2f}")
    return {"mechanism": name, "verdict": res.verdict, "runs": int(res.samples),
            "audit_seconds": audit_s, "bare_seconds": bare_s, "ratio": ratio,
            "target_holds": ratio <= TARGET_RATIO}


def write_markdown(path: Path, rows: list[dict], meta: dict) -> None:
    """overhead.md from the JSON's rows and meta."""
    held = sum(r["target_holds"] for r in rows)
    lines = [
        "# dpverify engine overhead over the mechanism's own sampling", "",
        "Each mechanism's default audit (`dpverify.audit(mech, n_jobs=1)`) against a bare loop "
        "calling the same mechanism function for as many runs (`result.samples`), "
        f"{BATCHED_CHUNK_SIZE:,} runs a call, alternating over the inputs of its pairs, on one "
        "thread, right after the audit in one process (imports excluded: the script has "
        "imported dpverify and its dependencies before). More in "
        "[docs/scaling.md](../docs/scaling.md#throughput-and-overhead).", "",
        machine_line(meta), "",
        *table(["mechanism", "verdict", "runs", "audit s", "bare loop s", "ratio"],
               [[r["mechanism"], r["verdict"], f"{r['runs']:,}", f"{r['audit_seconds']:.2f}",
                 f"{r['bare_seconds']:.2f}", f"{r['ratio']:.2f}"] for r in rows],
               align="llrrrr"), "",
        "*Ratio*: audit seconds / bare-loop seconds; compare ratios within one run, not seconds "
        "across runs (the machine may be shared). Laplace claims its exact ε = 1, Gaussian "
        "(ε = 0.5, δ = 1e-5) its classic calibration, SVT1 and RNM1 the zoo's ε = 0.1, RAPPOR "
        "the DP-Sniper set's ε = 0.1 (its true ε is 0.40, so its audit is a violation, proved "
        "and then measured), and the 20-dimensional Gaussian ρ = 0.125-zCDP (σ = 2, a unit "
        "shift of one coordinate).", "",
        f"Target: ratio ≤ {TARGET_RATIO:g}; it holds for {held} of {len(rows)}. "
        f"Total wall time {meta['total_seconds']:.0f} s."]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="directory for overhead.json/.md")
    p.add_argument("--only", nargs="+", choices=sorted(MECHANISMS), help="these mechanisms only")
    p.add_argument("--render-only", action="store_true",
                   help="only rewrite DIR/overhead.md from DIR/overhead.json")
    args = p.parse_args(argv)
    json_path, md_path = args.out / "overhead.json", args.out / "overhead.md"
    if args.render_only:
        doc = read_json(json_path)
        write_markdown(md_path, doc["rows"], doc["meta"])
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    log = lambda msg: print(msg, flush=True)  # noqa: E731
    meta = machine_meta()
    dpverify.audit(make_laplace(1.0), samples=1 << 10, n_jobs=1, progress=False)  # warm up
    started = time.perf_counter()
    rows = [measure(name, log) for name in (args.only or MECHANISMS)]
    meta["total_seconds"] = time.perf_counter() - started
    write_json(json_path, {"meta": meta, "rows": rows})
    write_markdown(md_path, rows, meta)
    log(f"wrote {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
