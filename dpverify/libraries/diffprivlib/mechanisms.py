"""Adapting a diffprivlib mechanism instance (`from_mechanism`): the claim is the instance's
(epsilon, delta) (docs/theory.md §7), the neighbouring inputs follow from its sensitivity,
bounds, utility or domain (`mechanism_pairs`), and each run draws from the engine's `rng`
through a runner of seeding.py.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import DpVerifyError, InvalidPairsError
from ...mechanism import Mechanism, validate_claim
from ...pairs import all_differ
from .. import require_diffprivlib
from .seeding import (SeededRandomise, SeededUtilitySelect, SeededVectorMinimiser,
                      generator_kind, innermost)

# Uniform claims (0, δ)-DP, which cannot be audited by sampling (ε must be > 0). It implies
# (ε, δ)-DP for every ε > 0: the adapter audits (UNIFORM_EPSILON, δ), nearly the claim itself.
UNIFORM_EPSILON = 1e-3
MAX_CATEGORICAL_PAIRS = 12


def mechanism_claim(mech) -> tuple[float, float]:
    """The (epsilon, delta) the instance claims (of the innermost mechanism of a transformer
    chain). Uniform claims (0, δ): audited as (UNIFORM_EPSILON, δ), which it implies."""
    inner = innermost(mech)
    eps, dlt = float(inner.epsilon), float(inner.delta)
    if eps == 0 and type(inner).__name__ == "Uniform":
        eps = UNIFORM_EPSILON
    return validate_claim(eps, dlt)


def _ints(pairs):
    """Integer mechanisms (Geometric*) only accept Python ints."""
    return [(int(a), int(b)) for a, b in pairs]


def bounded_pairs(lower, upper, sensitivity, integer=False) -> list:
    """Inputs `sensitivity` apart inside [lower, upper]: one pair against each finite bound
    (where truncation, folding and rejection act) and one in the middle; the whole range when
    it is narrower than the sensitivity. Integer mechanisms get whole numbers inside."""
    lo = -math.inf if lower is None else float(lower)
    hi = math.inf if upper is None else float(upper)
    if integer:
        lo, hi = (math.ceil(lo) if math.isfinite(lo) else lo), (
            math.floor(hi) if math.isfinite(hi) else hi)
    step = float(sensitivity)
    if hi - lo <= step:
        pairs = [(lo, hi)]
    else:
        pairs = []
        if math.isfinite(lo):
            pairs.append((lo, lo + step))
        if math.isfinite(hi):
            pairs.append((hi - step, hi))
        if math.isfinite(lo) and math.isfinite(hi):
            middle = (lo + hi - step) / 2
            middle = math.floor(middle) if integer else middle
            pairs.append((middle, middle + step))
        elif math.isfinite(lo) or math.isfinite(hi):  # one-sided: a pair well inside as well
            start = lo + 4 * step if math.isfinite(lo) else hi - 5 * step
            pairs.append((start, start + step))
        else:
            pairs.append((0.0, step))
    unique = list(dict.fromkeys(pairs))
    return _ints(unique) if integer else unique


def _numeric_pairs(mech, integer: bool) -> list:
    """Value mechanisms: inputs at the sensitivity distance, inside the bounds if any."""
    sensitivity = float(mech.sensitivity)
    if not sensitivity > 0:
        raise InvalidPairsError(f"{type(mech).__name__} has sensitivity {mech.sensitivity!r}: "
                                "neighbouring inputs would be equal; pass pairs=[(x, x2), ...]")
    return bounded_pairs(getattr(mech, "lower", None), getattr(mech, "upper", None),
                         sensitivity, integer)


def _utility_pairs(mech) -> list:
    """Exponential / PermuteAndFlip: utility vectors whose candidates move by at most the
    sensitivity: StatDP's all-differ patterns around the instance's utility (one candidate up,
    the rest down, ...); a monotonic utility only moves all candidates the same way."""
    base = np.asarray(mech.utility, dtype=float)
    step, n = float(mech.sensitivity), len(base)
    if not step > 0:
        raise InvalidPairsError(f"{type(mech).__name__} has sensitivity {mech.sensitivity!r}: "
                                "pass pairs=[(utility, utility2), ...]")
    if mech.monotonic:
        ones, first, last = np.ones(n), np.eye(n)[0], np.eye(n)[-1]
        moves = [first, last, ones - first, ones - last, ones]
        patterns = [(np.ones(n), np.ones(n) + d) for d in moves if d.any()]
    else:
        patterns = all_differ(n)[::2]  # all_differ lists both orders; the engine audits both
    pairs = {}
    for a, b in patterns:
        key = (tuple((base + step * (np.asarray(a) - 1)).tolist()),
               tuple((base + step * (np.asarray(b) - 1)).tolist()))
        pairs.setdefault(key, None)
    return list(pairs)


def _categorical_pairs(mech) -> list:
    """ExponentialCategorical: every two values of the domain are neighbours (the sensitivity
    is the largest utility distance); the farthest pairs first, at most
    MAX_CATEGORICAL_PAIRS."""
    domain = list(mech._domain_values)
    pairs = [(a, b) for i, a in enumerate(domain) for b in domain[i + 1:]]
    pairs.sort(key=lambda p: -mech._get_utility(*p))
    return pairs[:MAX_CATEGORICAL_PAIRS]


def _bingham_pairs(mech) -> list:
    """Bingham releases the top eigenvector of A = Σ x xᵀ; one record contributes x xᵀ with
    ‖x‖² ≤ sensitivity. Pairs in 2-D: the record moved from e1 to e2 (replace one), and
    removed (add/remove one)."""
    step = float(mech.sensitivity)
    if not step > 0:
        raise InvalidPairsError("Bingham with sensitivity 0: pass pairs=[(A, A2), ...]")
    e1, e2 = np.diag([step, 0.0]), np.diag([0.0, step])
    return [(e1, e2), (np.zeros((2, 2)), e1)]


def mechanism_pairs(mech) -> list:
    """Neighbouring inputs for a diffprivlib mechanism (the rule for each class: from_mechanism),
    or InvalidPairsError when there is no neighbouring notion to construct honestly."""
    from diffprivlib import mechanisms as m
    from diffprivlib.mechanisms.transforms import DPTransformer
    if isinstance(mech, DPTransformer):
        raise InvalidPairsError(f"{type(mech).__name__} transforms its inputs before "
                                f"{type(innermost(mech)).__name__} sees them: pass pairs= in "
                                "the transformer's input domain")
    if isinstance(mech, m.Vector):
        raise InvalidPairsError(
            "Vector perturbs an objective function, and its privacy is about the minimiser of "
            "the perturbed objective over a dataset: pass pairs=[(f, f2), ...] with f, f2 the "
            "objectives (f(w) or f(w) -> (value, gradient)) of two neighbouring datasets")
    if isinstance(mech, m.Binary):
        return [(mech.value0, mech.value1)]
    if isinstance(mech, m.Exponential):  # also PermuteAndFlip
        return _utility_pairs(mech)
    if isinstance(mech, m.ExponentialCategorical):  # also ExponentialHierarchical
        return _categorical_pairs(mech)
    if isinstance(mech, m.Bingham):
        return _bingham_pairs(mech)
    if isinstance(mech, (m.Geometric, m.GaussianDiscrete)):
        return _numeric_pairs(mech, integer=True)
    if isinstance(mech, (m.Laplace, m.Gaussian, m.Uniform)):  # Staircase, Snapping, bounded...
        return _numeric_pairs(mech, integer=False)
    raise InvalidPairsError(f"dpverify does not know the inputs of {type(mech).__name__}: pass "
                            "pairs=[(x, x2), ...] of neighbouring inputs")


def _output_type(mech):
    """float for real-valued mechanisms, int for integer ones (their truncation returns the
    bound as given, an int or a float), None (as returned) for the rest."""
    from diffprivlib import mechanisms as m
    if mech is not innermost(mech):
        return None
    if isinstance(mech, (m.Geometric, m.GaussianDiscrete)):
        return int
    if isinstance(mech, (m.Laplace, m.Gaussian, m.Uniform)):
        return float
    return None


def _describe(mech) -> str:
    """'diffprivlib.Laplace(epsilon=1.0, delta=0.0, sensitivity=1.0)', at most 120 characters;
    a transformer chain as 'diffprivlib.RoundedInteger(diffprivlib.Laplace(...))'."""
    if hasattr(mech, "parent"):
        text = f"diffprivlib.{type(mech).__name__}({_describe(mech.parent)})"
        return text if len(text) <= 120 else text[:117] + "..."
    text = repr(mech)
    text = "diffprivlib." + text[text.rfind(".", 0, text.find("(")) + 1:]
    start = text.find(", random_state=")
    if start >= 0:
        end = text.find(", ", start + 2)
        text = text[:start] + (text[end:] if end >= 0 else ")")
    return text if len(text) <= 120 else text[:117] + "..."


def from_mechanism(mech, pairs=None, name=None) -> Mechanism:
    """A dpverify Mechanism running a diffprivlib mechanism instance, seeded from the engine.

    The claim is the instance's (epsilon, delta). Pairs, unless given: value mechanisms get
    inputs `sensitivity` apart, against each bound and in the middle when they have bounds
    (`bounded_pairs`); Binary its two labels; Exponential and PermuteAndFlip utility vectors
    moved by at most `sensitivity` per candidate; ExponentialCategorical (and Hierarchical)
    pairs of domain values; Bingham 2×2 matrices Σ x xᵀ one record apart. Vector and
    transformer chains raise InvalidPairsError: pass pairs=. The instance is copied, never
    modified.
    """
    require_diffprivlib()
    from diffprivlib.mechanisms import DPMachine, Exponential, Vector
    if not isinstance(mech, DPMachine):
        raise DpVerifyError(f"from_mechanism takes a diffprivlib.mechanisms instance, got "
                            f"{type(mech).__name__}; for tools and models use from_tool")
    epsilon, delta = mechanism_claim(mech)
    if pairs is None:
        pairs = mechanism_pairs(mech)
    inner = innermost(mech)
    runner = (SeededUtilitySelect if isinstance(inner, Exponential) and inner is mech
              else SeededVectorMinimiser if isinstance(inner, Vector) and inner is mech
              else SeededRandomise)
    fn = runner(mech, generator_kind(mech), _output_type(mech))
    return Mechanism(fn=fn, name=name or _describe(mech), epsilon=epsilon, delta=delta,
                     pairs=pairs, batched=False)
