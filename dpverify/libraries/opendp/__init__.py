"""Audit any OpenDP `Measurement`: the claim is read from the measurement's own privacy map,
the neighbouring pairs are built from its input domain and metric, and the noise is OpenDP's.

    import opendp.prelude as dp, dpverify
    from dpverify.libraries.opendp import from_measurement
    dp.enable_features("contrib")
    meas = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                             scale=1.0)
    dpverify.audit(from_measurement(meas))        # claim: ε = meas.map(1) = 1.0

`from_measurement` follows the measurement through the modules of this package, in order:

    records.py    what OpenDP recorded: type names, constructor calls, a name, sensitivity hints
    claims.py     d_in in the metric's type, the claim read from measurement.map(d_in)
    pairs.py      neighbouring inputs at distance d_in, from the input domain and metric
    draws.py      the noise: batched draws by self-composition, else one call a draw
    portable.py   how a measurement is pickled to worker processes (used by draws.py)

Own randomness: OpenDP samples from the operating system's CSPRNG, which cannot be seeded, so
every adapted mechanism is declared `randomness="own"` and ignores the engine's `rng`. What is
lost: the same seed no longer reproduces the same bound, and the certificates that need shared
seeds (common random numbers) are off. What holds: every run is an independent draw, so the
false-alarm promise (a correct measurement is flagged with probability ≤ 1 − confidence) is
unchanged.

Speed: most of the cost of an OpenDP call is converting values between Python and Rust. When
OpenDP can compose the measurement with itself (`make_composition([meas] * k)`), one call
returns k independent draws at a fraction of the scalar cost per draw, and the engine runs
batches on its threads. Otherwise the mechanism is scalar and the engine spreads its calls over
worker processes, which receive it pickled (portable.py). Either way the mechanism declares a
default budget of DEFAULT_SAMPLES runs per input, not the engine's batched default.
"""
from __future__ import annotations

from ...mechanism import Mechanism, validate_claim
from .. import require_opendp
from .claims import DEFAULT_DELTA, convert_distance, read_claim, read_profile
from .draws import BATCH, BatchedDraws, ScalarDraws, batch_source
from .pairs import UNSIGNED_FREE, build_pairs
from .records import describe

# the audit's default runs per input: OpenDP draws are slow even composed (a Python-Rust call
# each), so the engine's batched default (2^22) would run for many minutes; 2^17 keeps an audit
# of a measurement with two pairs to about half a minute (audit(samples=...) still wins)
DEFAULT_SAMPLES = 1 << 17


def from_measurement(measurement, d_in=1, pairs=None, name=None, delta=None, *,
                     epsilon=None, whole_profile=False) -> Mechanism:
    """Turn an OpenDP `Measurement` into an audited `dpverify.Mechanism`.

    The claim is `measurement.map(d_in)`, read by output measure (docs/theory.md §7):

    - MaxDivergence → ε (δ = 0);
    - ZeroConcentratedDivergence → ρ (a zCDP claim, audited by dpverify.zcdp);
    - Approximate(MaxDivergence) → (ε, δ);
    - SmoothedMaxDivergence (a privacy profile) → ε = profile.epsilon(delta), δ = `delta`
      (default DEFAULT_DELTA = 1e-6);
    - Approximate(SmoothedMaxDivergence), (profile, δ₀) → ε = profile.epsilon(delta),
      δ = delta + δ₀;
    - Approximate(ZeroConcentratedDivergence) → converted by OpenDP's make_zCDP_to_approxDP,
      then as the line above;
    - anything else raises InvalidClaimError (state the claim with `epsilon=`, keyword only).

    `whole_profile=True`: the claim is instead the measurement's whole privacy profile δ(ε) at
    d_in, a curve claim audited at every ε at once (dpverify.fdp; `read_profile`): for a
    SmoothedMaxDivergence measurement its own profile, for a zCDP one the profile OpenDP's
    make_zCDP_to_approxDP gives it.
    `pairs` overrides the neighbouring pairs built from the input domain and metric (see
    `build_pairs`); they must be at distance ≤ d_in, as the claim is the one at d_in.
    `name` defaults to the constructor calls, e.g. "opendp:make_laplace(scale=1.0)".
    The mechanism draws OpenDP's own randomness (randomness="own"; see the module docstring)
    and declares a default budget of DEFAULT_SAMPLES runs per input.
    """
    require_opendp()
    label = name or describe(measurement)
    d_in = convert_distance(measurement, d_in, label)
    if pairs is None:  # first: a d_in with no neighbours is explained here
        pairs = build_pairs(measurement, d_in, label)
    curve = None
    if whole_profile:
        curve = read_profile(measurement, d_in, label)
        claim = {"epsilon": None, "delta": DEFAULT_DELTA if delta is None else float(delta),
                 "zcdp": None}
    elif epsilon is not None:
        eps, dlt = validate_claim(epsilon, delta or 0.0)
        claim = {"epsilon": eps, "delta": dlt, "zcdp": None}
    else:
        claim = read_claim(measurement, d_in, delta, label)
    source = batch_source(measurement, claim)  # None: OpenDP cannot compose it
    fn = BatchedDraws(source) if source is not None else ScalarDraws(measurement)
    return Mechanism(fn=fn, name=label, epsilon=claim["epsilon"],
                     delta=0.0 if curve is not None else claim["delta"],
                     pairs=pairs, batched=source is not None, randomness="own",
                     zcdp=claim["zcdp"], samples=DEFAULT_SAMPLES, curve=curve)


__all__ = ["from_measurement", "read_claim", "read_profile", "convert_distance", "build_pairs", "describe",
           "ScalarDraws", "BatchedDraws", "DEFAULT_DELTA", "DEFAULT_SAMPLES", "BATCH",
           "UNSIGNED_FREE"]
