"""Audit any OpenDP `Measurement`: the claim is read from the measurement's own privacy map,
the neighbouring pairs are built from its input domain and metric, and the noise is OpenDP's.

    import opendp.prelude as dp, dpverify
    from dpverify.libraries.opendp import from_measurement
    dp.enable_features("contrib")
    meas = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                             scale=1.0)
    dpverify.audit(from_measurement(meas))        # claim: ε = meas.map(1) = 1.0

Own randomness: OpenDP samples from the operating system's CSPRNG, which cannot be seeded, so
every adapted mechanism is declared `randomness="own"` and ignores the engine's `rng`. What is
lost: the same seed no longer reproduces the same bound, and the certificates that need shared
seeds (common random numbers) are off. What holds: every run is an independent draw, so the
false-alarm promise (a correct measurement is flagged with probability ≤ 1 − confidence) is
unchanged.

Speed: one OpenDP call costs 65-370 µs, most of it converting values between Python and
Rust. When OpenDP can compose the measurement with itself (`make_composition([meas] * k)`),
one call returns k independent draws at 35-70 % of the scalar cost per draw, and the engine
runs batches on its threads. Otherwise the mechanism is scalar and the engine spreads its calls over worker
processes, which receive it pickled: as OpenDP's JSON serialization (`dp.serialize`), or the
constructor calls OpenDP recorded, rebuilt in the worker. Either way the mechanism declares a
default budget of 2^17 runs per input (DEFAULT_SAMPLES), not the engine's batched 2^22.

Outputs are handed to the engine as numbers, strings, lists or numpy arrays. Two kinds are
converted: a dict (a map of partitions, e.g. from `make_laplace_threshold`) becomes a tuple of
(key, value) pairs in sorted key order, so which keys were released stays visible; bytes (a
bit vector from `make_randomized_response_bitvec`) become a tuple of its bits.
"""
from __future__ import annotations

import math
import pickle
import re

import numpy as np

from ..errors import InvalidClaimError, InvalidPairsError
from ..mechanism import Mechanism, validate_claim, validate_zcdp
from . import require

DEFAULT_DELTA = 1e-6  # δ at which a privacy profile (SmoothedMaxDivergence) is read
BATCH = 512           # draws per composed OpenDP call (the per-draw cost is flat beyond ~64)
UNSIGNED_FREE = 5     # base value of vectors under L∞ distance, in units of d_in
# the audit's default runs per input: an OpenDP draw costs 25-250 µs even composed, so the
# engine's batched default (2^22) would run for many minutes; 2^17 takes about half a minute
# for a measurement with two pairs (audit(samples=...) still wins)
DEFAULT_SAMPLES = 1 << 17


def _require_opendp():
    """Import opendp's prelude, or raise a DpVerifyError saying how to install it."""
    return require("opendp.prelude", "opendp", "opendp 0.14-0.16")


def from_measurement(measurement, d_in=1, pairs=None, name=None, delta=None, *,
                     epsilon=None) -> Mechanism:
    """Turn an OpenDP `Measurement` into an audited `dpverify.Mechanism`.

    The claim is `measurement.map(d_in)`, read by output measure:

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

    `pairs` overrides the neighbouring pairs built from the input domain and metric (see
    `build_pairs`); they must be at distance ≤ d_in, as the claim is the one at d_in.
    `name` defaults to the constructor calls, e.g. "opendp:make_laplace(scale=1.0)".
    The mechanism draws OpenDP's own randomness (randomness="own"; see the module docstring)
    and declares a default budget of DEFAULT_SAMPLES runs per input.
    """
    _require_opendp()
    label = name or describe(measurement)
    d_in = convert_distance(measurement, d_in, label)
    if pairs is None:  # first: a d_in with no neighbours is explained here
        pairs = build_pairs(measurement, d_in, label)
    if epsilon is not None:
        eps, dlt = validate_claim(epsilon, delta or 0.0)
        claim = {"epsilon": eps, "delta": dlt, "zcdp": None}
    else:
        claim = read_claim(measurement, d_in, delta, label)
    source = _batch_source(measurement, claim)  # None: OpenDP cannot compose it
    fn = BatchedDraws(source) if source is not None else ScalarDraws(measurement)
    return Mechanism(fn=fn, name=label, epsilon=claim["epsilon"], delta=claim["delta"],
                     pairs=pairs, batched=source is not None, randomness="own",
                     zcdp=claim["zcdp"], samples=DEFAULT_SAMPLES)


