"""Tail rungs: rarer thresholds certified beside a re-tuned event whose ratio still climbs
(attacks.planning.tail_rungs; docs/method.md, "Choosing the events")."""
import numpy as np

from dpverify.attacks import Candidate, Coordinate, Tuning, retune, tail_rungs, tuning_index
from dpverify.attacks.planning import TAIL_RUNG_MIN_HITS, TAIL_RUNGS
from dpverify.stats import ratio_epsilon_bound

LEVEL = 0.1 / 44  # the benchmark's share of α for a last stage's events (reports/benchmark.md)
SCALE = 20.0  # RNM4's exponential noise at ε = 0.1 (mechanisms_under_test/noisy_max.py)


def rnm4_rate(t, edge):
    """P(max of 5 answers at `edge` plus Exp(SCALE) noise ≤ t): RNM4's tail, whose ratio
    between the edges 1 and 2 grows without bound as t nears 2 (true ε = ∞)."""
    return (-np.expm1(-np.clip(t - edge, 0, None) / SCALE)) ** 5


def laplace_tail(t, centre, eps=0.1):
    """P(centre + Laplace(1/eps) ≥ t): between two centres 1 apart the ratio climbs to e^eps,
    beyond both it is flat."""
    x = eps * (t - centre)
    return np.where(x >= 0, 0.5 * np.exp(-np.abs(x)), 1 - 0.5 * np.exp(-np.abs(x)))


def tracked(thresholds, rate_p, rate_q, m, seed, sign=1):
    """A re-tuned candidate on Poisson tuning counts of m runs per input at the given rates."""
    rng = np.random.default_rng(seed)
    # nested events: counts of the rarest first, then the increments, so counts are monotone
    order = np.argsort(rate_p)
    k_p = np.cumsum(rng.poisson(np.diff(np.concatenate([[0], m * rate_p[order]]))))
    k_q = np.cumsum(rng.poisson(np.diff(np.concatenate([[0], m * rate_q[order]]))))
    back = np.argsort(order)
    tuning = Tuning(thresholds, k_p[back], k_q[back], m, m)
    cand = Candidate(0, 0, Coordinate(0), sign, float(thresholds[-1]), 0.0, (1, 1, 1, 1))
    return tuning, cand


def exact_bound(cand, rate_p, rate_q, n, level):
    """The ratio test's bound at n runs per input on the expected counts of the event."""
    t = -cand.threshold  # sign −1: the event is output ≤ t
    k_p, k_q = np.floor(n * rate_p(t)), np.floor(n * rate_q(t))
    return float(ratio_epsilon_bound(k_p, k_q, level))


def test_a_climbing_tail_gets_rungs_that_certify_more_than_the_pick():
    # RNM4's event output ≤ t, tuned on 8M runs and certified on 16× that: the plan stops
    # where the tuning counts are reliable, well short of the best threshold for n
    t = np.linspace(2.2, 6.0, 160)
    m, n = 8_000_000, 128_000_000
    p, q = (lambda x: rnm4_rate(x, 1.0)), (lambda x: rnm4_rate(x, 2.0))
    gains = []
    for seed in range(5):
        tuning, cand = tracked(-t[::-1], p(t[::-1]), q(t[::-1]), m, seed, sign=-1)
        pick = retune(cand, tuning, n, 0.0, LEVEL / 2)
        rungs = tail_rungs(pick, n, 0.0, LEVEL / 2)
        assert 1 <= len(rungs) <= TAIL_RUNGS
        k_p = {float(x): int(k) for x, k in zip(tuning.thresholds, tuning.k_p)}
        # each rung rarer than the one before, with enough hits expected at n
        hits = [k_p[pick.threshold]] + [k_p[r.threshold] for r in rungs]
        assert all(a > b for a, b in zip(hits, hits[1:]))
        assert all(k * n / m >= TAIL_RUNG_MIN_HITS for k in hits[1:])
        share = LEVEL / (1 + len(rungs))
        alone = exact_bound(pick, p, q, n, LEVEL)
        hedged = max(exact_bound(c, p, q, n, share) for c in [pick] + rungs)
        gains.append(hedged - alone)
    assert min(gains) > 0.2, gains


def test_a_ratio_that_has_stopped_climbing_gets_no_rungs():
    # Laplace tails climb to the ratio e^0.1 between the centres 0 and 1 and are flat beyond:
    # the plan's pick sits just past that knee, so the climb is real on precise counts, but
    # rarer thresholds cannot certify more and splitting α over them would only cost
    t = np.linspace(-30.0, 80.0, 160)
    m, n = 8_000_000, 128_000_000
    p, q = laplace_tail(t, 1.0), laplace_tail(t, 0.0)
    for seed in range(40):
        tuning, cand = tracked(t, p, q, m, seed)
        pick = retune(cand, tuning, n, 0.0, LEVEL / 2)
        assert tail_rungs(pick, n, 0.0, LEVEL / 2) == []


def test_no_rungs_without_tuning_counts_or_hits_to_spare():
    t = np.linspace(2.2, 6.0, 160)
    m, n = 8_000_000, 128_000_000
    p, q = rnm4_rate(t[::-1], 1.0), rnm4_rate(t[::-1], 2.0)
    tuning, cand = tracked(-t[::-1], p, q, m, 0, sign=-1)
    assert tail_rungs(cand, n, 0.0, LEVEL) == []  # not re-tuned: no tuning counts
    pick = retune(cand, tuning, n, 0.0, LEVEL / 2)
    assert tail_rungs(pick, n, 0.0, LEVEL / 2)  # the climbing tail of the first test
    # the same pick certified on an eighth of its tuning runs: every rarer threshold would
    # expect fewer than TAIL_RUNG_MIN_HITS hits under P there
    k_pick = int(tuning.k_p[tuning_index(pick)])
    small = int(m * TAIL_RUNG_MIN_HITS / k_pick)
    assert tail_rungs(pick, small, 0.0, LEVEL / 2) == []
