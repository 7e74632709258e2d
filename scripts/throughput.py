"""Throughput: mechanism runs per second of an audit, against plain numpy, locally and on dask.

What is measured, all in one run (machines are shared and noisy: compare ratios, not seconds
across runs): a scalar library mechanism (diffprivlib's Laplace, one Python call a run) audited on
1 and 2 worker processes against a bare loop over the library's call; one representative
mechanism of every library adapter (OpenDP, diffprivlib, python-dp, PipelineDP, Tumult Core)
audited on 2 workers against a bare loop of the library's own call (and that loop run in two
worker processes at once, the machine's own ceiling for two workers); and one batched Laplace
audit (claim ε = 1 exact, so every stage runs) at N certifying samples per input with n_jobs =
1 and 2 (default threading backend), and on a dask `LocalCluster` with two worker processes
(backend="dask"); and plain single-threaded numpy drawing the same number of values. Also
checked: the dask run gives the identical result.

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
import _common  # noqa: E402,F401  (puts the repository on the path)

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


def _bare_loop_in_a_worker(make_call, runs: int) -> float:
    """Calls per second of a bare loop run in a worker process; `make_call()` builds the call
    there (library objects need not pickle)."""
    call = make_call()
    bare_loop_rate(call, max(runs // 10, 1))  # imports and first-use costs
    return bare_loop_rate(call, runs)


def machine_slowdown(make_call, runs: int, repeats: int = 3) -> float:
    """How much two processes running the same bare loop slow each other on this machine:
    calls per second of the loop alone in a worker process over its mean rate while a second
    worker runs it too (they share caches and memory bandwidth, and two vCPUs may be one
    core's two hyperthreads). 1 means two workers can reach twice one loop's rate. The median
    of `repeats` alternations of the two, as single loops of a second or so vary by ±10%."""
    from joblib import Parallel, delayed
    ratios = []
    with Parallel(n_jobs=2, backend="loky") as workers:  # one task runs in a worker too
        for _ in range(repeats):
            [alone] = workers(delayed(_bare_loop_in_a_worker)(make_call, runs) for _ in [0])
            both = workers(delayed(_bare_loop_in_a_worker)(make_call, runs) for _ in [0, 1])
            ratios.append(alone / float(np.mean(both)))
    return float(np.median(ratios))


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


def _diffprivlib_laplace_call():
    """The scalar section's bare call, built where it runs."""
    from diffprivlib.mechanisms import Laplace
    library = Laplace(epsilon=1.0, sensitivity=1.0)
    return lambda: library.randomise(0.0)


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
    slowdown = machine_slowdown(_diffprivlib_laplace_call, 200_000)
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
                  "scalar_machine_slowdown": slowdown,
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


# each adapter's measurement run lasts about ADAPTER_SECONDS on 2 workers: a run of every
# stage at S certifying runs per input draws about 5.4 S runs in all
ADAPTER_SECONDS = 10.0
TARGET = 0.9 * 2  # the bar: 0.9 x 2 x the bare call rate, on 2 cores


def _opendp_laplace():
    import opendp.prelude as dp
    from dpverify.libraries.opendp import from_measurement
    dp.enable_features("contrib")
    meas = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                             scale=1.0)
    return "opendp", "`make_laplace(scale=1)(0.0)`", from_measurement(meas), lambda: meas(0.0)


def _pydp_laplace():
    from pydp.algorithms.numerical_mechanisms import LaplaceMechanism
    from dpverify.libraries.pydp import from_mechanism
    library = LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    return ("python-dp", "`LaplaceMechanism(epsilon=1).add_noise(0.0)`",
            from_mechanism(library), lambda: library.add_noise(0.0))


def _pipelinedp_count():
    import pipeline_dp
    from dpverify.libraries.pipelinedp import from_aggregation
    params = pipeline_dp.AggregateParams(metrics=[pipeline_dp.Metrics.COUNT],
                                         max_partitions_contributed=1,
                                         max_contributions_per_partition=1)
    rows = [(1, "a", None), (2, "a", None)]
    extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                            partition_extractor=lambda r: r[1],
                                            value_extractor=lambda r: r[2])

    def bare():  # what a user's code does for one release: a fresh accountant and engine
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=0.0)
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
        result = engine.aggregate(rows, params, extractors, public_partitions=["a", "b"])
        accountant.compute_budgets()
        return list(result)
    mech = from_aggregation(params, rows, accountant="naive", epsilon=1.0,
                            public_partitions=["a", "b"])
    return "pipeline-dp", "COUNT `DPEngine.aggregate` (2 rows, public [a, b])", mech, bare