# ------------------------------------------------------------------------- names, kinds ---

def _kind(obj) -> str:
    """The bare type name of an OpenDP domain, metric or measure: "VectorDomain", "L1Distance",
    "Approximate<MaxDivergence>" (Rust paths such as opendp::domains:: dropped)."""
    text = re.sub(r"[A-Za-z_]\w*::", "", str(obj.type))
    return text if text.startswith("Approximate") else text.split("<")[0]


def _steps(obj) -> list[tuple[str, str, dict]]:
    """The constructor calls (function, module, kwargs) that built `obj`, in the order they
    apply to the data: chains (make_chain_*) are flattened, transformation0 first."""
    record = getattr(obj, "__opendp_dict__", None)
    if not isinstance(record, dict) or "__function__" not in record:
        return []
    function, kwargs = record["__function__"], record.get("__kwargs__", {})
    if function.startswith("make_chain_"):
        parts = sorted(kwargs.items(), key=lambda kv: kv[0][-1])  # "...0" applies first
        return [step for _, part in parts for step in _steps(part)]
    return [(function, record.get("__module__", ""), kwargs)]


def _short(value) -> str | None:
    """A constructor argument worth showing in a name (numbers, strings, short sequences)."""
    if isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float, str)) for v in value):
        text = repr(tuple(value) if isinstance(value, tuple) else list(value))
        return text if len(text) <= 40 else text[:37] + "..."
    return None


# constructor arguments left out of names: the domain, metric and measure, type arguments
_UNNAMED = ("input_domain", "input_metric", "output_measure", "MO", "T", "TO", "TOA", "TIA")


def _calls(obj) -> str:
    """The constructor calls of `obj` joined by >>, measurements given to a combinator nested:
    "make_zCDP_to_approxDP(make_gaussian(scale=1.0))"; "" when OpenDP kept no record."""
    calls = []
    for function, _, kwargs in _steps(obj):
        shown = []
        for key, value in kwargs.items():
            inner = _calls(value) if key not in _UNNAMED else ""
            text = inner or (_short(value) if value is not None and value is not False else None)
            if key not in _UNNAMED and text is not None:
                shown.append(text if inner else f"{key}={text}")
        calls.append(f"{function}({', '.join(shown)})")
    return " >> ".join(calls)


def describe(measurement) -> str:
    """A readable name: "opendp:make_clamp(bounds=(0.0, 1.0)) >> make_sum() >> make_laplace(
    scale=1.0)", or "opendp measurement <measure>" when OpenDP does not say how it was built."""
    calls = _calls(measurement)
    return f"opendp:{calls}" if calls else f"opendp measurement {measurement.output_measure}"


def _hints(measurement) -> dict:
    """Values the constructors were given that tell which records hit the sensitivity: the
    first transformation's `bounds` (a clamp), `categories`, quantile `candidates` and a
    `threshold`; the first occurrence in application order wins."""
    hints: dict = {}
    for _, module, kwargs in _steps(measurement):
        for key in ("bounds", "categories", "candidates", "threshold"):
            value = kwargs.get(key)
            if value is None or key in hints:
                continue
            if key == "bounds" and module != "transformations":
                continue  # e.g. make_geometric's bounds bound the noise, not the records
            hints[key] = value
    return hints


# ------------------------------------------------------------------------------ claims ---

