"""Audit any Tumult Core (`tmlt.core`) `Measurement`: the claim is read from the measurement's own
privacy function, the neighbouring pairs are built from its input domain and metric, and the
noise is Tumult Core's own samplers drawing from the engine's `rng`.

    from tmlt.core.measurements.noise_mechanisms import AddGeometricNoise
    import dpverify; from dpverify.libraries.tumult import from_measurement
    dpverify.audit(from_measurement(AddGeometricNoise(alpha=2)))   # claim: ε = 1/2

`from_measurement` follows the measurement through the modules of this package, in order:

    records.py   a name from the constructor arguments; the record bounds components were given
    claims.py    d_in as an exact number, the claim read from privacy_function(d_in)
    pairs.py     neighbouring inputs at distance d_in, from the input domain and metric
    inputs.py    pair values as the measurement's inputs, checked by its own metric
    draws.py     the measurement run with its noise drawn from the engine's rng

and domains.py says what kind of domain a value is (by class name) for pairs.py and inputs.py.

Claims (docs/theory.md §7): Tumult Core's figures are exact (sympy); they are rounded UP to
floats, so the float audited is never below the library's claim.

Randomness: Tumult Core's samplers take their bits from one module-level numpy Generator;
for each call the adapter puts the engine's `rng` there (draws.py), so audits are
reproducible (randomness="rng") and the distribution is the library's own.

What runs: the noise mechanisms (AddLaplaceNoise, AddGeometricNoise, AddDiscreteGaussianNoise,
AddGaussianNoise), the pandas measurements (NoisyQuantile, AddNoiseToSeries,
AggregateByColumn), and what is built from them without Spark: chains with the dictionary
transformations (GetValue, ...), Composition, PostProcess and the measure converters. Spark
measurements (AddNoiseToColumn, ApplyInPandas, GeometricPartitionSelection, ...) and the Spark
aggregations (create_count_measurement, ...) take Spark DataFrames: not covered.

Exact floats: `floating_point=True` holds the claim to the float outputs bit for bit. Tumult
Core's Laplace noise is sampled exactly at the value, but AddGaussianNoise adds exactly sampled
noise to the value in floating point, which such an audit flags (scripts/_census_tumult.py).

Speed: a Tumult Core draw is pure Python (exact samplers: 0.1-0.5 ms of CPU), with nothing that
draws many at once faster, so the mechanism is scalar and the engine spreads its calls over
worker processes; it declares a default budget of DEFAULT_SAMPLES runs per input.
Importing Tumult Core takes about 2 s (it imports pyspark's Python modules, but never starts
Spark or Java).
"""
from __future__ import annotations

from ...errors import DpVerifyError
from ...mechanism import Mechanism, validate_claim
from .. import require_tumult
from .claims import DEFAULT_DELTA, convert_distance, read_claim, to_float_up
from .draws import SeededDraws, can_seed, plain
from .inputs import check_pairs, input_form, prepare
from .pairs import build_pairs
from .records import describe, record_hints

# the audit's default runs per input: a Tumult Core draw costs 0.1-0.5 ms of CPU, so 2^13 runs
# per input keep an audit of a measurement with two or three pairs to a quarter of a minute on
# two cores (AddGeometricNoise: 62,613 runs, 14 s); audit(samples=...) still wins
DEFAULT_SAMPLES = 1 << 13


def from_measurement(measurement, d_in=1, pairs=None, name=None, delta=None, *,
                     epsilon=None, floating_point=False) -> Mechanism:
    """Turn a Tumult Core `Measurement` into an audited `dpverify.Mechanism`.

    The claim is `measurement.privacy_function(d_in)`, read by output measure and rounded up
    to floats (docs/theory.md §7):

    - PureDP → ε (δ = 0);
    - ApproxDP → (ε, δ); a RhoZCDPToApproxDP, which has only a privacy relation, is read at
      δ = `delta` (default DEFAULT_DELTA = 1e-6), with the ε its relation confirms;
    - RhoZCDP → ρ (a zCDP claim, audited by dpverify.zcdp);
    - anything else, or no privacy function, raises InvalidClaimError (state the claim with
      `epsilon=` and `delta=`, keyword only).

    `d_in` is a distance in the measurement's input metric (records for SymmetricDifference,
    a sensitivity for AbsoluteDifference; for a DictMetric a dict, or one number for every
    key). `pairs` overrides the neighbouring pairs built from the input domain and metric
    (`build_pairs`); every pair is checked to be in the input domain and, where Tumult Core
    can measure it, at distance ≤ d_in by the metric's own `distance` (InvalidPairsError
    otherwise). Pair values are plain Python: lists for pandas Series, {column: list} for
    DataFrames (pandas objects are accepted too).
    `name` defaults to the constructor arguments, e.g. "tumult:AddGeometricNoise(alpha=2)".
    `floating_point=True` audits the claim on the exact float outputs, bit patterns included
    (dpverify.mechanism's `floating_point`): Tumult Core samples its continuous noise exactly
    (inverse CDF in arbitrary precision, correctly rounded), so the claim can be held to that.
    """
    require_tumult()
    from tmlt.core.measurements.base import Measurement as TumultMeasurement
    if not isinstance(measurement, TumultMeasurement):
        raise DpVerifyError(f"from_measurement takes a tmlt.core Measurement, got "
                            f"{type(measurement).__name__}; chain transformations into one with "
                            "`transformation | measurement`")
    label = name or describe(measurement)
    d_in = convert_distance(measurement, d_in, label)
    if pairs is None:  # first: a d_in with no neighbours is explained here
        pairs = build_pairs(measurement, d_in, label)
    check_pairs(measurement, pairs, d_in, label)
    if epsilon is not None:
        eps, dlt = validate_claim(epsilon, delta or 0.0)
        claim = {"epsilon": eps, "delta": dlt, "zcdp": None}
    else:
        claim = read_claim(measurement, d_in, delta, label)
    draws = SeededDraws(measurement)
    return Mechanism(fn=draws, name=label, epsilon=claim["epsilon"], delta=claim["delta"],
                     pairs=pairs, batched=False,
                     randomness="rng" if draws.seeded else "own",
                     zcdp=claim["zcdp"], samples=DEFAULT_SAMPLES,
                     floating_point=bool(floating_point))


__all__ = ["from_measurement", "read_claim", "convert_distance", "build_pairs", "describe",
           "record_hints", "check_pairs", "SeededDraws", "can_seed", "plain", "prepare",
           "input_form", "to_float_up",
           "DEFAULT_DELTA", "DEFAULT_SAMPLES"]
