"""The `@dpverify.mechanism` decorator: a function plus the privacy claim its author makes."""
from __future__ import annotations

import inspect
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .errors import DpVerifyError, InvalidClaimError, MechanismError


def validate_claim(epsilon, delta, names=("epsilon", "delta")) -> tuple[float, float]:
    """Return (epsilon, delta) as floats or raise InvalidClaimError saying what is allowed,
    naming them as `names` (an interface's spelling, e.g. ("--epsilon", "--delta"))."""
    try:
        eps = float(epsilon)
        dlt = float(delta)
    except (TypeError, ValueError):
        raise InvalidClaimError(f"{names[0]} and {names[1]} must be numbers, got {epsilon!r}, "
                                f"{delta!r}") from None
    if not (eps > 0) or math.isnan(eps):
        raise InvalidClaimError(f"{names[0]} must be > 0 (got {epsilon!r}); a claim of "
                                "epsilon = 0 cannot be audited by sampling")
    if not (0.0 <= dlt < 1.0):
        raise InvalidClaimError(f"{names[1]} must be in [0, 1) (got {delta!r})")
    return eps, dlt


RANDOMNESS = ("rng", "own")


def validate_randomness(randomness) -> str:
    """`randomness` says where a mechanism's noise comes from: "rng" (the engine's seeded
    generator, the default) or "own" (its own generator: a library's, a CSPRNG, Python's
    `random`). Raise InvalidClaimError naming the allowed values."""
    if randomness not in RANDOMNESS:
        raise InvalidClaimError(f"randomness must be 'rng' (all noise drawn from the rng "
                                f"argument) or 'own' (the mechanism draws from its own "
                                f"generator), got {randomness!r}")
    return randomness