def convert_distance(measurement, d_in, label):
    """d_in in the type the input metric measures in: an int for record counts (symmetric
    distance), a float for f64 sensitivities, a (l0, lp, l∞) triple for partition metrics
    (an integer k becomes (k, k, k)). Raises InvalidPairsError when it cannot be."""
    dtype = str(measurement.input_metric.distance_type)
    parts = [p.strip() for p in dtype.strip("()").split(",")]

    def one(value, kind):
        number = float(value)
        if not (number > 0 and math.isfinite(number)):
            raise InvalidPairsError(f"d_in must be a positive finite distance, got {value!r} "
                                    f"for {label!r}")
        if kind[0] in "iu":
            if not number.is_integer():
                raise InvalidPairsError(f"d_in must be a whole number for {label!r}, whose "
                                        f"metric {measurement.input_metric} counts in {kind}")
            return int(number)
        return number
    try:
        if len(parts) > 1:
            values = d_in if isinstance(d_in, (tuple, list)) else [d_in] * len(parts)
            if len(values) != len(parts):
                raise InvalidPairsError(f"d_in for {label!r} is a {dtype} triple, got {d_in!r}")
            return tuple(one(v, k) for v, k in zip(values, parts))
        return one(d_in, parts[0])
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InvalidPairsError):
            raise
        raise InvalidPairsError(f"d_in must be a number for {label!r} (metric "
                                f"{measurement.input_metric}), got {d_in!r}") from None


def _map(measurement, d_in, label):
    """measurement.map(d_in), with OpenDP's refusal turned into an InvalidClaimError."""
    try:
        return measurement.map(d_in)
    except Exception as exc:
        raise InvalidClaimError(f"OpenDP could not map d_in={d_in!r} through {label!r}: "
                                f"{str(exc).strip()}; check d_in, or state the claim yourself: "
                                "from_measurement(measurement, epsilon=..., delta=...)") from None


def read_claim(measurement, d_in, delta, label) -> dict:
    """{"epsilon", "delta", "zcdp"} read from the measurement at d_in (see `from_measurement`).

    `delta`: where the claim is a privacy profile, the δ to read ε at (default DEFAULT_DELTA);
    ignored for a zCDP claim (the δ of the (ε, δ) claim audited beside ρ is
    dpverify.audit's `delta=`, default 1e-6). A claim dpverify cannot audit (ε = 0: no
    neighbours at this d_in) raises InvalidClaimError naming the measurement.
    """
    try:
        return _read_claim(measurement, d_in, delta, label)
    except InvalidClaimError as exc:
        if label in str(exc):
            raise
        raise InvalidClaimError(f"{label!r} at d_in={d_in!r}: {exc}") from None


def _read_claim(measurement, d_in, delta, label) -> dict:
    """read_claim, by output measure."""
    dp = _require_opendp()
    measure = _kind(measurement.output_measure)
    if measure == "MaxDivergence":
        eps, dlt = validate_claim(_map(measurement, d_in, label), 0.0)
        return {"epsilon": eps, "delta": dlt, "zcdp": None}
    if measure == "ZeroConcentratedDivergence":
        rho = validate_zcdp(_map(measurement, d_in, label))
        return {"epsilon": None, "delta": 0.0, "zcdp": rho}
    if measure == "Approximate<MaxDivergence>":
        eps, dlt = validate_claim(*_map(measurement, d_in, label))
        return {"epsilon": eps, "delta": dlt, "zcdp": None}
    target = DEFAULT_DELTA if delta is None else float(delta)
    if measure == "Approximate<ZeroConcentratedDivergence>":
        measurement = dp.c.make_zCDP_to_approxDP(measurement)  # OpenDP's own conversion
        measure = _kind(measurement.output_measure)
    if measure in ("SmoothedMaxDivergence", "Approximate<SmoothedMaxDivergence>"):
        value = _map(measurement, d_in, label)
        profile, floor = value if isinstance(value, tuple) else (value, 0.0)
        try:
            eps = profile.epsilon(target)
        except Exception as exc:
            raise InvalidClaimError(f"the privacy profile of {label!r} has no ε at δ = "
                                    f"{target:g}: {str(exc).strip()}; pass a larger delta=")
        eps, dlt = validate_claim(eps, target + floor)
        return {"epsilon": eps, "delta": dlt, "zcdp": None}
    raise InvalidClaimError(
        f"cannot read a claim from {label!r}: its output measure {measurement.output_measure} "
        "is not MaxDivergence, ZeroConcentratedDivergence, SmoothedMaxDivergence or an "
        "Approximate one of those; state the claim yourself: from_measurement(measurement, "
        "epsilon=..., delta=...)")