def _tumult_geometric():
    from tmlt.core.measurements.noise_mechanisms import AddGeometricNoise
    from dpverify.libraries.tumult import from_measurement
    meas = AddGeometricNoise(alpha=1)
    return "tmlt.core", "`AddGeometricNoise(alpha=1)(0)`", from_measurement(meas), lambda: meas(0)


# one representative mechanism per adapter: (distribution, the bare call shown, the adapted
# mechanism, the bare call); diffprivlib's row is the scalar section's 2-worker audit
# (`scalar_adapter_row`), not a second measurement of the same mechanism
ADAPTERS = [_opendp_laplace, _pydp_laplace, _pipelinedp_count,
            _tumult_geometric]


def adapter_row(build) -> dict:
    """One adapter's audit rate on 2 workers (a measurement run: every stage runs) against a
    bare single-thread loop of the library's own call, measured before and after the audit
    and averaged; the ratio's bar is TARGET."""
    try:
        distribution, call, mech, bare_call = build()
    except Exception as exc:  # a library not installed: say so in the report
        return {"adapter": build.__name__.strip("_"), "error": f"{type(exc).__name__}: {exc}"}
    dpverify.audit(mech, samples=1 << 8, n_jobs=2, seed=1)  # start workers, import there
    runs = max(200, int(bare_loop_rate(bare_call, 200)))  # about a second of calls
    before = bare_loop_rate(bare_call, runs)
    samples = 1 << int(np.clip(round(np.log2(2 * ADAPTER_SECONDS * before / 5.4)), 10, 20))
    with time_in_sampling() as inside:
        started = time.perf_counter()
        result = dpverify.audit(mech, samples=samples, n_jobs=2, stop_early=False, seed=0)
        seconds = time.perf_counter() - started
    bare = (before + bare_loop_rate(bare_call, runs)) / 2
    slowdown = machine_slowdown(lambda: build()[3], runs)
    rate = result.samples / seconds
    return {"adapter": distribution, "version": package_version(distribution), "call": call,
            "mechanism": mech.name, "batched": mech.batched, "samples": samples,
            "seconds": seconds,
            "runs": result.samples, "runs_per_second": rate, "bare_per_second": bare,
            "bare_microseconds": 1e6 / bare, "ratio_to_bare": rate / bare,
            "meets_target": rate / bare >= TARGET,
            "machine_slowdown": slowdown,
            "sampling_share": inside["wall"] / seconds,
            "parallelism": inside["chunks"] / inside["wall"],
            "worker_microseconds_per_run": 1e6 * inside["chunks"] / result.samples}


def scalar_adapter_row(rows: list[dict], meta: dict) -> dict:
    """The scalar section's 2-worker audit of diffprivlib's Laplace as a row of the adapter
    table, against the same bare loop of `Laplace.randomise`."""
    audit = next(r for r in rows if r["setting"].startswith("audit, n_jobs=2"))
    bare = next(r for r in rows if r["setting"].startswith("bare loop of `Laplace"))
    ratio = audit["ratio_to_bare"]
    return {"adapter": "diffprivlib", "version": meta["diffprivlib"],
            "call": "`Laplace(epsilon=1).randomise(0.0)`", "mechanism": meta["scalar_mechanism"],
            "batched": False, "samples": meta["scalar_samples"], "seconds": audit["seconds"],
            "runs": audit["runs"], "runs_per_second": audit["runs_per_second"],
            "bare_per_second": bare["runs_per_second"],
            "bare_microseconds": 1e6 / bare["runs_per_second"], "ratio_to_bare": ratio,
            "meets_target": ratio >= TARGET,
            "machine_slowdown": meta["scalar_machine_slowdown"],
            "sampling_share": meta["scalar_2_workers_sampling_share"],
            "parallelism": meta["scalar_2_workers_parallelism"],
            "worker_microseconds_per_run": meta["scalar_worker_microseconds_per_run"]}


