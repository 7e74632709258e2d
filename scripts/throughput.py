"""Throughput: mechanism runs per second of an audit against plain numpy and against bare
loops of the DP libraries' calls (a shared machine: compare ratios, not seconds across runs).

A batched Laplace audit (claim ε = 1, exact: every stage runs) at N certifying samples per
input on 1 and 2 threads and on a 2-process dask LocalCluster, against numpy drawing as many
values; diffprivlib's scalar Laplace on 1 and 2 loky workers and one mechanism of every library
adapter on 2, each against a bare loop of the library's call. Writes DIR/throughput.json and
DIR/throughput.md; how to read them: docs/results.md.

An Opacus section (where opacus is installed: `python -m nox -s opacus` makes such a venv):
trainings of two small models through `make_private`, K at once in one Opacus training
(dpverify.libraries.opacus, batched) against a loop of single trainings, on one thread, and a
default audit of a correct configuration on two cores. `--only opacus` measures that section
alone and keeps the rest of DIR/throughput.json.

Usage: python scripts/throughput.py --out DIR [--samples N] [--render-only | --only opacus]
       (N = 2**23)
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path
from unittest import mock

from _common import numpy_laplace_seconds, read_json, table, write_json

import numpy as np

import dpverify
from dpverify.sampling import Sampler
from _machine import cpu_model, package_version
from mechanisms_under_test.basic import make_laplace

SCALAR_SAMPLES = 1 << 17  # the scalar default: certifying samples per input at the last stage
# each adapter's measurement run lasts about ADAPTER_SECONDS on 2 workers: a run of every
# stage at S certifying runs per input draws about 5.4 S runs in all
ADAPTER_SECONDS = 10.0
TARGET = 0.9 * 2  # the bar: 0.9 x 2 x the bare call rate, on 2 cores
DOCS = "[docs/results.md](../docs/results.md#overhead-throughput-and-memory)"


def timed(**kwargs):
    started = time.perf_counter()
    result = dpverify.audit(make_laplace(1.0), **kwargs)
    return result, time.perf_counter() - started


def all_but_seconds(result) -> dict:
    """A result's fields but its wall time: what two runs at one seed must share."""
    return result.as_dict() | {"seconds": 0}


def bare_loop_rate(call, runs: int) -> float:
    """Calls per second of a plain Python loop over `call()` on one thread."""
    started = time.perf_counter()
    for _ in range(runs):
        call()
    return runs / (time.perf_counter() - started)


