"""Drawing a diffprivlib mechanism's noise from the engine's `rng`.

diffprivlib mechanisms draw from `self._rng`, which `random_state=None` (the default) makes a
`secrets.SystemRandom`, an int or RandomState a `numpy.random.RandomState`, and Staircase and
Bingham a `numpy.random.Generator`. The adapter keeps the instance's kind of generator
(`generator_kind`), so the code path audited is the one the instance runs, and only makes it
draw from the engine's `rng` (`seeded_view`): a SystemRandom whose `random()` and
`getrandbits()` come from `rng`, a RandomState sharing `rng`'s bit generator, or `rng` itself.
All three give the same distribution as the library's own generator (uniform doubles on
multiples of 2^-53, uniform bits), and the same seed gives the same outputs.

The runners (`SeededRandomise` and its two variants) keep one copy of the mechanism per thread,
rebound when a chunk hands it a new `rng`, so a call costs one identity check on top of the
library's own work.
"""
from __future__ import annotations

import copy
import random
import threading

import numpy as np

from ...errors import DpVerifyError


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


def innermost(machine):
    """The DPMechanism at the end of a chain of diffprivlib DPTransformers."""
    while hasattr(machine, "parent"):
        machine = machine.parent
    return machine


def generator_kind(mech) -> str:
    """Which kind of generator the instance draws from: "system", "legacy" or "generator"."""
    import secrets
    rng = innermost(mech)._rng
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
        innermost(local.mech)._rng = local.view
        for mech in local.mechs.values():
            innermost(mech)._rng = local.view
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
