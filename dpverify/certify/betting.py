"""Testing by betting: the anytime-valid test of an ordinary audit (docs/theory.md §2.12).

For one neighbouring pair in one order and one event S, a *round* draws a run of M(D) and a run
of M(D′) (on the same seed or not) and observes X = 1[M(D) ∈ S], Y = 1[M(D′) ∈ S]. If M is
(ε, δ)-DP then E[X − e^ε·Y − δ] = P(S) − e^ε·Q(S) − δ ≤ 0, whatever S, so the payoff
Z = X − e^ε·Y − δ of a bet of λ ≥ 0 per unit of wealth is a fair-or-worse game:
wealth × (1 + λZ) is a non-negative supermartingale while λ < 1/(e^ε + δ) is chosen before the
round (Waudby-Smith & Ramdas, JRSS-B 2024; Shafer & Vovk 2019). By Ville's inequality the
chance that it *ever* reaches 1/α is at most α, so an audit may stop at any round.

Z takes four values, one per joint outcome (X, Y), so a batch of rounds at one bet changes the
log-wealth by Σ_{outcomes} count · ln(1 + λ·z): only four counts per event and batch are needed.
Everything here is pure arithmetic on those counts.
"""
from __future__ import annotations

import math

import numpy as np

# joint outcomes (X, Y) in the order counts are given: D only, D′ only, both, neither
OUTCOMES = ((1, 0), (0, 1), (1, 1), (0, 0))
BET_CAP = 0.8  # at most this fraction of the largest fair bet 1/(e^ε + δ): a D′-only hit keeps 20%


def payoffs(epsilon, delta: float) -> np.ndarray:
    """Z = X − e^ε·Y − δ for the four joint outcomes (`OUTCOMES`), one row per ε
    (shape (len(ε), 4), or (4,) for a scalar ε)."""
    e = np.exp(np.asarray(epsilon, dtype=float))[..., None]
    x, y = np.array(OUTCOMES, dtype=float).T
    return x - e * y - delta


def largest_bet(epsilon, delta: float, cap: float = BET_CAP) -> np.ndarray:
    """The largest bet allowed: `cap`/(e^ε + δ), so that 1 + λZ ≥ 1 − cap > 0 on every outcome."""
    return cap / (np.exp(np.asarray(epsilon, dtype=float)) + delta)


def joint_counts(hit_d: np.ndarray, hit_d_prime: np.ndarray) -> np.ndarray:
    """The four joint-outcome counts (`OUTCOMES`) of rounds i = (hit_d[i], hit_d_prime[i])."""
    x, y = np.asarray(hit_d, bool), np.asarray(hit_d_prime, bool)
    both = int(np.count_nonzero(x & y))
    k_x, k_y = int(np.count_nonzero(x)), int(np.count_nonzero(y))
    return np.array([k_x - both, k_y - both, both, len(x) - k_x - k_y + both], np.int64)


def log_wealth_factor(counts, bet, epsilon, delta: float) -> np.ndarray:
    """ln of the wealth factor Π(1 + λ·Z_i) over rounds with joint-outcome `counts` at bet λ,
    per ε (λ and ε broadcast together). An outcome never seen contributes 0 whatever λ is."""
    counts = np.asarray(counts, dtype=float)
    z = payoffs(epsilon, delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = counts * np.log1p(np.asarray(bet, dtype=float)[..., None] * z)
    return np.where(counts > 0, terms, 0.0).sum(axis=-1)


def outcome_rates(k_p, k_q, k_both, m) -> np.ndarray:
    """Estimated joint-outcome probabilities (`OUTCOMES`, last axis) of an event hit k_p times
    under D and k_q under D′ in m rounds, k_both of them under both (None: rounds not on shared
    seeds, so X and Y are independent and P(both) = p·q)."""
    k_p, k_q = np.asarray(k_p, float), np.asarray(k_q, float)
    p, q = k_p / m, k_q / m
    both = p * q if k_both is None else np.asarray(k_both, float) / m
    return np.stack([p - both, q - both, both, 1.0 - p - q + both], axis=-1)


def planned_bets(rates, m, epsilon, delta: float, shrink_z: float,
                 cap: float = BET_CAP) -> tuple[np.ndarray, np.ndarray]:
    """(bet λ, expected log-growth per round) of events with joint-outcome `rates` estimated on
    m earlier rounds, at claim ε (broadcast over leading axes).

    The payoff's mean is shrunk by `shrink_z` standard errors, μ̃ = μ̂ − z·σ̂/√m, against the
    winner's curse of choosing among many events on the same rounds; the bet is the
    approximate Kelly bet λ = μ̃/(σ̂² + μ̃²) (the "aGRAPA" rule of Waudby-Smith & Ramdas 2024)
    clipped to [0, `largest_bet`], and the growth its second-order value λμ̃ − λ²(σ̂² + μ̃²)/2.
    Only the choice of bets uses these estimates: any predictable bet keeps the test valid."""
    rates = np.asarray(rates, dtype=float)
    z = payoffs(epsilon, delta)
    mean = (rates * z).sum(axis=-1)
    second = (rates * z * z).sum(axis=-1)
    var = np.maximum(second - mean ** 2, 0.0)
    shrunk = mean - shrink_z * np.sqrt(var / max(m, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        bet = np.where(shrunk > 0, shrunk / (var + shrunk ** 2), 0.0)
    bet = np.clip(np.nan_to_num(bet), 0.0, largest_bet(epsilon, delta, cap))
    growth = bet * shrunk - bet ** 2 * (var + shrunk ** 2) / 2
    return bet, np.where(bet > 0, growth, 0.0)


def step_down_bound(grid, crossed) -> float:
    """The certified lower bound from tests of the claims ε′ = grid[0] < grid[1] < …, each run
    at level α: the largest grid[k] such that the tests of grid[0..k] have all rejected
    (−∞ if grid[0]'s has not).

    Sound at level α jointly: if the true ε < grid[k], the test of the smallest grid point
    above the true ε, a true null, must have rejected, which happens with probability ≤ α; no
    union bound over the grid is needed (docs/theory.md §2.12)."""
    crossed = np.asarray(crossed, bool)
    if crossed.size == 0 or not crossed[0]:
        return -math.inf
    failed = np.flatnonzero(~crossed)
    k = (failed[0] - 1) if failed.size else len(crossed) - 1
    return float(grid[k])


def claim_grid(epsilon: float, steps: int = 24, top: float = 30.0) -> np.ndarray:
    """The claims a betting audit tests at once, all above the claimed ε: the first a 64th of
    max(ε, 0.05) above it (rejecting it proves the true ε exceeds the claim, by a margin the
    bound can show), then steps of a 16th of max(ε, 0.05), growing by 25% a step after
    `steps` of them, up to ε + `top`."""
    base = max(epsilon, 0.05)
    offsets = [base / 64]
    step = base / 16
    while offsets[-1] < top and len(offsets) < 200:
        offsets.append(offsets[-1] + step)
        if len(offsets) > steps:
            step *= 1.25
    return epsilon + np.array(offsets)