def _bare_loop_in_a_worker(make_call, runs: int) -> float:
    """A bare loop's rate in a worker process; `make_call()` builds the call there."""
    call = make_call()
    bare_loop_rate(call, max(runs // 10, 1))  # imports and first-use costs
    return bare_loop_rate(call, runs)


def machine_slowdown(make_call, runs: int, repeats: int = 3) -> float:
    """How much two processes running the same bare loop slow each other (1: not at all): the
    rate alone over the mean rate of two at once, median of `repeats` (loops vary by ±10%)."""
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
    """The block's wall seconds inside `Sampler.run`, and its chunks' summed drawing seconds."""
    spent = {"wall": 0.0, "chunks": 0.0}
    real = Sampler.run

    def run(self, *args, **kwargs):  # Sampler.run, timed
        started = time.perf_counter()
        out = real(self, *args, **kwargs)
        spent["wall"] += time.perf_counter() - started
        spent["chunks"] += self.last_seconds.draw
        return out
    with mock.patch.object(Sampler, "run", run):
        yield spent


def speed_fields(runs: int, seconds: float, bare: float, slowdown: float, inside: dict) -> dict:
    """A library audit's rate against its bare loop's, and the factors of their ratio."""
    rate = runs / seconds
    return {"seconds": seconds, "runs": runs, "runs_per_second": rate, "bare_per_second": bare,
            "bare_microseconds": 1e6 / bare, "ratio_to_bare": rate / bare,
            "meets_target": rate / bare >= TARGET, "machine_slowdown": slowdown,
            "sampling_share": inside["wall"] / seconds,
            "parallelism": inside["chunks"] / inside["wall"],
            "worker_microseconds_per_run": 1e6 * inside["chunks"] / runs}


def _diffprivlib_laplace():
    from diffprivlib.mechanisms import Laplace
    from dpverify.libraries.diffprivlib import from_mechanism
    library = Laplace(epsilon=1.0, sensitivity=1.0)
    return ("diffprivlib", "`Laplace(epsilon=1).randomise(0.0)`", from_mechanism(library),
            lambda: library.randomise(0.0))


def scalar_rows() -> tuple[list[dict], dict, dict]:
    """diffprivlib's Laplace on 1 and 2 workers against a bare loop of its call: rows, meta and
    the adapter table's row."""
    _, call, mech, library_call = _diffprivlib_laplace()
    rng = np.random.default_rng(0)
    dpverify.audit(mech, samples=1 << 12, n_jobs=2)  # start the worker pool, import there
    before = bare_loop_rate(library_call, 200_000)
    wrapped = bare_loop_rate(lambda: mech.fn(0.0, rng), 200_000)
    audits, inside = {}, {}
    for jobs in (1, 2):
        with time_in_sampling() as inside[jobs]:
            started = time.perf_counter()
            result = dpverify.audit(mech, samples=SCALAR_SAMPLES, n_jobs=jobs, stop_early=False)
            audits[jobs] = (result, time.perf_counter() - started)
    bare = (before + bare_loop_rate(library_call, 200_000)) / 2
    slowdown = machine_slowdown(lambda: _diffprivlib_laplace()[3], 200_000)
    rows = [{"setting": f"audit, n_jobs={jobs} (loky processes)", "seconds": seconds,
             "runs": result.samples, "runs_per_second": result.samples / seconds,
             "ratio_to_bare": result.samples / seconds / bare}
            for jobs, (result, seconds) in audits.items()]
    rows += [{"setting": "bare loop of `Laplace.randomise(0.0)`, 1 thread",
              "runs_per_second": bare, "ratio_to_bare": 1.0},
             {"setting": "bare loop of the adapter's call (seeds from `rng`), 1 thread",
              "runs_per_second": wrapped, "ratio_to_bare": wrapped / bare}]
    same = all_but_seconds(audits[1][0]) == all_but_seconds(audits[2][0])
    speed = speed_fields(audits[2][0].samples, audits[2][1], bare, slowdown, inside[2])
    meta = {"scalar_samples": SCALAR_SAMPLES, "scalar_mechanism": mech.name,
            "scalar_2_workers_sampling_share": speed["sampling_share"],
            "scalar_2_workers_parallelism": speed["parallelism"],
            "scalar_worker_microseconds_per_run": speed["worker_microseconds_per_run"],
            "scalar_bare_microseconds_per_call": 1e6 / wrapped,
            "scalar_machine_slowdown": slowdown, "scalar_result_identical_across_n_jobs": same,
            "diffprivlib": package_version("diffprivlib")}
    return rows, meta, {"adapter": "diffprivlib", "version": meta["diffprivlib"], "call": call,
                        "mechanism": mech.name, "batched": False, "samples": SCALAR_SAMPLES,
                        **speed}


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


# each builds (distribution, the call shown, the adapted mechanism, the bare call); diffprivlib's
# row is the scalar section's 2-worker audit
ADAPTERS = [_opendp_laplace, _pydp_laplace, _pipelinedp_count, _tumult_geometric]


def adapter_row(build) -> dict:
    """One adapter's audit rate on 2 workers against a bare loop of the library's call."""
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
    return {"adapter": distribution, "version": package_version(distribution), "call": call,
            "mechanism": mech.name, "batched": mech.batched, "samples": samples,
            **speed_fields(result.samples, seconds, bare, slowdown, inside)}


def batched_rows(n: int) -> tuple[list[dict], bool | None]:
    """The batched audit on 1 and 2 threads, dask and numpy; whether dask's result is the same."""
    timed(samples=1 << 12, n_jobs=1)  # imports and first-use costs, not throughput
    rows, results = [], {}
    for jobs in (1, 2):
        results[jobs], seconds = timed(samples=n, n_jobs=jobs)
        rows.append({"setting": f"local, n_jobs={jobs} (threads)", "seconds": seconds,
                     "runs": results[jobs].samples})
    try:
        from distributed import Client, LocalCluster
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            timed(samples=1 << 12, backend="dask")  # ship the function to the workers once
            results["dask"], seconds = timed(samples=n, backend="dask")
        rows.append({"setting": "dask LocalCluster, 2 worker processes", "seconds": seconds,
                     "runs": results["dask"].samples})
    except Exception as exc:  # report, do not hide, a missing or broken cluster
        rows.append({"setting": f"dask LocalCluster: not available ({type(exc).__name__}: "
                                f"{exc})", "seconds": None, "runs": None})
    base = numpy_laplace_seconds(rows[0]["runs"])
    rows.append({"setting": "plain numpy, 1 thread", "seconds": base, "runs": rows[0]["runs"]})
    for r in rows:
        if r["seconds"]:
            r["runs_per_second"] = r["runs"] / r["seconds"]
            r["ratio_to_numpy"] = r["seconds"] / (base * r["runs"] / rows[0]["runs"])
    if "dask" not in results:
        return rows, None
    return rows, all_but_seconds(results["dask"]) == all_but_seconds(results[1])


THEORY_COPIES = "../docs/theory.md#71-many-dp-sgd-trainings-in-one-opacus-training"
OPACUS_RUNS = 2048  # trainings per batched measurement (the loop's: a quarter of it)


def _opacus_models():
    """(name, model factory, inputs, targets): a 2-parameter linear regression and a
    13-parameter MLP, on 38 examples (batches of 4: 10 steps an epoch)."""
    import torch
    rng = np.random.default_rng(7)
    x1 = rng.normal(size=(38, 1)).astype(np.float32)
    x2 = rng.normal(size=(38, 2)).astype(np.float32)
    y = rng.normal(size=(38, 1)).astype(np.float32)
    return [("Linear(1, 1)", lambda: torch.nn.Linear(1, 1), x1, y),
            ("Linear(2, 3), Tanh, Linear(3, 1)", lambda: torch.nn.Sequential(
                torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1)), x2, y)]


def _opacus_training(model, x, y, **kwargs):
    import torch
    from dpverify.libraries.opacus import from_training
    return from_training(model, lambda p: torch.optim.SGD(p, lr=0.5), torch.nn.MSELoss(), x, y,
                         batch_size=4, noise_multiplier=1.0, max_grad_norm=1.0, **kwargs)


def opacus_section() -> dict:
    """Batched against single trainings of the same model on one thread (one run, so the
    ratios compare), and the adapter's default audit of a correct training on two cores."""
    import opacus
    import torch
    torch.set_num_threads(1)
    rows = []
    for name, model, x, y in _opacus_models():
        mech = _opacus_training(model, x, y)
        runner, data = mech.fn, mech.pairs[0][0]
        runner(data, np.random.default_rng(0), runner.copies)   # first-use costs
        started = time.perf_counter()
        runner(data, np.random.default_rng(1), OPACUS_RUNS)
        batched = (time.perf_counter() - started) / OPACUS_RUNS
        runner.batched = False
        started = time.perf_counter()
        runner(data, np.random.default_rng(2), OPACUS_RUNS // 4)
        single = (time.perf_counter() - started) / (OPACUS_RUNS // 4)
        rows.append({"model": name, "parameters": runner.parameters, "copies": runner.copies,
                     "steps": runner.steps, "single_ms": 1e3 * single,
                     "batched_ms": 1e3 * batched, "speedup": single / batched})
    torch.set_num_threads(2)
    name, model, x, y = _opacus_models()[0]
    mech = _opacus_training(model, x, y)
    started = time.perf_counter()
    result = dpverify.audit(mech, seed=0, n_jobs=2)
    audit = {"model": name, "mechanism": mech.name, "claim": mech.epsilon,
             "delta": mech.delta, "verdict": result.outcome, "bound": result.epsilon_lower_bound,
             "resolution": result.resolution, "runs": result.samples,
             "seconds": time.perf_counter() - started}
    return {"rows": rows, "audit": audit, "torch": torch.__version__,
            "opacus": opacus.__version__, "numpy": np.__version__, "cpu_model": cpu_model(),
            "measured": time.strftime("%Y-%m-%d")}


def opacus_lines(section: dict | None) -> list[str]:
    """The Opacus section of throughput.md."""
    lines = ["", "## Opacus: many trainings in one", ""]
    if not section:
        return lines + ["Not measured here (opacus is not installed: `python -m nox -s opacus` "
                        "makes a venv that has it)."]
    lines += [f"Opacus {section['opacus']}, torch {section['torch']}, numpy {section['numpy']}; "
              f"measured on {section['measured']} ({section['cpu_model']}). One epoch through "
              "`make_private` (Poisson batches of 4 from 38 examples, σ = 1, clip 1, SGD), one "
              "torch thread: a loop of single trainings as a user's code runs them, against K "
              "trainings in one Opacus training (`dpverify.libraries.opacus`, "
              f"[theory.md §7.1]({THEORY_COPIES})).", ""]
    lines += table(["model", "parameters", "steps", "K per call", "ms a single training",
                    "ms a training, batched", "speed-up"],
                   [[r["model"], r["parameters"], r["steps"], r["copies"],
                     f"{r['single_ms']:.2f}", f"{r['batched_ms']:.3f}", f"{r['speedup']:.1f}×"]
                    for r in section["rows"]], align="lrrrrrr")
    a = section["audit"]
    lines += ["", f"The adapter's default audit of the {a['model']} regression (its trained "
              f"parameters) at Opacus's claim ε = {a['claim']:.4g} at δ = {a['delta']:g}, on "
              f"two cores: **{a['verdict']}**, certified ε ≥ {a['bound']:.3g}, resolution "
              f"{a['resolution']:.3g}, {a['runs']:,} trainings in {a['seconds']:.0f} s."]
    return lines


def rate_table(rows: list[dict], ratio: str, ratio_header: str) -> list[str]:
    """The batched or the scalar section's table; `ratio`: the last column's key."""
    header = ["setting", "seconds", "mechanism runs", "runs per second", ratio_header]
    formats = {"seconds": ".2f", "runs": ",", "runs_per_second": ",.0f", ratio: ".2f"}
    return table(header, [[r["setting"]] + [format(r[k], f) if r.get(k) is not None else "—"
                                            for k, f in formats.items()] for r in rows])


def adapter_table(rows: list[dict]) -> list[str]:
    """The adapters' table: one row per library, a row saying why where it was not measured."""
    cells = [[r["adapter"], f"not measured: {r['error']}"] + [""] * 8 if "error" in r else
             [f"{r['adapter']} {r['version']}", r["call"], f"{r['bare_microseconds']:.1f}",
              "batched" if r["batched"] else "one call a run", f"{r['seconds']:.1f}",
              f"{r['runs']:,}", f"{r['runs_per_second']:,.0f}", f"{r['ratio_to_bare']:.2f}",
              "yes" if r["meets_target"] else "**no**", f"{2 / r['machine_slowdown']:.2f}"]
             for r in rows]
    return table(["adapter", "bare call", "µs per bare call", "draws", "audit seconds",
                  "audit runs", "audit runs per second", "ratio to bare", f"≥ {TARGET:.1f}",
                  "two bare loops"], cells, align="llrlrrrrlr")


def where_time_goes(r: dict) -> str:
    """One adapter's ratio as its four factors and, below the bar, the factor that loses most."""
    machine = 1 / r["machine_slowdown"]
    slowed = r["bare_microseconds"] * r["machine_slowdown"]
    per_run = slowed / r["worker_microseconds_per_run"]
    text = (f"- {r['adapter']}: {r['sampling_share']:.0%} × {r['parallelism']:.2f} × "
            f"{machine:.2f} × {per_run:.2f} ({r['bare_microseconds']:.1f} µs a bare call, "
            f"{slowed:.1f} µs slowed by a second loop, "
            f"{r['worker_microseconds_per_run']:.1f} µs a run in a worker)")
    losses = {"the engine's work between chunks": 1 - r["sampling_share"],
              "chunks not running side by side": 1 - r["parallelism"] / 2,
              "two processes slowing each other on this machine (bare loops too)":
                  1 - min(machine, 1.0),
              "per-run work in the worker beyond the library call": 1 - min(per_run, 1.0)}
    if r["meets_target"]:
        return text + "."
    return text + f"; below the bar, bounded most by {max(losses, key=losses.get)}."


def render(doc: dict) -> str:
    """throughput.md from the JSON document main writes."""
    meta, scalar = doc["meta"], doc["scalar_rows"]
    same = {True: "identical", False: "DIFFERENT"}
    dask = meta["dask_result_identical_to_local"]
    lines = ["# Throughput", "",
             f"Batched Laplace audit, claim ε = 1 (exact: every stage runs), {meta['samples']:,} "
             f"certifying samples per input, on {meta['cpu_count']} CPUs ({meta['cpu_model']}). "
             "Ratio = audit seconds / numpy's seconds to draw as many values on one thread. How "
             f"to read this report: {DOCS}.", ""]
    lines += rate_table(doc["rows"], "ratio_to_numpy", "ratio to numpy")
    if dask is not None:
        lines += ["", f"The dask run's result is {same[dask]} to the local run's (same seed)."]
    lines += ["", "## Scalar mechanisms: a library called one value at a time", "",
              f"`{meta['scalar_mechanism']}` (diffprivlib {meta['diffprivlib']}), one Python call "
              f"a run, {meta['scalar_samples']:,} certifying samples per input. Ratio = runs per "
              "second / the bare loop's (on 2 workers the ceiling is 2).", ""]
    adapter_loop = scalar[1]["runs_per_second"] / scalar[-1]["runs_per_second"]
    lines += rate_table(scalar, "ratio_to_bare", "ratio to bare loop") + [
        "", f"The 2-worker audit runs at {adapter_loop:.2f}× the adapter's own (seeded) call in a "
        f"bare loop. {meta['scalar_2_workers_sampling_share']:.0%} of its wall time is sampling; "
        f"its chunks run {meta['scalar_2_workers_parallelism']:.2f}× in parallel; a worker draws "
        f"and encodes a run in {meta['scalar_worker_microseconds_per_run']:.1f} µs against "
        f"{meta['scalar_bare_microseconds_per_call']:.1f} µs a call of that loop. Its result is "
        f"{same[meta['scalar_result_identical_across_n_jobs']]} to the 1-worker audit's.",
        "", "## Every library adapter against a bare loop of the library's call", "",
        "One mechanism per adapter at its own claim on 2 workers, every stage run, at the power "
        f"of two of runs per input that takes about {ADAPTER_SECONDS:.0f} s. Ratio = audit runs "
        "per second / calls per second of a bare loop of the library's call (the bar: "
        f"{TARGET:.1f}); two bare loops = that loop in two processes at once against one alone. "
        "Below the table each ratio as sampling share × chunks side by side × the machine's "
        "share × bare µs (slowed by a second loop) / µs a run in a worker.", ""]
    lines += adapter_table(doc["adapter_rows"]) + [""]
    lines += [where_time_goes(r) for r in doc["adapter_rows"] if "error" not in r]
    lines += opacus_lines(doc.get("opacus"))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--samples", type=int, default=1 << 23)
    parser.add_argument("--render-only", action="store_true",
                        help="measure nothing: write throughput.md from OUT/throughput.json")
    parser.add_argument("--only", choices=["opacus"],
                        help="measure this section alone, keep the rest of OUT/throughput.json")
    args = parser.parse_args(argv)
    if args.only == "opacus":
        doc = read_json(args.out / "throughput.json")
        doc["opacus"] = opacus_section()
        write_json(args.out / "throughput.json", doc)
    elif not args.render_only:
        rows, same = batched_rows(args.samples)
        args.out.mkdir(parents=True, exist_ok=True)
        scalar, scalar_meta, scalar_adapter = scalar_rows()
        adapters = [adapter_row(build) for build in ADAPTERS]
        adapters.insert(1, scalar_adapter)
        meta = {"samples": args.samples, "cpu_count": os.cpu_count(), "cpu_model": cpu_model(),
                "numpy": np.__version__, "dask": package_version("dask"),
                "dask_result_identical_to_local": same, **scalar_meta}
        try:
            opacus = opacus_section()
        except ImportError:   # not installed here: the report says so
            opacus = None
        write_json(args.out / "throughput.json", {"rows": rows, "scalar_rows": scalar,
                                                  "adapter_rows": adapters, "meta": meta,
                                                  "opacus": opacus})
    markdown = render(read_json(args.out / "throughput.json"))
    (args.out / "throughput.md").write_text(markdown, encoding="utf-8")
    print(markdown, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