def adapter_markdown(rows: list[dict]) -> list[str]:
    """The section of throughput.md comparing every library adapter with a bare loop."""
    lines = ["", "## Every library adapter against a bare loop of the library's call", "",
             "One representative mechanism per adapter, audited at its own claim on 2 workers "
             "as a measurement run (every stage runs), at the power of two of certifying runs "
             f"per input that makes the audit last about {ADAPTER_SECONDS:.0f} s. Bare = a single-thread Python loop over the library's "
             "own call, measured before and after the audit and averaged. Ratio = audit runs "
             f"per second / bare calls per second; the bar is {TARGET:.1f} (90% of two cores). "
             "Two bare loops = the calls per second of the same loop run in two worker processes "
             "at once over one such loop alone: what two workers can reach on this machine "
             "before the audit does anything.",
             "", "| adapter | bare call | µs per bare call | draws | audit seconds | audit runs "
             "| audit runs per second | ratio to bare | ≥ 1.8 | two bare loops |",
             "|---|---|--:|---|--:|--:|--:|--:|---|--:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['adapter']} | not measured: {r['error']} | | | | | | | | |")
            continue
        lines.append(
            f"| {r['adapter']} {r['version']} | {r['call']} | {r['bare_microseconds']:.1f} | "
            f"{'batched' if r['batched'] else 'one call a run'} | {r['seconds']:.1f} | "
            f"{r['runs']:,} | {r['runs_per_second']:,.0f} | {r['ratio_to_bare']:.2f} | "
            f"{'yes' if r['meets_target'] else '**no**'} | {2 / r['machine_slowdown']:.2f} |")
    lines += ["", "Where each audit's time goes. The ratio is the product of four factors: "
              "the share of wall time spent sampling (the rest is the engine's search, "
              "learning and counting between chunks; ideal 1), how many chunks ran side by "
              "side while sampling (ideal 2), how much two bare loops in worker processes "
              "slow each other (the machine's share: one loop's rate beside a second over "
              "its rate alone; ideal 1), and the rest: the bare call's µs, so slowed, over "
              "what a worker spends per run (the library call, the adapter and encoding the "
              "output; ideal 1, above 1 when the adapter batches calls):", ""]
    lines += [_where_time_goes(r) for r in rows if "error" not in r]
    return lines


def _where_time_goes(r: dict) -> str:
    """One adapter's ratio as sampling share × parallelism × machine × (bare µs slowed by a
    second loop / worker µs), and, below the bar, the factor that loses most."""
    machine = 1 / r["machine_slowdown"]
    slowed = r["bare_microseconds"] * r["machine_slowdown"]
    per_run = slowed / r["worker_microseconds_per_run"]
    text = (f"- {r['adapter']}: {r['sampling_share']:.0%} × {r['parallelism']:.2f} × "
            f"{machine:.2f} × {per_run:.2f} ({r['bare_microseconds']:.1f} µs a bare call, "
            f"{slowed:.1f} µs slowed by a second loop, "
            f"{r['worker_microseconds_per_run']:.1f} µs a run in a worker)")
    if r["meets_target"]:
        return text + "."
    losses = {"the engine's work between chunks": 1 - r["sampling_share"],
              "chunks not running side by side": 1 - r["parallelism"] / 2,
              "two processes slowing each other on this machine (bare loops too)":
                  1 - min(machine, 1.0),
              "per-run work in the worker beyond the library call": 1 - min(per_run, 1.0)}
    worst = max(losses, key=losses.get)
    return text + f"; below the bar, bounded most by {worst}."


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
    adapters = [adapter_row(build) for build in ADAPTERS]
    adapters.insert(1, scalar_adapter_row(scalar, scalar_meta))
    meta = {"samples": n, "cpu_count": os.cpu_count(), "cpu_model": cpu_model(),
            "numpy": np.__version__, "dask": package_version("dask"),
            "dask_result_identical_to_local": same, **scalar_meta}
    (args.out / "throughput.json").write_text(json.dumps(jsonable(
        {"rows": rows, "scalar_rows": scalar, "adapter_rows": adapters, "meta": meta}),
        indent=2, allow_nan=False))
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
    lines += adapter_markdown(adapters)
    (args.out / "throughput.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
