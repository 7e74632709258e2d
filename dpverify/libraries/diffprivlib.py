"""Audit IBM's diffprivlib: its mechanisms (`from_mechanism`) and its bounded tools and models
(`from_tool`), with the claim read from the library object and neighbouring pairs built from
what the library says about its inputs.

    from diffprivlib.mechanisms import LaplaceBoundedDomain
    from dpverify.libraries import diffprivlib as dpl
    m = dpl.from_mechanism(LaplaceBoundedDomain(epsilon=1, sensitivity=1, lower=0, upper=4))
    dpverify.audit(m)

Seeding: diffprivlib mechanisms draw from `self._rng`, which `random_state=None` (the default)
makes a `secrets.SystemRandom`, an int or RandomState a `numpy.random.RandomState`, and
Staircase and Bingham a `numpy.random.Generator`. The adapter keeps the instance's kind of
generator, so the code path audited is the one the instance runs, and only makes it draw from
the engine's `rng`: a SystemRandom whose `random()` and `getrandbits()` come from `rng`, a
RandomState sharing `rng`'s bit generator, or `rng` itself. All three give the same
distribution as the library's own generator (uniform doubles on multiples of 2^-53, uniform
bits), and the same seed gives the same outputs. Each thread keeps its own copy of the
mechanism, rebound when a chunk hands it a new `rng`, so a call costs one identity check on
top of the library's own work. Tools and models are given `random_state=RandomState(rng's
bit generator)`, diffprivlib's documented way to seed them.

diffprivlib itself is imported on first use (it pulls in scikit-learn: about a second).
"""
from __future__ import annotations

import copy
import inspect
import math
import random
import threading
import warnings

import numpy as np

from ..errors import DpVerifyError, InvalidPairsError
from ..mechanism import Mechanism, validate_claim
from ..pairs import all_differ
from . import require

# Uniform claims (0, δ)-DP, which cannot be audited by sampling (ε must be > 0). It implies
# (ε, δ)-DP for every ε > 0: the adapter audits (UNIFORM_EPSILON, δ), nearly the claim itself.
UNIFORM_EPSILON = 1e-3
# Tools whose noise is calibrated to one record added or removed (a histogram's counts move by
# at most 1 in one bin); every other tool calibrates to the dataset size n and is audited on
# datasets of the same size with one record replaced.
ADD_REMOVE_TOOLS = ("histogram", "histogramdd", "histogram2d")
NEIGHBOURING = ("replace", "add_remove")
MAX_CATEGORICAL_PAIRS = 12


def _require_diffprivlib():
    """Import diffprivlib, or raise a DpVerifyError saying how to install it."""
    return require("diffprivlib", "diffprivlib", "diffprivlib 0.6 (and scikit-learn < 1.8)")


# --------------------------------------------------------------------------- seeding ---

class EngineSystemRandom(random.SystemRandom):
    """A `secrets.SystemRandom` whose draws come from a seeded numpy Generator.

    diffprivlib's default generator is a SystemRandom; keeping the class keeps the library's
    code path (`normalvariate`, `getrandbits`, `bernoulli_neg_exp`'s isinstance check) while
    making every draw reproducible. `random()` is the Generator's bound method (53-bit doubles,
    as SystemRandom's), so it costs no more than calling the Generator directly."""

    def __init__(self, generator: np.random.Generator):
        super().__init__()
        self.random = generator.random  # instance attribute: shadows SystemRandom.random
        self._generator = generator

    def getrandbits(self, k: int) -> int:
        """k uniform random bits as a non-negative int, as random.getrandbits."""
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        n = (k + 7) // 8
        return int.from_bytes(self._generator.bytes(n), "little") >> (8 * n - k)


def _innermost(machine):
    """The DPMechanism at the end of a chain of diffprivlib DPTransformers."""
    while hasattr(machine, "parent"):
        machine = machine.parent
    return machine


def generator_kind(mech) -> str:
    """Which kind of generator the instance draws from: "system", "legacy" or "generator"."""
    import secrets
    rng = _innermost(mech)._rng
    if isinstance(rng, secrets.SystemRandom):
        return "system"
    if isinstance(rng, np.random.RandomState):
        return "legacy"
    if isinstance(rng, np.random.Generator):
        return "generator"
    raise DpVerifyError(f"{type(mech).__name__} draws from a {type(rng).__name__}; the adapter "
                        "can seed SystemRandom, RandomState or Generator")