# ------------------------------------------------------------------------------- pairs ---

def _atom_type(carrier):
    """The Python type of an OpenDP atom type: f32/f64 → float, i*/u* → int, String, bool;
    None for anything else."""
    carrier = str(carrier)
    if carrier in ("String", "bool"):
        return str if carrier == "String" else bool
    if re.fullmatch(r"[fiu](8|16|32|64|128|size)", carrier):
        return float if carrier[0] == "f" else int
    return None


def _atom_info(domain):
    """(Python type, bounds or None) of an AtomDomain, or None for another domain."""
    if _kind(domain) != "AtomDomain":
        return None
    kind = _atom_type(domain.carrier_type)
    try:
        bounds = domain.bounds
    except Exception:  # OpenDP has no bounds for strings and bools
        bounds = None
    return None if kind is None else (kind, bounds)


def _record_values(kind, bounds, hints):
    """Two record values (lo, hi): the categories a pipeline counts, the domain's bounds, a
    clamp's bounds, the quantile candidates' range, else (0, 1) / (False, True) / ("a", "b")."""
    categories = hints.get("categories")
    if categories:
        return categories[0], categories[-1]
    if kind is bool:
        return False, True
    if kind is str:
        return "a", "b"
    bounds = bounds or hints.get("bounds")
    if bounds is None and hints.get("candidates"):
        bounds = (min(hints["candidates"]), max(hints["candidates"]))
    lo, hi = bounds if bounds is not None else (0, 1)
    return kind(lo), kind(hi)


def _base_records(kind, lo, hi, hints) -> list:
    """The dataset records are added to: (lo, hi); for a quantile, two records between the
    middle candidates, so an added record moves some candidates' scores up and others down
    (the case the exponential mechanism's 2Δ/scale bound is about)."""
    candidates = sorted(hints.get("candidates") or [])
    if kind is float and len(candidates) >= 3:
        m = len(candidates) // 2
        return [(candidates[m - 1] + candidates[m]) / 2, (candidates[m] + candidates[m + 1]) / 2]
    return [lo, hi] if lo != hi else [lo]


def _record_pairs(domain, metric, d_in, hints):
    """Datasets (vectors of records) at d_in under SymmetricDistance / InsertDeleteDistance
    (d_in records added) or ChangeOneDistance / HammingDistance (d_in records replaced; a
    sized domain under symmetric distance replaces d_in // 2). The records are the values
    at the bounds: adding the one of largest magnitude hits a bounded sum's sensitivity."""
    info = _atom_info(domain.element_domain)
    if info is None:
        return None
    kind, bounds = info
    lo, hi = _record_values(kind, bounds, hints)
    numeric = kind in (int, float)
    far, near = (lo, hi) if numeric and abs(lo) > abs(hi) else (hi, lo)
    size = domain.size
    replace = _kind(metric) in ("ChangeOneDistance", "HammingDistance")
    if replace or size is not None:
        changes = d_in if replace else d_in // 2
        if changes < 1:
            raise InvalidPairsError(
                f"a dataset of fixed size {size} has no neighbour at {metric} {d_in}: records "
                "can only be replaced, which is distance 2; pass d_in=2")
        n = size or changes + 1
        base = [near] * n
        return [(base, [far] * min(changes, n) + [near] * max(n - changes, 0))]
    base = _base_records(kind, lo, hi, hints)
    added = [far] + ([near] if near != far and (not numeric or lo < 0 < hi) else [])
    return [(list(base), base + [value] * d_in) for value in added]


