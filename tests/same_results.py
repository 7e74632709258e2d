"""Same seed, same result: audit every zoo mechanism and the README's examples at a fixed small
budget and write their result JSON and summary text with every timing removed.

Run it on two commits and compare the files byte for byte: a change that only reorganises the
code must leave the output identical (`docs/method.md`, "Reproducibility").

    python tests/same_results.py --out /tmp/after.json
    cmp /tmp/before.json /tmp/after.json

Audits whose mechanism draws its own noise (OpenDP) cannot repeat their counts; for those only what
the adapter reads from the library (name, claim, pairs) is written.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository: tests/ is one level down
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import dpverify  # noqa: E402
from mechanisms_under_test import ZOO  # noqa: E402
from mechanisms_under_test.dpsniper import DPSNIPER  # noqa: E402
from mechanisms_under_test.floating_point import FLOATING  # noqa: E402

SAMPLES = 1 << 15
SEED = 2
TIMING_KEYS = {"seconds", "elapsed", "wall_seconds", "runs_per_second"}
SECONDS_TEXT = re.compile(r"[0-9.]+ s\b")


def without_timings(value):
    """`value` with every key naming a time removed, recursively."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


@dpverify.mechanism(epsilon=0.5,
                    pairs=dpverify.pairs.search(length=5, low=0, high=10, relation="all_differ"))
def noisy_vector(data, rng, size):
    """The README's input-search example: too little noise once data[3] >= 7."""
    data = np.asarray(data, float)
    scale = 1.0 if data[3] >= 7 else 10.0
    return data + rng.laplace(0, scale, (size, len(data)))


@dpverify.mechanism(epsilon=1.0, pairs=[(0, 1), (3, 4)])
def scalar_count(data, rng):
    """A scalar-form mechanism (one output per call), correct at ε = 1."""
    return data + rng.laplace(0, 1.0)


@dpverify.mechanism(gdp=1.0, pairs=[(0.0, 1.0)])
def gaussian_gdp(data, rng, size):
    """A curve claim: the Gaussian of σ = 1 is exactly 1-GDP."""
    return data + rng.normal(0.0, 1.0, size)


@dpverify.mechanism(rdp=(2.0, 1.0), pairs=[(0.0, 1.0)])
def gaussian_rdp(data, rng, size):
    """A Rényi claim: D_2 of the Gaussian of σ = 1 at sensitivity 1 is 1."""
    return data + rng.normal(0.0, 1.0, size)


def zoo_cases():
    for name, mech in {**ZOO, **DPSNIPER}.items():
        yield name, lambda m=mech: dpverify.audit(m, samples=SAMPLES, seed=SEED)
    yield "svt4_curves", lambda: dpverify.audit(ZOO["svt4"], samples=SAMPLES, seed=SEED, curves=True)
    yield "laplace_half_claim", lambda: dpverify.audit(ZOO["laplace"], epsilon=0.05, samples=SAMPLES,
                                                       seed=SEED)
    for name in ("svt4", "rnm3", "laplace", "randomized_response"):
        yield f"{name}_measurement", lambda m=ZOO[name]: dpverify.audit(
            m, samples=SAMPLES, seed=SEED, stop_early=False, curves=True)
    for name in ("svt34_parallel", "prefix_sum", "numerical_svt"):
        yield f"{name}_measurement", lambda m=DPSNIPER[name]: dpverify.audit(
            m, samples=1 << 17, seed=SEED, stop_early=False)
    yield "gaussian_zcdp", lambda: dpverify.audit(ZOO["gaussian"], zcdp=0.5, samples=SAMPLES, seed=SEED)
    yield "gaussian_rdp", lambda: dpverify.audit(gaussian_rdp, samples=SAMPLES, seed=SEED)
    yield "gaussian_gdp_curve", lambda: dpverify.audit(gaussian_gdp, samples=1 << 16, seed=SEED)
    yield "rnm3_confirmed", lambda: dpverify.audit(ZOO["rnm3"], samples=SAMPLES, seed=SEED,
                                                   confirm=True)


def readme_cases():
    for name, mech in FLOATING.items():
        yield f"floating_point:{name}", lambda m=mech: dpverify.audit(m, samples=SAMPLES, seed=SEED,
                                                                      confidence=0.9)
    yield "noisy_vector_search", lambda: dpverify.audit(noisy_vector, samples=SAMPLES, seed=SEED)
    yield "scalar_count", lambda: dpverify.audit(scalar_count, samples=1 << 12, seed=SEED)
    yield "rnm3_one_job", lambda: dpverify.audit(ZOO["rnm3"], samples=SAMPLES, seed=SEED, n_jobs=1)


def library_cases():
    try:
        from diffprivlib.mechanisms import Laplace

        from dpverify.libraries.diffprivlib import from_mechanism
    except ImportError:
        return
    yield "diffprivlib:Laplace", lambda: dpverify.audit(
        from_mechanism(Laplace(epsilon=1.0, sensitivity=1.0)), samples=SAMPLES, seed=SEED)


def opendp_declarations() -> dict:
    """What the OpenDP adapter reads from the library: its noise is its own, so counts vary."""
    try:
        import opendp.prelude as dp

        from dpverify.libraries.opendp import from_measurement
    except ImportError:
        return {}
    dp.enable_features("contrib")
    meas = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                             scale=1.0)
    mech = from_measurement(meas)
    return {"opendp:make_laplace": {"name": mech.name, "epsilon": mech.epsilon,
                                    "delta": mech.delta, "pairs": repr(mech.pairs)}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    results = {}
    for name, run in [*zoo_cases(), *readme_cases(), *library_cases()]:
        result = run()
        results[name] = without_timings(result.as_dict())
        results[name]["summary (timings blanked)"] = SECONDS_TEXT.sub("… s", result.summary())
        print(f"{name}: {results[name]['verdict']}", flush=True)
    results.update(opendp_declarations())
    args.out.write_text(json.dumps(results, indent=1, sort_keys=True, default=repr) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
