"""Input search: pairs found in a declared domain, soundly certified afterwards.

Statistical tests are seeded and deterministic; each audit's false-alarm rate is ≤ 0.05.
"""
import math
import time

import numpy as np
import pytest

import dpverify
from dpverify import InvalidPairsError
from dpverify import input_search, sampling
from dpverify.input_search import find_pairs, mutate_pair, random_pairs, structured_pairs
from dpverify.pairs import PairSearch, all_differ, normalize, search
from dpverify.sampling import CERTIFY, PAIR_SEARCH, PREFLIGHT, SEARCH, TIMING

FAST = dict(candidates=16, rounds=2, samples=1 << 12)  # a quick search for tests
SCALE = 5 / 0.5  # Laplace scale per coordinate: 0.5-DP when all 5 coordinates move by 1


@dpverify.mechanism(epsilon=0.5, pairs=search(length=5, low=0, high=10, **FAST))
def gated(data, rng, size):
    """Right noise, except when coordinate 3 is ≥ 7: then 10× too little (ε = 5 there)."""
    data = np.asarray(data, float)
    scale = SCALE / 10 if data[3] >= 7 else SCALE
    return data + rng.laplace(0, scale, (size, len(data)))


def mid_gated(data, rng, size):
    """Broken only for coordinate 3 in [4, 6]: neither end of the domain shows it."""
    data = np.asarray(data, float)
    scale = SCALE / 10 if 4 <= data[3] <= 6 else SCALE
    return data + rng.laplace(0, scale, (size, len(data)))


def honest(data, rng, size):
    return np.asarray(data, float) + rng.laplace(0, SCALE, (size, len(data)))


def test_violation_outside_the_fixed_patterns_is_found():
    fixed = dpverify.audit(gated, pairs=all_differ(5), samples=1 << 16, seed=3, n_jobs=1)
    assert fixed.verdict == "pass"  # StatDP's patterns (values 0..2) never reach the bug
    found = dpverify.audit(gated, samples=1 << 16, seed=3, n_jobs=1)  # the decorator's search
    assert found.verdict == "violation"
    assert found.epsilon_lower_bound > 1.0
    w = found.witness
    assert max(np.asarray(w.D)[3], np.asarray(w.D_prime)[3]) >= 7  # where the bug lives
    assert np.all(np.abs(np.asarray(w.D, float) - np.asarray(w.D_prime, float)) <= 1)


def test_bug_in_the_middle_of_the_domain_needs_the_random_and_local_search():
    space = search(length=5, low=0, high=10, integer=True, **FAST)
    assert not any(4 <= x[3] <= 6 or 4 <= x[3] + s[3] <= 6 for x, s in structured_pairs(space))
    res = dpverify.audit(mid_gated, pairs=space, epsilon=0.5, samples=1 << 14, seed=5, n_jobs=1)
    assert res.verdict == "violation"
    d, d_prime = np.asarray(res.witness.D), np.asarray(res.witness.D_prime)
    assert d.dtype.kind == "i" and 4 <= max(d[3], d_prime[3]) and min(d[3], d_prime[3]) <= 6


def test_correct_mechanism_passes_and_its_bound_stays_below_the_true_epsilon():
    space = search(length=5, low=0, high=10, **FAST)
    bounds = []
    for seed in range(3):
        res = dpverify.audit(honest, pairs=space, epsilon=0.5, samples=1 << 14, seed=seed,
                             n_jobs=1)
        assert res.verdict == "pass"
        bounds.append(res.epsilon_lower_bound)
    assert max(bounds) <= 0.5
    assert min(bounds) > 0.1  # the pairs found are informative, not degenerate