def seeded_view(kind: str, rng: np.random.Generator):
    """A generator of the given kind whose every draw comes from the engine's `rng`."""
    if kind == "system":
        return EngineSystemRandom(rng)
    if kind == "legacy":
        return np.random.RandomState(rng.bit_generator)  # shares rng's state: no reseeding
    return rng


def _template(mech):
    """A private deep copy of the instance (and its transformer chain) without its generator:
    a SystemRandom can be neither deep-copied nor pickled to loky workers, and every thread
    binds its own seeded one before use. The caller's instance is left untouched."""
    top = copy.copy(mech)
    node = top
    while hasattr(node, "parent"):
        node.parent = copy.copy(node.parent)
        node = node.parent
    node._rng = None
    return copy.deepcopy(top)


class SeededRandomise:
    """f(data, rng) = mech.randomise(data), with the mechanism's generator drawing from `rng`.

    Each thread keeps a private copy of the mechanism; when a chunk hands it a new `rng`, the
    copy's generator is replaced by a seeded view of that `rng` (`seeded_view`). Pickles
    without its thread-local state, for loky workers."""

    def __init__(self, mech, kind: str, convert=None):
        self.template = _template(mech)
        self.kind = kind
        self.convert = convert  # float or int: one output type (truncation returns the bound)
        self._local = threading.local()

    def __getstate__(self):
        return {"template": self.template, "kind": self.kind, "convert": self.convert}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._local = threading.local()

    def _bind(self, local, rng):
        """Point this thread's copies at a seeded view of `rng` (first call: make the copy)."""
        if not hasattr(local, "mechs"):
            local.mechs = {}
            local.mech = copy.deepcopy(self.template)
        local.view = seeded_view(self.kind, rng)
        _innermost(local.mech)._rng = local.view
        for mech in local.mechs.values():
            _innermost(mech)._rng = local.view
        local.rng = rng

    def __call__(self, data, rng):
        """One run of the mechanism on `data`, drawing from `rng`."""
        local = self._local
        if getattr(local, "rng", None) is not rng:  # a new chunk (or a new thread)
            self._bind(local, rng)
        out = local.mech.randomise(data)
        return out if self.convert is None else self.convert(out)


class SeededUtilitySelect(SeededRandomise):
    """Exponential / PermuteAndFlip: the input is the utility vector, fixed in the instance, so
    each thread keeps one copy per utility vector seen, with its probabilities recomputed."""

    def _mechanism(self, local, data):
        """This thread's copy of the mechanism for utility vector `data`."""
        key = tuple(float(u) for u in data)
        mech = local.mechs.get(key)
        if mech is None:
            mech = copy.deepcopy(self.template)
            mech.utility = list(key)
            mech._check_utility_candidates_measure(mech.utility, mech.candidates, mech.measure)
            mech._probabilities = type(mech)._find_probabilities(
                mech.epsilon, mech.sensitivity, mech.utility, mech.monotonic, mech.measure)
            mech._rng = local.view
            local.mechs[key] = mech
        return mech

    def __call__(self, data, rng):
        """One selection with utility vector `data`, drawing from `rng`."""
        local = self._local
        if getattr(local, "rng", None) is not rng:
            self._bind(local, rng)
        return self._mechanism(local, data).randomise(None)


class SeededVectorMinimiser(SeededRandomise):
    """Vector: the input is an objective f(w) (or f(w) -> (value, gradient)); the released
    output is the minimiser of the perturbed objective (objective perturbation, Chaudhuri et
    al. 2011), which is what the Vector mechanism's privacy guarantee is about."""

    def __call__(self, data, rng):
        """The minimiser of objective `data` perturbed with noise drawn from `rng`."""
        from scipy.optimize import minimize
        perturbed = super().__call__(data, rng)
        start = np.zeros(self.template.dimension)
        with_grad = isinstance(perturbed(start), tuple)
        return tuple(minimize(perturbed, start, jac=with_grad).x.tolist())


# ------------------------------------------------------------------- mechanisms ---