def _atom_absolute_pairs(domain, metric, d_in, hints):
    """(x, x + d_in) for x = 0 and 100, or at both ends of a bounded domain."""
    info = _atom_info(domain)
    if info is None or info[0] not in (int, float):
        return None
    kind, bounds = info
    d = kind(d_in)
    if bounds is None:
        return [(kind(0), kind(0) + d), (kind(100), kind(100) + d)]
    lo, hi = kind(bounds[0]), kind(bounds[1])
    if hi - lo <= d:
        return [(lo, hi)]
    return [(lo, lo + d), (hi - d, hi)]


def _atom_discrete_pairs(domain, metric, d_in, hints):
    """Two different values (any two are at discrete distance 1): (False, True), the first
    two categories of randomized response, or (0, 1)."""
    info = _atom_info(domain)
    if info is None:
        return None
    kind, bounds = info
    categories = hints.get("categories")
    if categories and len(categories) > 1:
        return [(categories[0], categories[1])]
    lo, hi = _record_values(kind, bounds, {})
    return [(lo, hi)]


def _bitvector_pairs(domain, metric, d_in, hints):
    """Two bit vectors of the domain's maximum weight m with disjoint ones (packed bytes,
    as numpy uint8 arrays): the first m bits set against the next m."""
    match = re.search(r"weight=(\d+)", str(domain))
    weight = int(match.group(1)) if match else 1
    bits = 8 * math.ceil(2 * weight / 8)
    a, b = np.zeros(bits, dtype=np.uint8), np.zeros(bits, dtype=np.uint8)
    a[:weight], b[weight:2 * weight] = 1, 1
    return [(np.packbits(a), np.packbits(b))]


def _spread(kind, metric, d):
    """Two shifts whose L1 (or L2) norm is exactly d (at most d after rounding), or None."""
    if metric == "L1Distance":
        first = kind(d / 2) if kind is float else d // 2
        return (first, d - first) if first else None
    if kind is int:
        return None  # no two whole numbers have an L2 norm of d in general
    step = d / math.sqrt(2)
    while math.hypot(step, step) > d:  # rounding must not push the pair past d_in
        step = math.nextafter(step, 0.0)
    return step, step


def _shifted(base, shifts, bounds):
    """base + shifts, each coordinate clipped into the element bounds (if any)."""
    out = list(base)
    for i, s in enumerate(shifts):
        out[i] = out[i] + s
        if bounds is not None:
            out[i] = min(max(out[i], bounds[0]), bounds[1])
    return out


def _vector_lp_pairs(domain, metric, d_in, hints):
    """Vectors of the domain's size (else 3) at L1 / L2 distance d_in: one coordinate moved
    by d_in, and the move spread over two coordinates."""
    info = _atom_info(domain.element_domain)
    if info is None or info[0] not in (int, float):
        return None
    kind, bounds = info
    n, d = domain.size or 3, kind(d_in)
    base = [kind(bounds[0]) if bounds is not None else kind(0)] * n
    pairs = [(base, _shifted(base, [d], bounds))]
    spread = _spread(kind, _kind(metric), d)
    if spread is not None and n > 1:
        pairs.append((base, _shifted(base, spread, bounds)))
    return pairs