def test_scalar_mechanism_with_one_differ_neighbours():
    def counts(data, rng):  # histogram with the right noise: 0.5-DP under one-differ
        return tuple(np.asarray(data, float) + rng.laplace(0, 2.0, len(data)))
    space = search(length=3, low=0, high=4, relation="one_differ", candidates=4, rounds=1,
                   samples=256)
    found = find_pairs(counts, space, seed=0, n_jobs=1, n_certify=1 << 12)
    for d, d_prime in found:
        assert np.count_nonzero(d != d_prime) == 1
    res = dpverify.audit(counts, pairs=space, epsilon=0.25, samples=1 << 12, seed=0, n_jobs=1)
    assert res.verdict == "violation" and res.epsilon_lower_bound <= 0.5


def test_same_seed_same_pairs_and_result_for_any_n_jobs():
    space = search(length=4, low=-3, high=3, candidates=8, rounds=1, samples=1 << 12)
    one = find_pairs(honest, space, seed=11, n_jobs=1, n_certify=1 << 12)
    two = find_pairs(honest, space, seed=11, n_jobs=2, n_certify=1 << 12)
    assert len(one) == space.keep and one.scores == two.scores and one.runs == two.runs
    for (a, b), (c, d) in zip(one, two):
        assert np.array_equal(a, c) and np.array_equal(b, d)
    other = find_pairs(honest, space, seed=12, n_jobs=1, n_certify=1 << 12)
    assert other.scores != one.scores
    kw = dict(pairs=space, epsilon=0.5, samples=1 << 12, seed=11)
    first = dpverify.audit(honest, n_jobs=1, **kw).as_dict()
    second = dpverify.audit(honest, n_jobs=2, **kw).as_dict()
    for d in (first, second):
        d.pop("seconds")
    assert first == second
    assert first["samples"] > one.runs  # the search's runs are counted


