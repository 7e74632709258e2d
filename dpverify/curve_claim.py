"""A claim that is a whole curve (docs/theory.md §9): μ-Gaussian DP, a trade-off function f
(f-DP), or a privacy profile δ(ε). Each is read once into a `CurveClaim`, which answers the
questions an audit asks of it: the trade-off f(α) it promises, the profile δ(ε) it promises,
and its ε at a given δ.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .errors import InvalidClaimError
from .tradeoff import (ALPHA_GRID, DELTA_GRID, EPSILON_GRID, gdp_profile, gdp_tradeoff,
                    profile_tradeoff, tradeoff_profile)

GDP, TRADEOFF, PROFILE = "gdp", "tradeoff", "profile"
TOLERANCE = 1e-9   # slack allowed when checking that a curve is monotone and in range


@dataclass(frozen=True)
class CurveClaim:
    """One curve claim. `kind` is GDP (`mu` set), TRADEOFF (`function` = f) or PROFILE
    (`function` = δ, read at `epsilons` into `deltas`). `name` says where it came from (an
    accountant's event, say) for reports."""

    kind: str
    mu: float | None = None
    function: Callable | None = field(default=None, compare=False, repr=False)
    epsilons: tuple = field(default=(), repr=False)
    deltas: tuple = field(default=(), repr=False)
    name: str = ""

    def __post_init__(self):
        # the claim's ε at each δ of DELTA_GRID, read once (`epsilons_at_deltas`)
        values = np.asarray(self.profile(EPSILON_GRID), float)
        first = np.searchsorted(-values, -DELTA_GRID, side="left")  # first ε with δ(ε) ≤ δ
        padded = np.append(EPSILON_GRID, np.inf)
        object.__setattr__(self, "_epsilons_at_deltas", padded[first])

    def __getstate__(self):
        # a profile is kept as its values on the grid; its function (an accountant, or a
        # library object that cannot be pickled) stays behind when a mechanism goes to a
        # worker process
        state = dict(self.__dict__)
        if self.kind == PROFILE:
            state["function"] = None
        return state

    @property
    def epsilons_at_deltas(self) -> np.ndarray:
        """The claim's ε at each δ of DELTA_GRID: the least grid ε with δ(ε) ≤ δ (∞ if
        none)."""
        return self._epsilons_at_deltas

    def tradeoff(self, alpha):
        """f(α): the smallest β the claim allows at false-positive rate α."""
        if self.kind == GDP:
            return gdp_tradeoff(self.mu, alpha)
        if self.kind == TRADEOFF:
            return np.clip(np.asarray(self.function(np.asarray(alpha, float)), float), 0.0, 1.0)
        return profile_tradeoff(self.epsilons, self.deltas, alpha)

    def profile(self, epsilon):
        """δ(ε): the smallest δ with which the claim says the mechanism is (ε, δ)-DP (for a
        trade-off claim, read on an α grid: at most the true value)."""
        if self.kind == GDP:
            return gdp_profile(self.mu, epsilon)
        if self.kind == TRADEOFF:
            return tradeoff_profile(self.tradeoff, epsilon)
        return np.interp(np.asarray(epsilon, float), self.epsilons, self.deltas,
                         right=self.deltas[-1])

    def epsilon_at(self, delta: float) -> float:
        """The claim's ε at δ: the least grid ε whose profile is ≤ δ (∞ if none)."""
        values = np.asarray(self.profile(EPSILON_GRID), float)
        within = np.nonzero(values <= delta)[0]
        return float(EPSILON_GRID[within[0]]) if within.size else math.inf

    def text(self) -> str:
        """The claim in words, e.g. "μ=1-GDP" or "the privacy profile of <name>"."""
        if self.kind == GDP:
            return f"μ={self.mu:g}-GDP"
        what = "trade-off curve" if self.kind == TRADEOFF else "privacy profile"
        return f"the {what} of {self.name}" if self.name else f"a {what}"

    def as_dict(self) -> dict:
        out = {"curve": self.kind, "name": self.name}
        if self.kind == GDP:
            out["gdp_mu"] = self.mu
        return out


def validate_gdp(mu) -> float:
    """A μ-GDP claim (Dong, Roth & Su 2022; docs/theory.md §9): μ must be a finite number > 0."""
    if isinstance(mu, bool):
        raise InvalidClaimError(f"a GDP claim is a number mu > 0, got {mu!r}")
    try:
        value = float(mu)
    except (TypeError, ValueError):
        raise InvalidClaimError(f"a GDP claim is a number mu > 0, got {mu!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise InvalidClaimError(f"a GDP claim needs a finite mu > 0, got {mu!r}")
    return value


def gdp_claim(mu, name: str = "") -> CurveClaim:
    """A μ-GDP claim (`validate_gdp`: μ a finite number > 0)."""
    return CurveClaim(GDP, mu=validate_gdp(mu), name=name)


def tradeoff_claim(f, name: str = "") -> CurveClaim:
    """An f-DP claim: f maps α in [0, 1] to the least β it allows. Checked on a grid of α: it
    must return finite numbers in [0, 1], never increase, and stay at or below 1 − α (the test
    that ignores the output reaches 1 − α, so no mechanism meets a curve above it)."""
    if not callable(f):
        raise InvalidClaimError(f"tradeoff= must be a function alpha -> beta, got {f!r}")
    beta = _read(f, ALPHA_GRID, "tradeoff", "alpha")
    bad = np.nonzero(beta > 1.0 - ALPHA_GRID + TOLERANCE)[0]
    if bad.size:
        a = ALPHA_GRID[bad[0]]
        raise InvalidClaimError(f"tradeoff(alpha) must be at most 1 - alpha (a test that "
                                f"ignores the output has beta = 1 - alpha), got f({a:g}) = "
                                f"{beta[bad[0]]:g}")
    _check_falls(beta, ALPHA_GRID, "tradeoff", "alpha")
    return CurveClaim(TRADEOFF, function=f, name=name or _name_of(f))


def profile_claim(delta_of, name: str = "") -> CurveClaim:
    """A privacy-profile claim: delta_of(ε) is the δ at which the mechanism is claimed
    (ε, δ)-DP, for every ε ≥ 0. It is read at the fixed grid EPSILON_GRID (numbers in [0, 1]
    that never increase); the audit tests the curve those points promise, which never flags what
    the whole profile allows (theory.md §9.2)."""
    if not callable(delta_of):
        raise InvalidClaimError(f"profile= must be a function epsilon -> delta, got "
                                f"{delta_of!r}")
    deltas = _read(delta_of, EPSILON_GRID, "profile", "epsilon")
    _check_falls(deltas, EPSILON_GRID, "profile", "epsilon")
    if deltas[0] <= 0.0:
        raise InvalidClaimError("profile(0) = 0 claims the two inputs' outputs have the same "
                                "distribution; that cannot be audited by sampling")
    return CurveClaim(PROFILE, function=delta_of, epsilons=tuple(map(float, EPSILON_GRID)),
                      deltas=tuple(map(float, deltas)), name=name or _name_of(delta_of))


def curve_claim(gdp=None, tradeoff=None, profile=None, name: str = "") -> CurveClaim | None:
    """The one curve claim given (None if none); two at once is an InvalidClaimError. A
    CurveClaim passed as any of them is taken as it is."""
    given = [(k, v) for k, v in (("gdp", gdp), ("tradeoff", tradeoff), ("profile", profile))
             if v is not None]
    if len(given) > 1:
        raise InvalidClaimError(f"give one curve claim, got {' and '.join(k for k, _ in given)}")
    if not given:
        return None
    kind, value = given[0]
    if isinstance(value, CurveClaim):
        return value
    return {"gdp": gdp_claim, "tradeoff": tradeoff_claim, "profile": profile_claim}[kind](
        value, name)


def _read(function, grid, label, argument) -> np.ndarray:
    """function on the grid, called once with the array when it accepts one, else point by
    point; finite numbers in [0, 1] or an InvalidClaimError."""
    try:
        values = np.asarray(function(grid.copy()), dtype=float)
        if values.shape != grid.shape:
            raise ValueError("not vectorised")
    except Exception:
        try:
            values = np.array([float(function(float(x))) for x in grid])
        except Exception as exc:
            raise InvalidClaimError(f"{label}({argument}) failed: {exc}") from None
    bad = np.nonzero(~np.isfinite(values) | (values < -TOLERANCE) | (values > 1 + TOLERANCE))[0]
    if bad.size:
        raise InvalidClaimError(f"{label}({argument}) must be a number in [0, 1], got "
                                f"{values[bad[0]]!r} at {argument} = {grid[bad[0]]:g}")
    return np.clip(values, 0.0, 1.0)


def _check_falls(values, grid, label, argument) -> None:
    rises = np.nonzero(np.diff(values) > TOLERANCE)[0]
    if rises.size:
        i = rises[0]
        raise InvalidClaimError(f"{label} must never increase in {argument}: {label}("
                                f"{grid[i]:g}) = {values[i]:g} < {label}({grid[i + 1]:g}) = "
                                f"{values[i + 1]:g}")


def _name_of(function) -> str:
    """A callable's own name for reports ("" for a lambda)."""
    name = getattr(function, "name", None) or getattr(function, "__name__", "")
    return "" if name == "<lambda>" else str(name)