def _vector_linf_pairs(domain, metric, d_in, hints):
    """Score vectors (size, else 4) at L∞ distance d_in, as noisy max / top-k read them: one
    score up and the others down, one down and the others up (only one side moving when the
    metric is monotonic)."""
    info = _atom_info(domain.element_domain)
    if info is None or info[0] not in (int, float):
        return None
    kind, bounds = info
    n, d = domain.size or 4, kind(d_in)
    base = [kind(UNSIGNED_FREE * d)] * n  # room below for d_in downward moves
    if bounds is not None:
        base = [min(max(base[0], bounds[0]), bounds[1])] * n
    if "monotonic" in str(metric):
        patterns = [[d] + [0] * (n - 1), [0] + [d] * (n - 1)]
    else:
        patterns = [[d] + [-d] * (n - 1), [-d] + [d] * (n - 1)]
    return [(base, _shifted(base, [kind(s) for s in p], bounds)) for p in patterns]


def _map_types(domain):
    """(key type, value type) of a MapDomain, read from its carrier HashMap<K, V>."""
    match = re.fullmatch(r"HashMap<\s*(\w+)\s*,\s*(\w+)\s*>", str(domain.carrier_type))
    if not match:
        return None, None
    return _atom_type(match.group(1)), _atom_type(match.group(2))


def _map_keys(key_type, hints, count):
    """`count` keys of the map: the categories given to the pipeline, else "a", "b", ... / 0,
    1, ..."""
    categories = list(hints.get("categories") or [])
    if len(categories) >= count:
        return categories[:count]
    if key_type is str:
        return [chr(ord("a") + i) for i in range(count)]
    return None if key_type is not int else list(range(count))


def _map_lp_pairs(domain, metric, d_in, hints):
    """Maps with the same three keys whose values are at L1 / L2 distance d_in (as vectors)."""
    key_type, value_type = _map_types(domain)
    keys = _map_keys(key_type, hints, 3)
    if keys is None or value_type not in (int, float):
        return None
    d = value_type(d_in)
    base = {k: value_type(0) for k in keys}
    pairs = [(base, {**base, keys[0]: d})]
    spread = _spread(value_type, _kind(metric), d)
    if spread is not None:
        pairs.append((base, {**base, keys[0]: spread[0], keys[1]: spread[1]}))
    return pairs


def _map_partition_pairs(domain, metric, d_in, hints):
    """Maps of partitions under L01Inf / L02Inf distance (l0, lp, l∞) = d_in: one partition
    added with value v = min(lp, l∞), and one partition's value moved by v. The partitions
    present in both sit at the mechanism's threshold when it has one (where release is a
    coin flip), else at v."""
    key_type, value_type = _map_types(domain)
    keys = _map_keys(key_type, hints, 3)
    if keys is None or value_type not in (int, float):
        return None
    v = value_type(min(d_in[1], d_in[2]))
    level = value_type(hints["threshold"]) if hints.get("threshold") is not None else v
    base = {keys[0]: level, keys[1]: level}
    return [(base, {**base, keys[2]: v}), (base, {**base, keys[0]: level + v})]


_BUILDERS = {
    ("AtomDomain", "AbsoluteDistance"): _atom_absolute_pairs,
    ("AtomDomain", "DiscreteDistance"): _atom_discrete_pairs,
    ("BitVectorDomain", "DiscreteDistance"): _bitvector_pairs,
    ("VectorDomain", "L1Distance"): _vector_lp_pairs,
    ("VectorDomain", "L2Distance"): _vector_lp_pairs,
    ("VectorDomain", "LInfDistance"): _vector_linf_pairs,
    ("VectorDomain", "SymmetricDistance"): _record_pairs,
    ("VectorDomain", "InsertDeleteDistance"): _record_pairs,
    ("VectorDomain", "ChangeOneDistance"): _record_pairs,
    ("VectorDomain", "HammingDistance"): _record_pairs,
    ("MapDomain", "L1Distance"): _map_lp_pairs,
    ("MapDomain", "L2Distance"): _map_lp_pairs,
    ("MapDomain", "L01InfDistance"): _map_partition_pairs,
    ("MapDomain", "L02InfDistance"): _map_partition_pairs,
}


