"""Throughput: mechanism runs per second of an audit, against plain numpy, locally and on dask.

What is measured, all in one run (machines are shared and noisy: compare ratios, not seconds
across runs): a scalar library mechanism (diffprivlib's Laplace, one Python call a run) audited on
1 and 2 worker processes against a bare loop over the library's call; and one batched Laplace audit (claim ε = 1 exact, so every stage runs) at N
certifying samples per input with n_jobs = 1 and 2 (default threading backend), and on a dask
`LocalCluster` with two worker processes (backend="dask"); and plain single-threaded numpy
drawing the same number of values. Also checked: the dask run gives the identical result.

Usage: python scripts/throughput.py --out DIR [--samples N]   (default N = 2**23)
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root: mechanisms_under_test is not installed

import numpy as np

import dpverify
from dpverify.result import jsonable
from dpverify.sampling import Sampler
from _machine import cpu_model, package_version
from mechanisms_under_test.basic import make_laplace


def numpy_seconds(total: int) -> float:
    rng = np.random.default_rng(12345)
    started = time.perf_counter()
    left = total
    while left > 0:
        size = min(left, 1 << 20)
        0.0 + rng.laplace(0.0, 1.0, size)
        left -= size
    return time.perf_counter() - started


def timed(**kwargs):
    started = time.perf_counter()
    result = dpverify.audit(make_laplace(1.0), **kwargs)
    return result, time.perf_counter() - started


SCALAR_SAMPLES = 1 << 17  # the scalar default: certifying samples per input at the last stage


def bare_loop_rate(call, runs: int) -> float:
    """Calls per second of a plain Python loop over `call()` on one thread."""
    started = time.perf_counter()
    for _ in range(runs):
        call()
    return runs / (time.perf_counter() - started)


@contextlib.contextmanager
def time_in_sampling():
    """Measure, while the block runs, the wall seconds spent inside `Sampler.run` and its
    chunks' summed drawing-and-encoding seconds (they exceed the wall time when chunks run
    side by side)."""
    spent = {"wall": 0.0, "chunks": 0.0}
    real = Sampler.run

    def run(self, *args, **kwargs):
        started = time.perf_counter()
        out = real(self, *args, **kwargs)
        spent["wall"] += time.perf_counter() - started
        spent["chunks"] += self.last_seconds.draw
        return out
    Sampler.run = run
    try:
        yield spent
    finally:
        Sampler.run = real


def scalar_rows() -> tuple[list[dict], dict]:
    """A scalar library mechanism (diffprivlib's Laplace through its adapter, one call a run):
    audit runs per second on 1 and 2 workers against a bare loop over the library's own call.
    The bare rate is measured before and after the audits and averaged (machines are noisy)."""
    from diffprivlib.mechanisms import Laplace
    from dpverify.libraries.diffprivlib import from_mechanism
    library = Laplace(epsilon=1.0, sensitivity=1.0)
    mech = from_mechanism(library)
    rng = np.random.default_rng(0)
    dpverify.audit(mech, samples=1 << 12, n_jobs=2)  # start the worker pool, import there
    before = bare_loop_rate(lambda: library.randomise(0.0), 200_000)
    wrapped = bare_loop_rate(lambda: mech.fn(0.0, rng), 200_000)
    audits, inside = {}, {}
    for jobs in (1, 2):
        with time_in_sampling() as inside[jobs]:
            started = time.perf_counter()
            result = dpverify.audit(mech, samples=SCALAR_SAMPLES, n_jobs=jobs, stop_early=False)
            audits[jobs] = (result, time.perf_counter() - started)
    bare = (before + bare_loop_rate(lambda: library.randomise(0.0), 200_000)) / 2
    rows = [{"setting": f"audit, n_jobs={jobs} (loky processes)", "seconds": seconds,
             "runs": result.samples, "runs_per_second": result.samples / seconds,
             "ratio_to_bare": result.samples / seconds / bare}
            for jobs, (result, seconds) in audits.items()]
    rows.append({"setting": "bare loop of `Laplace.randomise(0.0)`, 1 thread",
                 "runs_per_second": bare, "ratio_to_bare": 1.0})
    rows.append({"setting": "bare loop of the adapter's call (seeds from `rng`), 1 thread",
                 "runs_per_second": wrapped, "ratio_to_bare": wrapped / bare})
    same = audits[1][0].as_dict() | {"seconds": 0} == audits[2][0].as_dict() | {"seconds": 0}
    result, seconds = audits[2]
    return rows, {"scalar_samples": SCALAR_SAMPLES, "scalar_mechanism": mech.name,
                  "scalar_2_workers_sampling_share": inside[2]["wall"] / seconds,
                  "scalar_2_workers_parallelism": inside[2]["chunks"] / inside[2]["wall"],
                  "scalar_worker_microseconds_per_run": 1e6 * inside[2]["chunks"] / result.samples,
                  "scalar_bare_microseconds_per_call": 1e6 / wrapped,
                  "scalar_result_identical_across_n_jobs": same,
                  "diffprivlib": package_version("diffprivlib")}


def scalar_markdown(rows: list[dict], meta: dict) -> list[str]:
    """The scalar section of throughput.md."""
    lines = ["", "## Scalar mechanisms: a library called one value at a time", "",
             f"`{meta['scalar_mechanism']}` (diffprivlib {meta['diffprivlib']}) through "
             "`dpverify.libraries.diffprivlib.from_mechanism`: one Python call a run. A "
             f"measurement run (every stage runs) at {meta['scalar_samples']:,} certifying "
             "samples per input. Ratio = runs per second / the bare loop's (higher is better; "
             "on 2 workers the ceiling is 2).", "",
             "| setting | seconds | mechanism runs | runs per second | ratio to bare loop |",
             "|---|--:|--:|--:|--:|"]
    for r in rows:
        seconds = f"{r['seconds']:.2f}" if "seconds" in r else "—"
        runs = f"{r['runs']:,}" if "runs" in r else "—"
        lines.append(f"| {r['setting']} | {seconds} | {runs} | {r['runs_per_second']:,.0f} "
                     f"| {r['ratio_to_bare']:.2f} |")
    audit2 = next(r for r in rows if r["setting"].startswith("audit, n_jobs=2"))
    wrapped = rows[-1]["runs_per_second"]
    lines += ["", f"Against the adapter's own call in a bare loop (the seeded generator is faster "
              f"than diffprivlib's default, which reads the operating system for every draw), "
              f"the 2-worker audit runs at {audit2['runs_per_second'] / wrapped:.2f}× the loop. "
              f"Where the rest goes, measured in that audit: "
              f"{meta['scalar_2_workers_sampling_share']:.0%} of its wall time is spent "
              "sampling (the search, learning and certifying arithmetic take the rest); while "
              f"sampling, the chunks run {meta['scalar_2_workers_parallelism']:.2f}× in "
              "parallel; and a worker draws and encodes a run in "
              f"{meta['scalar_worker_microseconds_per_run']:.1f} µs against the bare loop's "
              f"{meta['scalar_bare_microseconds_per_call']:.1f} µs a call of the bare loop, "
              "which encodes nothing."]
    lines += ["", "The audit's result on 2 workers is "
              f"{'identical' if meta['scalar_result_identical_across_n_jobs'] else 'DIFFERENT'} "
              "to its result on 1 (same seed; every field but the wall time)."]
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--samples", type=int, default=1 << 23)
    args = parser.parse_args(argv)
    n = args.samples
    timed(samples=1 << 12, n_jobs=1)  # imports and first-use costs, not throughput
    rows, results = [], {}
    for jobs in (1, 2):
        result, seconds = timed(samples=n, n_jobs=jobs)
        results[f"local n_jobs={jobs}"] = result
        rows.append({"setting": f"local, n_jobs={jobs} (threads)", "seconds": seconds,
                     "runs": result.samples})
    try:
        from distributed import Client, LocalCluster
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            timed(samples=1 << 12, backend="dask")  # ship the function to the workers once
            result, seconds = timed(samples=n, backend="dask")
        results["dask"] = result
        rows.append({"setting": "dask LocalCluster, 2 worker processes", "seconds": seconds,
                     "runs": result.samples})
    except Exception as exc:  # report, do not hide, a missing or broken cluster
        rows.append({"setting": f"dask LocalCluster: not available ({type(exc).__name__}: "
                                f"{exc})", "seconds": None, "runs": None})
    base = numpy_seconds(rows[0]["runs"])
    rows.append({"setting": "plain numpy, 1 thread", "seconds": base, "runs": rows[0]["runs"]})
    for r in rows:
        if r["seconds"]:
            r["runs_per_second"] = r["runs"] / r["seconds"]
            r["ratio_to_numpy"] = r["seconds"] / (base * r["runs"] / rows[0]["runs"])
    same = None
    if "dask" in results:
        a = results["dask"].as_dict()
        b = results["local n_jobs=1"].as_dict()
        a.pop("seconds"), b.pop("seconds")
        same = a == b
    args.out.mkdir(parents=True, exist_ok=True)
    scalar, scalar_meta = scalar_rows()
    meta = {"samples": n, "cpu_count": os.cpu_count(), "cpu_model": cpu_model(),
            "numpy": np.__version__, "dask": package_version("dask"),
            "dask_result_identical_to_local": same, **scalar_meta}
    (args.out / "throughput.json").write_text(json.dumps(jsonable(
        {"rows": rows, "scalar_rows": scalar, "meta": meta}), indent=2, allow_nan=False))
    lines = ["# Throughput", "",
             f"Batched Laplace audit, claim ε = 1 (exact: every stage runs), {n:,} certifying "
             f"samples per input at the last stage, on {os.cpu_count()} CPUs ({cpu_model()}). "
             "Ratio = audit seconds / seconds plain numpy needs to draw the same number of "
             "values on one thread (lower is better).", "",
             "| setting | seconds | mechanism runs | runs per second | ratio to numpy |",
             "|---|--:|--:|--:|--:|"]
    for r in rows:
        if r["seconds"] is None:
            lines.append(f"| {r['setting']} | — | — | — | — |")
            continue
        lines.append(f"| {r['setting']} | {r['seconds']:.2f} | {r['runs']:,} | "
                     f"{r['runs_per_second']:,.0f} | {r['ratio_to_numpy']:.2f} |")
    if same is not None:
        lines += ["", f"The dask run's result is {'identical' if same else 'DIFFERENT'} to the "
                      "local run's (same seed; every field but the wall time)."]
    lines += scalar_markdown(scalar, scalar_meta)
    (args.out / "throughput.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