def mechanism_claim(mech) -> tuple[float, float]:
    """The (epsilon, delta) the instance claims (of the innermost mechanism of a transformer
    chain). Uniform claims (0, δ): audited as (UNIFORM_EPSILON, δ), which it implies."""
    inner = _innermost(mech)
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
    """Neighbouring inputs for a diffprivlib mechanism (see the module docstring of each rule),
    or InvalidPairsError when there is no neighbouring notion to construct honestly."""
    from diffprivlib import mechanisms as m
    from diffprivlib.mechanisms.transforms import DPTransformer
    if isinstance(mech, DPTransformer):
        raise InvalidPairsError(f"{type(mech).__name__} transforms its inputs before "
                                f"{type(_innermost(mech)).__name__} sees them: pass pairs= in "
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
    if mech is not _innermost(mech):
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
    _require_diffprivlib()
    from diffprivlib.mechanisms import DPMachine, Exponential, Vector
    if not isinstance(mech, DPMachine):
        raise DpVerifyError(f"from_mechanism takes a diffprivlib.mechanisms instance, got "
                            f"{type(mech).__name__}; for tools and models use from_tool")
    epsilon, delta = mechanism_claim(mech)
    if pairs is None:
        pairs = mechanism_pairs(mech)
    inner = _innermost(mech)
    runner = (SeededUtilitySelect if isinstance(inner, Exponential) and inner is mech
              else SeededVectorMinimiser if isinstance(inner, Vector) and inner is mech
              else SeededRandomise)
    fn = runner(mech, generator_kind(mech), _output_type(mech))
    return Mechanism(fn=fn, name=name or _describe(mech), epsilon=epsilon, delta=delta,
                     pairs=pairs, batched=False)


# ------------------------------------------------------------------ tools, models ---

_UNRECORDED = None


def _unrecorded_accountant():
    """A BudgetAccountant that checks nothing and records nothing: the default accountant
    would keep one entry per run (memory grows with the audit). Accounting never affects the
    output distribution."""
    global _UNRECORDED
    if _UNRECORDED is None:
        from diffprivlib.accountant import BudgetAccountant

        class UnrecordedAccountant(BudgetAccountant):
            def spend(self, epsilon, delta):
                return self

        _UNRECORDED = UnrecordedAccountant()
    return _UNRECORDED


def histogram_counts(result) -> tuple:
    """histogram* return (counts, edges): the counts are the release."""
    return tuple(np.ravel(result[0]).tolist())


def numbers(result):
    """A scalar result as a Python number, an array as a flat tuple."""
    arr = np.asarray(result)
    return arr.item() if arr.ndim == 0 else tuple(arr.ravel().tolist())


def coefficients(model) -> tuple:
    """A fitted linear model's release: coef_ then intercept_, flattened."""
    return tuple(np.ravel(model.coef_).tolist()) + tuple(np.ravel(model.intercept_).tolist())


def naive_bayes_parameters(model) -> tuple:
    """A fitted GaussianNB's release: per-class means, variances and noisy class counts."""
    return (tuple(np.ravel(model.theta_).tolist()) + tuple(np.ravel(model.var_).tolist())
            + tuple(np.ravel(model.class_count_).tolist()))


def _default_output(tool, is_model):
    """What a tool or fitted model releases, as numbers (see from_tool)."""
    name = tool.__name__
    if name in ADD_REMOVE_TOOLS:
        return histogram_counts
    if not is_model:
        return numbers
    if name in ("LinearRegression", "LogisticRegression"):
        return coefficients
    if name == "GaussianNB":
        return naive_bayes_parameters
    raise DpVerifyError(f"which attributes of a fitted {name} are released? pass output=f, "
                        "f(fitted_model) -> a number or a tuple of numbers")


class ToolRun:
    """f(data, rng): run a diffprivlib tool (or fit a model on data = (X, y)) with
    `random_state` a RandomState sharing `rng`'s bit generator, and return `output(result)`."""

    def __init__(self, tool, epsilon, call_kwargs, output, is_model):
        self.tool, self.epsilon, self.output, self.is_model = tool, epsilon, output, is_model
        self.call_kwargs = call_kwargs

    def __call__(self, data, rng):
        """One run of the tool on dataset `data` (one fit on (X, y)), drawing from `rng`."""
        kwargs = {"accountant": _unrecorded_accountant(), **self.call_kwargs,
                  "epsilon": self.epsilon, "random_state": np.random.RandomState(rng.bit_generator)}
        if self.is_model:
            X, y = data
            with warnings.catch_warnings():  # a degenerate fit's optimiser overflows, per run
                warnings.simplefilter("ignore", RuntimeWarning)
                return self.output(self.tool(**kwargs).fit(X, y))
        return self.output(self.tool(data, **kwargs))


def _bound_kwargs(name: str, bounds) -> dict:
    """How each tool is told its bounds: histograms take `range`, LinearRegression takes
    bounds=(bounds_X, bounds_y), the rest `bounds`."""
    if bounds is None:
        return {}
    if name in ADD_REMOVE_TOOLS:
        return {"range": bounds}
    if name == "LinearRegression":
        bounds_X, bounds_y = bounds
        return {"bounds_X": bounds_X, "bounds_y": bounds_y}
    return {"bounds": bounds}


def _replacements(records, lower, upper) -> list:
    """[(i, corner)]: for each corner of the bounds (all lower, all upper), the index of the
    record farthest from it (in units of the range), unless every record sits on it."""
    lo = np.broadcast_to(np.asarray(lower, dtype=float), records.shape[1:])
    hi = np.broadcast_to(np.asarray(upper, dtype=float), records.shape[1:])
    span = np.where(hi > lo, hi - lo, 1.0)
    out = []
    for corner in (lo, hi):
        far = (np.abs(records - corner) / span).reshape(len(records), -1).sum(axis=1)
        i = int(np.argmax(far))
        if far[i] > 0:
            out.append((i, corner))
    return out


def replace_pairs(records, lower, upper) -> list:
    """Same-size neighbours: for each corner of the bounds (all lower, all upper), the record
    farthest from it replaced by it. `records` has one record per row (or per entry)."""
    records = np.asarray(records, dtype=float)
    pairs = []
    for i, corner in _replacements(records, lower, upper):
        other = records.copy()
        other[i] = corner
        pairs.append((records, other))
    return pairs


def add_remove_pairs(records, lower, upper) -> list:
    """Neighbours one record apart in size: a record added at each bound, and the first one
    removed."""
    records = np.asarray(records, dtype=float)
    pairs = [(records, np.append(records, [float(b)])) for b in (lower, upper)]
    if len(records) > 1:
        pairs.append((records, records[1:]))
    return pairs


def _logistic_pairs(X, y, data_norm) -> list:
    """LogisticRegression bounds records by norm (`data_norm`), not by box: a record replaced by
    ±data_norm·e1 with the other label (when its own label keeps another member)."""
    if data_norm is None:
        raise InvalidPairsError("LogisticRegression bounds each record by its norm: pass "
                                "data_norm= (without it diffprivlib takes the norm from the "
                                "data, which is not differentially private) or pairs=")
    labels, pairs = list(np.unique(y)), []
    for sign in (1.0, -1.0):
        corner = np.zeros(X.shape[1])
        corner[0] = sign * float(data_norm)
        i = int(np.argmax(np.linalg.norm(X - corner, axis=1)))
        X2, y2 = X.copy(), y.copy()
        X2[i] = corner
        others = [label for label in labels if label != y[i]]
        if others and np.count_nonzero(y == y[i]) > 1:
            y2[i] = others[0]
        pairs.append(((X, y), (X2, y2)))
    return pairs


def _model_pairs(name, data, bounds, kwargs) -> list:
    """Replace-one neighbours of a training set (X, y): a row moved to a corner of the bounds
    (LinearRegression: its target to the bound as well; classifiers: see _classifier_pairs)."""
    X, y = np.asarray(data[0], dtype=float), np.asarray(data[1])
    if name == "LogisticRegression":
        return _logistic_pairs(X, y, kwargs.get("data_norm"))
    if bounds is None:
        raise InvalidPairsError(f"{name}: pass bounds= (without them diffprivlib takes the "
                                "bounds from the data, which is not differentially private) "
                                "or pairs=[((X, y), (X2, y2)), ...]")
    if name == "LinearRegression":
        (x_lo, x_hi), (y_lo, y_hi) = bounds
        d = X.shape[1]
        lo = np.append(np.broadcast_to(np.asarray(x_lo, dtype=float), d), float(y_lo))
        hi = np.append(np.broadcast_to(np.asarray(x_hi, dtype=float), d), float(y_hi))
        records = np.column_stack([X, y.astype(float)])
        return [((X, y), (o[:, :-1], o[:, -1])) for _, o in replace_pairs(records, lo, hi)]
    return _classifier_pairs(X, y, *bounds)


def _classifier_pairs(X, y, lower, upper) -> list:
    """A row moved to a corner of the bounds, keeping its label, and again with its label
    changed to another class (when its own class keeps a member, so the classes stay the
    same): replacing a record (x, y) may change both."""
    labels, pairs = list(np.unique(y)), []
    for i, corner in _replacements(X, lower, upper):
        X2 = X.copy()
        X2[i] = corner
        pairs.append(((X, y), (X2, y)))
        others = [label for label in labels if label != y[i]]
        if others and np.count_nonzero(y == y[i]) > 1:
            y2 = y.copy()
            y2[i] = others[0]
            pairs.append(((X, y), (X2, y2)))
    return pairs


def tool_pairs(name, data, bounds, neighbouring, is_model, kwargs) -> list:
    """Neighbouring datasets for a tool or model, at the extremes its bounds allow."""
    if is_model:
        pairs = _model_pairs(name, data, bounds, kwargs)
    else:
        if name == "count_nonzero":  # counts truthy entries: bounds (0, 1)
            bounds = (0.0, 1.0)
        if bounds is None:
            raise InvalidPairsError(f"{name}: pass bounds= (without them diffprivlib takes the "
                                    "bounds from the data, which is not differentially "
                                    "private) or pairs=[(D, D2), ...]")
        build = replace_pairs if neighbouring == "replace" else add_remove_pairs
        pairs = build(data, *bounds)
    if not pairs:
        raise InvalidPairsError(f"{name}: no record can move to a bound (all records already sit "
                                "at both bounds?); pass pairs=")
    return pairs


def from_tool(tool, data, epsilon, bounds=None, name=None, pairs=None, output=None, *,
              neighbouring=None, **kwargs) -> Mechanism:
    """A dpverify Mechanism running a diffprivlib tool on a dataset, or fitting a model.

    tool: a function of `diffprivlib.tools` (mean, var, std, sum, nanmean, median, quantile,
    histogram, count_nonzero, ...) called as tool(D, epsilon=, bounds=, random_state=,
    **kwargs); or a class of `diffprivlib.models` (GaussianNB, LinearRegression with
    bounds=(bounds_X, bounds_y), LogisticRegression with data_norm=) fitted on D = (X, y).
    The claim is (epsilon, 0): no 0.6 tool or model takes a delta.
    Neighbours: diffprivlib calibrates every tool but the histograms to the dataset size n
    (mean: (upper − lower)/n; sum and count_nonzero truncate to [n·lower, n·upper]), i.e.
    same-size datasets with one record replaced: `neighbouring="replace"`, the record farthest
    from a bound moved to it. Histograms add 1-sensitivity noise per bin: one record added at a
    bound or removed (`"add_remove"`). Pass `neighbouring=` to choose, or pairs= (then `data`
    is unused). output: f(result) -> the audited release (default: histogram counts, a scalar,
    a model's coef_ and intercept_, GaussianNB's theta_, var_ and class_count_).
    """
    _require_diffprivlib()
    eps, _ = validate_claim(epsilon, 0.0)
    is_model = inspect.isclass(tool) and hasattr(tool, "fit")
    tool_name = getattr(tool, "__name__", type(tool).__name__)
    neighbouring = neighbouring or ("add_remove" if tool_name in ADD_REMOVE_TOOLS else "replace")
    if neighbouring not in NEIGHBOURING:
        raise InvalidPairsError(f"neighbouring must be one of {NEIGHBOURING}, got "
                                f"{neighbouring!r}")
    if pairs is None:
        pairs = tool_pairs(tool_name, data, bounds, neighbouring, is_model, kwargs)
    call_kwargs = {**_bound_kwargs(tool_name, bounds), **kwargs}
    runner = ToolRun(tool, eps, call_kwargs, output or _default_output(tool, is_model), is_model)
    module = "models" if is_model else "tools"
    default = f"diffprivlib.{module}.{tool_name}(epsilon={eps:g}, bounds={bounds!r})"
    return Mechanism(fn=runner, name=name or default[:120], epsilon=eps, delta=0.0,
                     pairs=pairs, batched=False)


__all__ = ["from_mechanism", "from_tool", "mechanism_claim", "mechanism_pairs", "tool_pairs",
           "bounded_pairs", "replace_pairs", "add_remove_pairs", "EngineSystemRandom",
           "seeded_view", "generator_kind", "UNIFORM_EPSILON"]