def build_pairs(measurement, d_in=1, label=None) -> list:
    """Neighbouring pairs [(D, D'), ...] at distance d_in (already converted by
    `convert_distance`) built from the measurement's input domain and metric:

    - atom domain, AbsoluteDistance: (x, x + d_in) at x = 0 and 100, or at the domain's ends;
    - atom domain, DiscreteDistance: two different values (randomized response: categories);
    - bit vectors, DiscreteDistance: two vectors of the maximum weight with disjoint ones;
    - vector domain, L1 / L2: one coordinate moved by d_in, and the move spread over two;
    - vector domain, L∞: one score up and the rest down, one down and the rest up;
    - vector domain, Symmetric / InsertDelete / ChangeOne / Hamming distance: d_in records
      added (or replaced), at the bounds of the records (domain, clamp, categories);
    - map domain, L1 / L2: three keys, values moved as for vectors;
    - map domain, L01Inf / L02Inf: a partition added, and one partition's value moved.

    Raises InvalidPairsError naming the measurement, its domain and metric otherwise.
    """
    label = label or describe(measurement)
    domain, metric = measurement.input_domain, measurement.input_metric
    builder = _BUILDERS.get((_kind(domain), _kind(metric)))
    pairs = builder(domain, metric, d_in, _hints(measurement)) if builder else None
    if not pairs:
        raise InvalidPairsError(
            f"cannot build neighbouring pairs for {label!r}: its input domain {domain} with "
            f"metric {metric} is not one dpverify.libraries.opendp knows; pass "
            f"pairs=[(D, D_prime), ...] of inputs at distance at most d_in={d_in!r}")
    return pairs


# ------------------------------------------------------------------------------- draws ---

def _plain(output):
    """An output the engine can encode: a dict becomes a tuple of (key, value) pairs in sorted
    key order (which keys were released stays visible), bytes a tuple of its bits."""
    if isinstance(output, dict):
        return tuple((k, _plain(output[k])) for k in sorted(output))
    if isinstance(output, (bytes, bytearray)):
        return tuple(np.unpackbits(np.frombuffer(output, dtype=np.uint8)).tolist())
    return output


def _as_batch(outputs: list):
    """A batch of outputs: numbers as one numpy array, anything else as a list of plain
    outputs (lists stay lists: their lengths may differ between the inputs of a pair)."""
    first = outputs[0] if outputs else None
    if isinstance(first, (bool, int, float)):
        return np.asarray(outputs)
    if isinstance(first, (dict, bytes, bytearray)):
        return [_plain(o) for o in outputs]
    return outputs


class _Call(tuple):
    """A picklable record of one OpenDP constructor call: (module, function, kwargs)."""


def _recipe(value):
    """The constructor calls that rebuild `value` (from OpenDP's `__opendp_dict__` records),
    with plain values and type descriptors kept as they are."""
    record = getattr(value, "__opendp_dict__", None)
    if isinstance(record, dict) and "__function__" in record:
        kwargs = {k: _recipe(v) for k, v in record.get("__kwargs__", {}).items()}
        return _Call((record["__module__"], record["__function__"], kwargs))
    if isinstance(value, (list, tuple)) and not isinstance(value, _Call):
        return type(value)(_recipe(v) for v in value)
    return value


def _rebuild(recipe):
    """Call the constructors a `_recipe` recorded."""
    import importlib
    if isinstance(recipe, _Call):
        module, function, kwargs = recipe
        call = getattr(importlib.import_module(f"opendp.{module}"), function)
        return call(**{k: _rebuild(v) for k, v in kwargs.items()})
    if isinstance(recipe, (list, tuple)):
        return type(recipe)(_rebuild(v) for v in recipe)
    return recipe