def validate_zcdp(rho) -> float:
    """A ρ-zCDP claim (Bun & Steinke 2016; docs/theory.md §8): ρ must be a finite number > 0."""
    try:
        value = float(rho)
    except (TypeError, ValueError):
        raise InvalidClaimError(f"a zCDP claim is a number rho > 0, got {rho!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise InvalidClaimError(f"a zCDP claim needs a finite rho > 0, got {rho!r}")
    return value


ZCDP_DEFAULT_DELTA = 1e-6  # δ of the (ε, δ) claim a ρ-zCDP claim implies, when none is given


def validate_zcdp_delta(delta) -> float:
    """The δ of the (ε, δ) claim a ρ-zCDP claim implies: a number in (0, 1) (ln(1/δ) must be
    finite); None → ZCDP_DEFAULT_DELTA."""
    if delta is None:
        return ZCDP_DEFAULT_DELTA
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise InvalidClaimError(f"delta must be a number in (0, 1), got {delta!r}") from None
    if not 0.0 < value < 1.0:
        raise InvalidClaimError(f"a zCDP audit needs the implied claim's delta in (0, 1) "
                                f"(ρ-zCDP ⇒ (ρ + 2√(ρ ln 1/δ), δ)-DP), got {delta!r}")
    return value


def validate_samples(samples) -> int | None:
    """A sample size: None, or an integer ≥ 100 (certifying runs per input)."""
    if samples is None:
        return None
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 100:
        raise InvalidClaimError(f"samples must be an integer ≥ 100 (runs per input), got "
                                f"{samples!r}")
    return int(samples)


def is_batched(fn: Callable) -> bool:
    """A mechanism is batched when its signature has a `size` parameter: f(data, rng, size)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        raise MechanismError(f"cannot read the signature of {fn!r}; define it as f(data, rng) "
                             "or f(data, rng, size)")
    if "size" in params:
        return True
    positional = [p for p in params.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    if len(positional) < 2 and not any(p.kind == p.VAR_POSITIONAL for p in params.values()):
        raise MechanismError(f"{getattr(fn, '__name__', fn)!r} must accept (data, rng) or "
                             "(data, rng, size); all randomness must come from rng")
    return False


@dataclass(frozen=True)
class Mechanism:
    """A mechanism under audit: the function, its form, and the claim declared with it."""

    fn: Callable
    name: str
    epsilon: float | None = None
    delta: float = 0.0
    pairs: Any = None
    batched: bool = False
    exact_tradeoff: Callable | None = None  # α ↦ β of the true trade-off curve, for reports
    rdp: tuple | None = None  # (alpha, rho): a Rényi-DP claim instead of (epsilon, delta)
    floating_point: bool = False  # the claim covers the exact float outputs, bit for bit
    # "rng": all noise comes from the engine's generator (reproducible, common random numbers
    # allowed); "own": the mechanism draws from its own generator (validate_randomness)
    randomness: str = "rng"
    zcdp: float | None = None  # rho: a rho-zCDP claim instead of (epsilon, delta)
    # the audit's default `samples` for this mechanism (certifying runs per input at the last
    # stage); None: the engine's default for its form (options.default_samples)
    samples: int | None = None
    # where the engine runs its chunks unless audit(backend=...) says: None for the form's
    # default (threads for batched mechanisms, whose numpy draws release the GIL; loky worker
    # processes for scalar ones); "loky" for a batched mechanism whose library calls hold it
    backend: str | None = None
    # a curve claim instead of (epsilon, delta): a dpverify.fdp.CurveClaim (μ-GDP, a trade-off
    # function or a privacy profile), audited by dpverify.fdp.audit_curve
    curve: Any = field(default=None, compare=False)
    # a decorator whose arguments (or whose function's signature) cannot be audited: the error,
    # naming the mechanism, that every audit of it raises (`as_mechanism`). Recorded instead of
    # raised at import so that one bad declaration does not make its whole file unloadable.
    declaration_error: DpVerifyError | None = field(default=None, compare=False, repr=False)

    @property
    def draws_own_randomness(self) -> bool:
        """True when the mechanism ignores `rng`: runs are independent but not reproducible."""
        return self.randomness == "own"

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def as_mechanism(fn, name: str | None = None) -> Mechanism:
    """Wrap a plain function (or pass a Mechanism through)."""
    if isinstance(fn, Mechanism):
        if fn.declaration_error is not None:
            error = fn.declaration_error
            raise type(error)(str(error))
        return fn
    if not callable(fn):
        raise MechanismError(f"the mechanism must be callable, got {type(fn).__name__}")
    return Mechanism(fn=fn, name=name or getattr(fn, "__qualname__", getattr(fn, "__name__", "mechanism")),
                     batched=is_batched(fn))


def _defined_at(fn) -> str:
    """' (file.py:line)' where the function (its first decorator) is defined, else ''."""
    try:
        code = getattr(inspect.unwrap(fn), "__code__", None)
    except ValueError:  # a __wrapped__ cycle
        return ""
    if code is None:
        return ""
    filename = code.co_filename
    try:
        cwd = os.getcwd() + os.sep
    except OSError:
        cwd = None
    if cwd and filename.startswith(cwd):
        filename = filename[len(cwd):]
    return f" ({filename}:{code.co_firstlineno})"


def mechanism(epsilon=None, delta=0.0, pairs=None, name: str | None = None,
              exact_tradeoff: Callable | None = None, rdp=None, floating_point: bool = False,
              randomness: str = "rng", zcdp=None, samples: int | None = None,
              gdp=None, tradeoff=None, profile=None):
    """Declare that the decorated function is (epsilon, delta)-DP on the given neighbouring pairs.

    The function is either scalar, ``f(data, rng) -> output``, or batched,
    ``f(data, rng, size) -> outputs`` with the first axis (or list index) the sample.
    ``rng`` is a ``numpy.random.Generator``; all randomness must come from it, unless
    ``randomness="own"`` declares that the mechanism draws from its own generator (a library's
    or a cryptographic one that cannot be seeded). Such audits stay sound (every run is an
    independent draw) but are not reproducible: the same seed may give another bound, and the
    certificates that need shared seeds (common random numbers) are switched off.
    ``zcdp=rho`` declares a rho-zCDP claim instead (audited by ``dpverify.zcdp``).
    ``samples``: the audit's default budget for this mechanism, in certifying runs per input
    at the last stage (e.g. smaller for a mechanism whose every call costs milliseconds);
    ``audit(samples=...)`` and the command line's ``--samples`` still override it.
    ``rdp=(alpha, rho)`` declares a Rényi-DP claim instead (audited by ``audit_rdp``).
    A whole curve can be the claim instead (audited by ``dpverify.fdp.audit_curve``):
    ``gdp=mu`` (μ-Gaussian DP), ``tradeoff=f`` (f-DP: every test of D′ against D with
    false-positive rate α has false-negative rate ≥ f(α)) or ``profile=delta_of`` ((ε,
    delta_of(ε))-DP for every ε ≥ 0, e.g. an accountant's curve: ``dpverify.libraries.
    accountants``).
    ``exact_tradeoff``, optional: the mechanism's known trade-off curve (e.g.
    ``dpverify.region.laplace_tradeoff(1.0)``), drawn in reports; the audit never uses it.
    ``floating_point=True``: the claim is about the outputs exactly as computed in floating
    point, not about the real-valued mechanism the code approximates. The audit then also
    attacks bit-level structure (which binade an output lies in and how many trailing zero bits
    its mantissa has), where textbook floating-point noise leaks (Mironov, CCS 2012). Off by
    default: nearly every float implementation of Laplace or Gaussian noise fails such an audit
    with ε = ∞, which would hide the real-valued analysis most audits are after.

    Arguments that cannot be audited (epsilon ≤ 0, delta outside [0, 1), two claims, a bad
    ``samples=`` or ``randomness=``, a function without (data, rng) parameters) do not raise at
    import: the Mechanism records the error, naming the function and where it is defined, and
    every audit of it raises that error (InvalidClaimError, or MechanismError for the
    signature). The other mechanisms of the same file stay auditable.
    """
    claim, problem = _validated_claim(epsilon, delta, rdp, randomness, samples, zcdp,
                                      dict(gdp=gdp, tradeoff=tradeoff, profile=profile))

    def wrap(fn):
        return _declare(fn, name, problem, pairs=pairs, exact_tradeoff=exact_tradeoff,
                        floating_point=floating_point, **claim)

    return wrap


def _validated_claim(epsilon, delta, rdp, randomness, samples, zcdp,
                     curve) -> tuple[dict, InvalidClaimError | None]:
    """The decorator's claim arguments, validated, and None; or, when they cannot be audited,
    the defaults (no claim, delta 0, randomness "rng", no samples) and the InvalidClaimError.

    Not raised here: the decorator does not know the function's name yet, and raising at
    import would make every other mechanism of the file unloadable. `_declare` records it."""
    try:
        if epsilon is not None:
            epsilon, delta = validate_claim(epsilon, delta)
        if rdp is not None:
            from .renyi import validate_rdp
            rdp = validate_rdp(rdp)
        randomness = validate_randomness(randomness)
        samples = validate_samples(samples)
        if zcdp is not None:
            zcdp = validate_zcdp(zcdp)
        if any(value is not None for value in curve.values()):
            from .curve_claim import curve_claim  # scipy.stats: only for curve claims
            curve = curve_claim(**curve)
        else:
            curve = None
        if sum(claim is not None for claim in (epsilon, rdp, zcdp, curve)) > 1:
            raise InvalidClaimError("declare one claim per mechanism: epsilon= (with delta=), "
                                    "rdp=(alpha, rho), zcdp=rho, gdp=mu, tradeoff=f or "
                                    "profile=delta_of")
        problem = None
    except InvalidClaimError as exc:
        problem = exc
        epsilon = rdp = zcdp = samples = curve = None
        delta, randomness = 0.0, "rng"
    return dict(epsilon=epsilon, delta=delta, rdp=rdp, randomness=randomness, samples=samples,
                zcdp=zcdp, curve=curve), problem


def _declare(fn, name, problem, *, epsilon, delta, pairs, exact_tradeoff, rdp, floating_point,
             randomness, zcdp, samples, curve) -> Mechanism:
    """The Mechanism `@mechanism(...)` makes of `fn`, carrying `fn`'s name, docstring and
    module. A declaration that cannot be audited (`problem`, or a signature without (data,
    rng)) is recorded as its `declaration_error`, naming the function and where it is defined."""
    mech_name = name or getattr(fn, "__name__", type(fn).__name__)
    error = problem
    try:
        batched = is_batched(fn)
    except MechanismError as exc:
        batched, error = False, error or exc
    if error is not None:
        error = type(error)(f"invalid @dpverify.mechanism declaration of {mech_name!r}"
                            f"{_defined_at(fn)}: {error}")
    mech = Mechanism(fn=fn, name=mech_name,
                     epsilon=epsilon, delta=float(delta),
                     pairs=pairs, batched=batched, exact_tradeoff=exact_tradeoff,
                     rdp=rdp, floating_point=bool(floating_point), randomness=randomness,
                     zcdp=zcdp, samples=samples, curve=curve, declaration_error=error)
    for attr in ("__doc__", "__module__", "__qualname__"):
        object.__setattr__(mech, attr, getattr(fn, attr, None))
    object.__setattr__(mech, "__wrapped__", fn)
    return mech