def test_search_seeds_never_meet_the_audits(monkeypatch):
    seen = []  # (drawn by input search?, task)
    searching = [False]
    run, preflight = sampling.Sampler.run, sampling.Sampler.preflight

    def record_run(self, tasks, evaluators=None, pooled=False):
        seen.extend((searching[0], t) for t in tasks)
        return run(self, tasks, evaluators, pooled)

    def record_preflight(self, pair, side, size=64, twice=True, batches=1):
        seen.extend((searching[0], sampling.ChunkTask(pair, side, 0, PREFLIGHT, i, 0,
                                                      size // batches))
                    for i in range(batches))
        return preflight(self, pair, side, size, twice, batches)

    def flagged_find_pairs(*args, **kwargs):
        searching[0] = True
        try:
            return find_pairs(*args, **kwargs)
        finally:
            searching[0] = False

    monkeypatch.setattr(sampling.Sampler, "run", record_run)
    monkeypatch.setattr(sampling.Sampler, "preflight", record_preflight)
    monkeypatch.setattr(input_search, "find_pairs", flagged_find_pairs)
    dpverify.audit(honest, pairs=search(length=3, low=0, high=5, **FAST), epsilon=0.5,
                   samples=1 << 12, seed=2, n_jobs=1)
    mine = [t for flag, t in seen if flag]
    theirs = [t for flag, t in seen if not flag]
    assert {t.purpose for t in mine} == {PAIR_SEARCH}
    assert {t.purpose for t in theirs} == {SEARCH, CERTIFY, PREFLIGHT, TIMING}  # + the pilots

    def states(tasks):
        return {tuple(t.seed_sequence(2).generate_state(4)) for t in tasks}
    assert len(states(mine)) == len(mine)  # every search chunk has its own stream
    assert not states(mine) & states(theirs)


@pytest.mark.parametrize("relation,integer,low,high", [
    ("all_differ", False, 0.0, 10.0), ("all_differ", True, -2, 2),
    ("one_differ", False, 0.0, 0.5), ("one_differ", True, 0, 1)])
def test_every_candidate_is_a_neighbouring_pair_in_the_domain(relation, integer, low, high):
    space = search(length=4, low=low, high=high, relation=relation, integer=integer)
    rng = np.random.default_rng(0)
    pairs = structured_pairs(space) + random_pairs(space, rng, 200)
    pairs += [mutate_pair(space, rng, *pairs[i % len(pairs)]) for i in range(400)]
    for x, s in pairs:
        d_prime = x + s
        assert np.all((low <= x) & (x <= high) & (low <= d_prime) & (d_prime <= high))
        assert np.all(np.abs(s) <= 1 + 1e-12) and s.any()
        if relation == "one_differ":
            assert np.count_nonzero(s) == 1
        if integer:
            assert np.array_equal(x, np.round(x)) and np.array_equal(s, np.round(s))


class _SteppingClock:
    """A stand-in for the `time` module of input_search that advances STEP virtual seconds per
    reading and never with the wall clock, so how far the search gets depends on how often it
    looks at the clock, not on how loaded the machine is."""

    STEP = 100.0

    def __init__(self):
        # a whole number of seconds: sums of it and multiples of STEP are exact in floating point
        self.start = float(math.floor(time.monotonic()))
        self.readings = 0

    def monotonic(self):
        self.readings += 1
        return self.start + self.STEP * self.readings


def test_search_stops_at_its_share_of_the_time_and_still_returns_pairs(monkeypatch):
    clock = _SteppingClock()
    monkeypatch.setattr(input_search, "time", clock)
    space = search(length=5, low=0, high=10, candidates=64, rounds=40, samples=1 << 10)
    # 20 readings' worth of time (far past any wall-clock wait, so the sampler's own deadline
    # never matters): the first reading sets the stop at TIME_SHARE of the 19 steps left, i.e.
    # half a step after reading 10 (a stop exactly on a reading would rest on floating-point
    # rounding); the first phase's batches read the clock 3 times, then each round once: 6
    # rounds before the search stops, where running on to the deadline would give 16 and
    # ignoring it 40
    found = find_pairs(honest, space, seed=0, n_jobs=2, deadline=clock.start + 20 * clock.STEP)
    assert 1 <= len(found) <= space.keep
    rounds = (clock.readings - 1) - 1 - 3   # the last reading is the one that stops it
    assert rounds == 6, clock.readings
    first_phase = found.evaluated - rounds * max(8, space.candidates // 4)
    assert 0 < first_phase <= len(input_search.structured_pairs(space)) + space.candidates


@pytest.mark.parametrize("kwargs,match", [
    (dict(length=0, low=0, high=1), "length must be a positive integer"),
    (dict(length=3, low=1, high=1), "high > low"),
    (dict(length=3, low=0, high=float("inf")), "must be finite"),
    (dict(length=3, low="a", high=1), "must be numbers"),
    (dict(length=3, low=0, high=1, relation="some_differ"), "relation must be one of"),
    (dict(length=3, low=0, high=2.5, integer=True), "whole-number bounds"),
    (dict(length=3, low=0, high=1, candidates=0), "candidates must be an integer ≥ 1"),
    (dict(length=3, low=0, high=1, rounds=-1), "rounds must be an integer ≥ 0"),
    (dict(length=3, low=0, high=1, keep=0), "keep must be an integer ≥ 1"),
    (dict(length=3, low=0, high=1, samples=10), "samples must be an integer ≥ 64"),
])
def test_bad_search_arguments(kwargs, match):
    with pytest.raises(InvalidPairsError, match=match):
        search(**kwargs)


def test_a_search_domain_where_a_list_is_needed_says_what_to_do():
    space = search(length=2, low=0, high=3)
    assert isinstance(space, PairSearch) and space.distance == 1
    with pytest.raises(InvalidPairsError, match="find_pairs"):
        normalize(space)
    renyi_claim = dpverify.mechanism(rdp=(2.0, 0.5))(honest)  # audited by one event, no search
    with pytest.raises(InvalidPairsError, match="find_pairs"):
        dpverify.audit(renyi_claim, pairs=space, samples=1 << 12)
    with pytest.raises(InvalidPairsError, match="dpverify.pairs.search"):
        find_pairs(honest, all_differ(2))