def _portable(measurement):
    """("json", text) from OpenDP's serializer, else ("recipe", calls) when every piece was
    built by a recorded constructor; raises PicklingError when neither works (e.g. a
    measurement with Python callbacks)."""
    dp = _require_opendp()
    try:
        return "json", dp.serialize(measurement)
    except Exception as exc:
        reason = str(exc).strip()
    try:
        recipe = _recipe(measurement)
        pickle.dumps(recipe)
        if isinstance(recipe, _Call):
            return "recipe", recipe
    except Exception:  # a piece without a constructor record: nothing to rebuild it from
        pass
    raise pickle.PicklingError(
        f"this OpenDP measurement cannot be serialized ({reason}), so it cannot be sent to "
        "worker processes; audit it with backend='threading'")


class _Draws:
    """Holds an OpenDP measurement. Measurements are ctypes pointers, which do not pickle: it
    pickles as OpenDP's JSON serialization (or, for what that encoder does not handle, the
    constructor calls OpenDP recorded) plus the enabled features, and rebuilds on first use
    in the receiving process."""

    def __init__(self, measurement):
        self._measurement = measurement
        self._portable = None
        self._vector_input = _kind(measurement.input_domain) == "VectorDomain"

    @property
    def measurement(self):
        if self._measurement is None:
            dp = _require_opendp()
            dp.enable_features(*self._features)
            form, payload = self._portable
            self._measurement = dp.deserialize(payload) if form == "json" else _rebuild(payload)
        return self._measurement

    def _prepare(self, data):
        """OpenDP takes vectors as lists; numpy arrays from user pairs are converted."""
        return data.tolist() if self._vector_input and isinstance(data, np.ndarray) else data

    def __getstate__(self):
        if self._portable is None:
            self._portable = _portable(self.measurement)
        return {"_portable": self._portable, "_vector_input": self._vector_input,
                "_features": sorted(_require_opendp().GLOBAL_FEATURES)}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._measurement = None


class ScalarDraws(_Draws):
    """f(data, rng) -> one output of the measurement (rng unused: OpenDP's own CSPRNG)."""

    def __call__(self, data, rng):
        return _plain(self.measurement(self._prepare(data)))


class BatchedDraws(_Draws):
    """f(data, rng, size) -> `size` independent outputs of the measurement (rng unused).

    One OpenDP call of `make_composition([meas] * k)` returns k draws; a batch is cut into
    pieces of BATCH draws plus powers of two for the rest (compositions are built once per
    k and cached). The engine runs batches on threads (one per core), so the pieces of one
    batch run one after another.
    """

    def __init__(self, measurement):
        super().__init__(measurement)
        self.__setstate__({})

    def __setstate__(self, state):
        if state:
            super().__setstate__(state)
        self._composed = {}

    def _composition(self, k: int):
        composed = self._composed.get(k)
        if composed is None:  # two threads may both build it: harmless, the same measurement
            composed = self._composed[k] = _compose(self.measurement, k)
        return composed

    def __call__(self, data, rng, size):
        data = self._prepare(data)
        full, rest = divmod(int(size), BATCH)
        pieces = [BATCH] * full + [1 << i for i in reversed(range(rest.bit_length()))
                                   if rest >> i & 1]
        return _as_batch([o for k in pieces for o in self._composition(k)(data)])


def _compose(measurement, k: int):
    """OpenDP's composition of k copies of the measurement: one call, k independent draws."""
    dp = _require_opendp()
    compose = getattr(dp.c, "make_composition", None) or dp.c.make_basic_composition
    return compose([measurement] * k)


def _batch_source(measurement, claim):
    """The measurement whose self-composition gives batched draws: the measurement itself, or
    for a privacy profile (which OpenDP 0.16 cannot compose) the same function with δ fixed
    by `make_fix_delta`; None when OpenDP cannot compose either (scalar draws then)."""
    dp = _require_opendp()
    candidates = [lambda: measurement]
    if "SmoothedMaxDivergence" in _kind(measurement.output_measure):
        candidates.append(lambda: dp.c.make_fix_delta(measurement, claim["delta"]))
    for candidate in candidates:
        try:
            source = candidate()
            _compose(source, 2)
            return source
        except Exception:  # OpenDP refuses: try the next form
            continue
    return None
