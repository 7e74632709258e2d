"""How rare a leak a passing audit would have caught: its *leak reach* (docs/theory.md §2.13).

A leak is an output (an exact value, a flag, a shape) that one input gives in a fraction r of
its runs and the other input never: ε = ∞, however small r is. The audit finds and certifies
one only through four gates, each passed on a sample of its own (so independently):

1. the search's learning half (m runs per input): the output is seen ATOM_REPEATS times, so a
   model makes it a cell of its own (attacks/atoms.py);
2. the search's selection half (m runs): seen `k_select` times with none under the other input,
   so it is offered as a one-sided hedge (pipeline/selection.py, `one_sided_hedges`);
3. the tuning sample of the stage before last (m_T runs), when search froze before the last
   stage: seen often enough that its re-tuned expected bound takes one of the last stage's
   slots; without such a stage the selection half's count must do that;
4. the last stage (n runs): seen often enough that, with no hit under the other input, its
   certificate at the stage's per-event level exceeds the claim.

So P(caught) ≥ Π_i P(Poisson(r·size_i) ≥ k_i), and the reach is the least r at which that
product reaches the audit's confidence: a leak in at least that fraction of runs would have been
caught with at least that probability. The hits each gate needs are read off the planner's and
the certificates' own functions at the audit's actual sizes, level and competing events.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from scipy.special import gammainc

from ..attacks.atoms import ATOM_REPEATS
from ..attacks.planning import (ONE_SIDED_MIN_HITS, ONE_SIDED_MIN_SEARCH_HITS, SEARCH_SHRINK_Z,
                                TUNING_SHRINK_Z)
from ..stats import certified_epsilon, expected_bound_and_method, ratio_epsilon_bound

MOST_HITS = 1 << 20  # a gate needing more hits than this is out of reach


class LeakGates(NamedTuple):
    """What the audit spent, as the four gates see it (runs per input)."""

    search: int             # the search's runs of the least-searched pair (both halves)
    tuning: int             # runs of the tuning sample before the last stage; 0 if none
    certify: int            # runs of the last stage
    level: float            # the last stage's per-event level (per bound)
    competitor: float       # expected bound an event must beat for a last-stage slot
    claim: float            # the claimed ε
    delta: float            # the claimed δ
    k_select: int = ONE_SIDED_MIN_SEARCH_HITS  # selection hits a hedge needs


def at_least(k: int, mean: float) -> float:
    """P(Poisson(mean) ≥ k): the regularised lower incomplete gamma function P(k, mean)."""
    return 1.0 if k <= 0 else float(gammainc(k, mean))


def least_hits(holds, least: int = 1) -> int:
    """The least k ≥ `least` at which `holds(k)` (monotone: false, then true) is true, by
    doubling then bisection; MOST_HITS + 1 if it is false up to MOST_HITS."""
    high = least
    while not holds(high):
        if high > MOST_HITS:
            return MOST_HITS + 1
        high *= 2
    low = max(least, high // 2)
    if holds(low):
        return low
    while high - low > 1:  # holds(high), not holds(low)
        mid = (low + high) // 2
        low, high = (low, mid) if holds(mid) else (mid, high)
    return high


def hits_to_certify(n: int, claim: float, delta: float, level: float) -> int:
    """The fewest hits, out of n runs with none under the other input, whose certificate (the
    better of two Clopper–Pearson bounds at `level` and, for δ = 0, the ratio test at 2·level)
    exceeds the claim."""
    def certifies(k: int) -> bool:
        bound = float(certified_epsilon(k, n, 0, n, delta, level))
        if delta == 0:
            bound = max(bound, float(ratio_epsilon_bound(k, 0, 2 * level)))
        return bound > claim
    return least_hits(certifies)


def hits_to_rank(m: int, n: int, gates: LeakGates, shrink_z: float, least: int) -> int:
    """The fewest hits (at least `least`), out of m runs with none under the other input, whose
    expected bound at n runs beats `gates.competitor`, as the planner ranks events."""
    def ranks(k: int) -> bool:
        expected, _ = expected_bound_and_method(k, m, 0, m, n, gates.delta, gates.level,
                                                shrink_z)
        return float(expected) > gates.competitor
    return least_hits(ranks, least)


def gate_needs(gates: LeakGates) -> list[tuple[int, int]]:
    """(runs, hits needed) of each gate, in order."""
    half = gates.search // 2
    needs = [(half, ATOM_REPEATS)]
    if gates.tuning > 0:
        needs += [(half, gates.k_select),
                  (gates.tuning, hits_to_rank(gates.tuning, gates.certify, gates,
                                              TUNING_SHRINK_Z, ONE_SIDED_MIN_HITS))]
    else:
        needs.append((half, hits_to_rank(half, gates.certify, gates, SEARCH_SHRINK_Z,
                                         gates.k_select)))
    needs.append((gates.certify, hits_to_certify(gates.certify, gates.claim, gates.delta,
                                                 gates.level)))
    return needs


def caught_probability(rate: float, needs: list[tuple[int, int]]) -> float:
    """The lower bound Π P(Poisson(rate·runs) ≥ hits) over the gates."""
    return math.prod(at_least(k, rate * runs) for runs, k in needs)


def leak_reach(gates: LeakGates, confidence: float) -> float:
    """The least rate r whose leak is caught with probability ≥ `confidence` by these gates
    (to 1%, by bisection on ln r); ∞ when even r = 1 is not (too few runs anywhere)."""
    if min(gates.search // 2, gates.certify) <= 0:
        return math.inf
    needs = gate_needs(gates)
    if caught_probability(1.0, needs) < confidence:
        return math.inf
    low, high = math.log(1e-12), 0.0  # caught with the confidence at high, not at low
    while high - low > 0.01:
        mid = (low + high) / 2
        if caught_probability(math.exp(mid), needs) >= confidence:
            high = mid
        else:
            low = mid
    return math.exp(high)
