"""The engine on small self-contained mechanisms: forms, outputs, determinism, tightness."""
import json
import math
import time
from dataclasses import replace

import numpy as np
import pytest

import dpverify
from dpverify.pairs import all_differ, one_differ
from dpverify.result import COUPLED
from mechanisms_under_test.basic import make_laplace, make_randomized_response


def laplace(data, rng, size):
    return data + rng.laplace(0, 1.0, size)


def test_same_seed_same_result_for_any_n_jobs():
    kw = dict(pairs=[(0.0, 1.0)], epsilon=0.9, samples=1 << 16, seed=7)
    one = dpverify.audit(laplace, n_jobs=1, **kw).as_dict()
    two = dpverify.audit(laplace, n_jobs=2, **kw).as_dict()
    for d in (one, two):
        d.pop("seconds")
    assert one == two
    other_seed = dpverify.audit(laplace, n_jobs=1, **{**kw, "seed": 8}).as_dict()
    assert other_seed["witness"]["count_D"] != one["witness"]["count_D"]


def test_scalar_form_is_audited_like_the_batched_form():
    def scalar_laplace(data, rng):
        return data + rng.laplace(0, 1.0)
    res = dpverify.audit(scalar_laplace, pairs=[(0.0, 1.0)], epsilon=0.5, n_jobs=1, samples=1 << 14)
    assert res.verdict == "violation"
    assert 0.5 < res.epsilon_lower_bound <= 1.0


def test_variable_length_outputs_with_bottom():
    # Stops at the first noisy value above a threshold; leaks the exact count through ⊥ runs.
    def leaky_svt(data, rng):
        out = []
        for q in data:
            v = q + rng.laplace(0, 1.0)
            if v > 1.5:
                out.append(v)
                break
            out.append(None)
        return tuple(out)
    res = dpverify.audit(leaky_svt, pairs=[([0, 0, 0], [1, 1, 1])], epsilon=0.5, n_jobs=1,
                         samples=1 << 13)
    assert res.verdict == "violation"
    assert res.epsilon_lower_bound <= 3.0  # three queries each shifted by 1 under Lap(1)


def test_discrete_vector_outputs():
    def bits(data, rng, size):  # per-bit randomized response, ε = ln 3 per bit, 3 bits all differ
        keep = rng.random((size, 3)) < 0.75
        return np.where(keep, np.asarray(data, dtype=bool), ~np.asarray(data, dtype=bool))
    true_eps = 3 * math.log(3)
    kw = dict(pairs=[([0, 0, 0], [1, 1, 1])], n_jobs=1, samples=1 << 16)
    assert dpverify.audit(bits, epsilon=1.0, **kw).verdict == "violation"
    tight = dpverify.audit(bits, epsilon=true_eps, **kw)  # exact claim: runs every stage
    assert tight.verdict == "pass"
    assert 0.95 * true_eps <= tight.epsilon_lower_bound <= true_eps


def test_multivariate_continuous_outputs_are_handled():
    def hist(data, rng, size):
        return np.asarray(data, float) + rng.laplace(0, 1.0, (size, len(data)))
    res = dpverify.audit(hist, pairs=one_differ(4), epsilon=1.0, n_jobs=1, samples=1 << 14)
    assert res.verdict == "pass"
    assert res.epsilon_lower_bound <= 1.0
    res = dpverify.audit(hist, pairs=one_differ(4), epsilon=0.6, n_jobs=1, samples=1 << 14)
    assert res.verdict == "violation"


def test_delta_claim_uses_the_delta_form():
    # M outputs the input with probability 0.01, else a fair coin: (0, 0.01)-DP exactly.
    def leaky(data, rng, size):
        leak = rng.random(size) < 0.01
        return np.where(leak, 2 + data, rng.integers(0, 2, size))
    kw = dict(pairs=[(0, 1)], n_jobs=1, samples=1 << 16)
    assert dpverify.audit(leaky, epsilon=0.05, delta=0.0, **kw).verdict == "violation"
    assert dpverify.audit(leaky, epsilon=0.05, delta=0.011, **kw).verdict == "pass"


def test_pairs_generators_follow_statdp_patterns():
    p = all_differ(4)
    assert len(p) == 24  # 12 pairs, each in both orders
    assert any(np.array_equal(a, [1, 1, 0, 0]) and np.array_equal(b, [0, 0, 1, 1]) for a, b in p)
    # the one-odd patterns with the odd answer first (StatDP) and last
    for odd in ([2, 0, 0, 0], [0, 0, 0, 2], [0, 2, 2, 2], [2, 2, 2, 0]):
        assert any(np.array_equal(a, [1, 1, 1, 1]) and np.array_equal(b, odd) for a, b in p)
    for a, b in p:
        assert np.max(np.abs(np.asarray(a) - np.asarray(b))) <= 1
    for a, b in one_differ(5):
        assert np.count_nonzero(np.asarray(a) != np.asarray(b)) == 1


def test_result_is_json_ready_and_readable():
    res = dpverify.audit(laplace, pairs=[(0.0, 1.0)], epsilon=0.5, n_jobs=1, samples=1 << 12)
    d = json.loads(json.dumps(res.as_dict(), allow_nan=False))
    assert d["verdict"] == "violation" and d["claimed"] == {"epsilon": 0.5, "delta": 0.0}
    w = d["witness"]
    assert w["count_D"] / w["samples_D"] > w["count_D_prime"] / w["samples_D_prime"]
    assert "VIOLATION" in res.summary() and "event" in res.summary()


def test_without_early_stop_a_violation_is_measured_to_the_full_budget():
    kw = dict(pairs=[(0.0, 1.0)], epsilon=0.5, n_jobs=1, samples=1 << 16)
    early = dpverify.audit(laplace, proof_only=True, **kw)
    full = dpverify.audit(laplace, stop_early=False, **kw)
    assert early.verdict == full.verdict == "violation"
    assert len(full.stages) > len(early.stages)
    assert early.epsilon_lower_bound < full.epsilon_lower_bound <= 1.0


def test_certifying_runs_are_poisson_and_the_ratio_test_certifies_pure_claims(monkeypatch):
    """Each input's certifying run count at a stage is Poisson(size) from its own seed stream:
    the two inputs' counts differ, stay within 5 standard deviations of the stage's size, and
    the witness of a δ = 0 audit is certified by the conditional ratio test (with common random
    numbers ruled out: they would certify this Laplace more tightly)."""
    from dpverify.pipeline import Settings, audit_with_settings
    from dpverify.result import RATIO_TEST, TWO_BOUNDS
    res = audit_with_settings(laplace, Settings(coupling="never"), pairs=[(0.0, 1.0)],
                              epsilon=0.5, samples=1 << 16, seed=3, stop_early=False, n_jobs=1)
    w = res.witness
    size = 1 << (10 + 2 * (w.stage - 1))  # stage j certifies 2^10·4^(j−1) per input
    assert w.samples_D != w.samples_D_prime
    assert abs(w.samples_D - size) < 5 * math.sqrt(size)
    assert abs(w.samples_D_prime - size) < 5 * math.sqrt(size)
    assert w.certificate == RATIO_TEST and res.verdict == "violation"
    # with δ > 0 only the two-bound certificate is sound
    approx = dpverify.audit(laplace, pairs=[(0.0, 1.0)], epsilon=0.5, delta=1e-6,
                            samples=1 << 16, seed=3, n_jobs=1, stop_early=False)
    assert approx.witness.certificate == TWO_BOUNDS


def test_measurement_runs_certify_the_best_tuned_and_the_best_searched_event():
    """While search still runs, a measurement run's one certifying stage hedges: the best
    re-tuned candidate (fresh tracked counts) and the best freshly searched one (the search
    sample may see a rare event the tracked grids are too thin for) are both certified, each at
    α/(2K), whatever their planned bounds."""
    from dpverify.attacks import Candidate, Coordinate
    from dpverify.pipeline.selection import hedged

    def cand(pair, expected, counts):
        return Candidate(pair, 0, Coordinate(0), 1, 0.0, expected, counts)

    tuned = [cand(0, 0.02, (5, 10, 1, 10)), cand(0, 0.05, (6, 10, 1, 10))]
    searched = [cand(1, 0.30, (7, 10, 1, 10)), cand(1, 0.20, (8, 10, 1, 10))]
    chosen = hedged(tuned, searched, 2)
    assert [c.expected_epsilon for c in chosen] == [0.05, 0.30]
    # with K = 3 the next in turn is the second tuned one, even though a searched one plans higher
    assert [c.expected_epsilon for c in hedged(tuned, searched, 3)] == [0.05, 0.30, 0.02]


def test_a_measurement_run_spends_all_of_alpha_on_its_best_tuned_event_when_the_rest_lag():
    """One event with all of α beats two with half each, unless the runner-up is expected
    within what the best would gain alone or within two standard errors of the best's tuning
    estimate (the best of a grid is a winner's-curse pick) — and a searched event expected
    above the best tuned one always keeps the hedge (its tail threshold may be luck)."""
    from dpverify.attacks import Candidate, Coordinate, retune
    from dpverify.pipeline.selection import concentrate, tuning_standard_error

    grid = (np.array([0.0, 1.0, 2.0]), np.array([600_000, 200_000, 30_000]),
            np.array([500_000, 150_000, 20_000]), 10_000_000, 10_000_000)
    n, level = 1_000_000, 0.025
    tuned = retune(Candidate(0, 0, Coordinate(0), 1, 0.0, 0.0, (1, 2, 1, 2)), grid, n, 0.0,
                   level)

    def searched(expected):
        return Candidate(1, 0, Coordinate(1), 1, 0.0, expected, (7, 10, 1, 10))

    alone = concentrate([tuned, searched(tuned.expected_epsilon - 0.05)], n, 0.0, 2 * level)
    assert len(alone) == 1 and alone[0].tuning is not None
    assert alone[0].expected_epsilon > tuned.expected_epsilon  # re-chosen for all of α
    gain = alone[0].expected_epsilon - tuned.expected_epsilon
    close = searched(tuned.expected_epsilon - gain / 2)
    assert concentrate([tuned, close], n, 0.0, 2 * level) == [tuned, close]
    se = tuning_standard_error(tuned)
    assert se == pytest.approx(math.sqrt(1 / 30_000 + 1 / 20_000))  # at its threshold, 2.0
    noisy = searched(tuned.expected_epsilon - 1.5 * se)
    assert 1.5 * se > gain and concentrate([tuned, noisy], n, 0.0, 2 * level) == [tuned, noisy]
    better = searched(tuned.expected_epsilon + 0.05)
    assert concentrate([tuned, better], n, 0.0, 2 * level) == [tuned, better]
    # a lone searched event has no tuning counts to re-choose its threshold on: left as it is
    assert concentrate([better], n, 0.0, 2 * level) == [better]
    # a lone re-tuned event (its twin merged away) gets its threshold re-chosen for all of α
    lone = concentrate([tuned], n, 0.0, 2 * level)
    assert len(lone) == 1 and lone[0].expected_epsilon > tuned.expected_epsilon


def test_events_selecting_the_same_search_outputs_are_certified_once():
    from dpverify.attacks import Candidate, Coordinate
    from dpverify.sampling.encoding import encode
    from dpverify.pipeline.selection import same_events_merged

    a, _ = encode(np.array([0.0, 1.0, 3.0, 4.0]), 4)
    b, _ = encode(np.array([0.0, 0.5, 3.5, 1.0]), 4)
    data = {0: (a, b)}

    def cand(threshold, direction=0, model=None):
        return Candidate(0, direction, model or Coordinate(0), 1, threshold, 0.1, (1, 2, 1, 2))

    # {x ≥ 2} and {x ≥ 2.5} select the same outputs of both samples; {x ≥ 3.2} does not
    kept = same_events_merged([cand(2.0), cand(2.5), cand(3.2), cand(2.5, direction=1)], data)
    assert [(c.threshold, c.direction) for c in kept] == [(2.0, 0), (3.2, 0), (2.5, 1)]
    # the tracked candidates are the first `most` distinct events, not the first `most` entries
    # (three models retuned onto one SVT4 output once took three of its four tracked places)
    pool = [cand(2.0), cand(2.5), cand(2.2), cand(3.2), cand(2.5, direction=1)]
    tracked = same_events_merged(pool, data, most=2)
    assert [(c.threshold, c.direction) for c in tracked] == [(2.0, 0), (3.2, 0)]


def test_tracked_candidates_are_distinct_score_families():
    from dpverify.attacks import Candidate, Coordinate
    from dpverify.sampling.encoding import encode
    from dpverify.pipeline.selection import same_events_merged

    rng = np.random.default_rng(0)
    a, _ = encode(rng.normal(size=(500, 2)), 500)
    b, _ = encode(rng.normal(0.2, 1.0, size=(500, 2)), 500)
    data = {0: (a, b)}

    def cand(threshold, index=0, sign=1, model=None):
        return Candidate(0, 0, model or Coordinate(index), sign, threshold, 0.1, (1, 2, 1, 2))

    # a half-line of output[0] learned twice (two models, two thresholds: different events) is
    # one family: its grid counts both; output[1], or output[0] with the other sign, is another
    pool = [cand(1.0), cand(1.5, model=Coordinate(0)), cand(1.0, index=1), cand(-1.0, sign=-1)]
    tracked = same_events_merged(pool, data, most=4, families=True)
    assert [(c.model.index, c.sign, c.threshold) for c in tracked] == [
        (0, 1, 1.0), (1, 1, 1.0), (0, -1, -1.0)]
    # certified events are only merged when they select the same outputs
    assert len(same_events_merged(pool, data, most=4)) == 4


def test_tracked_places_go_first_to_one_candidate_per_pair_and_direction():
    """SVT3 seed 2: three models of pair 11 in one direction held three of the four tracked
    places, and pair 6's output[9] half-line, which pooled tuning counts later show to lead,
    was dropped. Spread over pairs, each pair and direction's best comes first."""
    from dpverify.attacks import Candidate, Coordinate
    from dpverify.pipeline.selection import spread_over_pairs

    def cand(pair, direction, index):
        return Candidate(pair, direction, Coordinate(index), 1, 0.0, 0.1, (1, 2, 1, 2))

    pool = [cand(8, 0, 5), cand(11, 1, 5), cand(11, 1, 4), cand(8, 0, 4), cand(6, 1, 9),
            cand(11, 0, 5)]
    key = [(c.pair, c.direction, c.model.index) for c in spread_over_pairs(pool, 1)]
    assert key == [(8, 0, 5), (11, 1, 5), (6, 1, 9), (11, 0, 5), (11, 1, 4), (8, 0, 4)]
    key = [(c.pair, c.direction, c.model.index) for c in spread_over_pairs(pool, 2)]
    assert key == [(8, 0, 5), (11, 1, 5), (11, 1, 4), (8, 0, 4), (6, 1, 9), (11, 0, 5)]
    assert spread_over_pairs(pool, 0) == pool


def test_a_last_stage_does_not_spend_two_slots_on_one_event_at_one_ratio():
    """SVT4's ⊥⁵⊤ is offered by several pairs at one ratio; its copies once took both of the
    last stage's slots from ⊥⁹⊤, the better, rarer event (issue 28). A copy of a kept event on
    another pair is skipped only when the tuning counts cannot tell its ratio apart."""
    from dpverify.attacks import Candidate, Coordinate, Tuning
    from dpverify.sampling.encoding import encode
    from dpverify.pipeline.selection import distinct_bets

    rng = np.random.default_rng(0)
    data = {p: tuple(encode(rng.normal(size=(400, 2)), 400)[0] for _ in range(2))
            for p in range(3)}
    grid = np.array([0.0, 1.0])

    def cand(pair, index, expected, k_p, k_q):
        tuning = Tuning(grid, np.array([5000, k_p]), np.array([4000, k_q]), 10**6, 10**6)
        return Candidate(pair, 0, Coordinate(index), 1, 1.0, expected, (1, 2, 1, 2),
                         tuning=tuning)

    best = cand(0, 0, 0.170, 2000, 1700)          # ln ratio 0.163 ± 0.033
    same_event = cand(1, 0, 0.169, 2010, 1690)    # output[0] ≥ 1 again, on pair 1
    rarer = cand(2, 1, 0.168, 500, 420)           # output[1] ≥ 1: another event
    assert distinct_bets([best, same_event, rarer], data, 2) == [best, rarer]
    # the same event at a ratio the counts tell apart is a bet of its own
    other_ratio = cand(1, 0, 0.169, 2000, 1000)   # ln ratio 0.69
    assert distinct_bets([best, other_ratio, rarer], data, 2) == [best, other_ratio]
    # and without search outputs of both pairs nothing is merged
    assert distinct_bets([best, same_event, rarer], {0: data[0]}, 2) == [best, same_event]
    # the same score on another pair but another threshold is another event
    moved = replace(same_event, threshold=-5.0)
    assert distinct_bets([best, moved, rarer], data, 2) == [best, moved]
    # outputs padded to another width on the other pair are not compared
    wider = {**data, 1: tuple(encode(rng.normal(size=(400, 3)), 400)[0] for _ in range(2))}
    assert distinct_bets([best, same_event, rarer], wider, 2) == [best, same_event]


def test_carried_candidates_retuned_onto_one_event_are_tracked_once():
    from dpverify.attacks import Candidate, Coordinate, Tuning
    from dpverify.pipeline.selection import distinct

    grid = np.array([0.5, 1.0, 2.0])

    def carried(model, threshold, k_p, k_q, search_counts):
        tuning = Tuning(grid, np.array(k_p), np.array(k_q), 1000, 1000)
        return Candidate(3, 0, model, 1, threshold, 0.15, search_counts, tuning=tuning)

    # two models that started from different search events, retuned to thresholds that count
    # the same hits under both inputs on their common tuning sample: one event
    a = carried(Coordinate(0), 1.0, [900, 400, 100], [800, 300, 80], (50, 500, 40, 500))
    b = carried(Coordinate(1), 2.0, [700, 500, 400], [600, 420, 300], (60, 500, 45, 500))
    # same counts at another threshold of its grid, or other counts: another event
    c = carried(Coordinate(2), 1.0, [900, 410, 100], [800, 300, 80], (70, 500, 50, 500))
    assert distinct([a, b, c]) == [a, c]
    assert distinct([a, replace(b, direction=1), c]) == [a, replace(b, direction=1), c]


def test_a_pair_whose_search_sample_is_complete_is_not_learned_again(monkeypatch):
    # Once a pair's search sample reaches its cap, later stages draw no search data for it:
    # its models must be reused (not re-learned), and the events chosen from them must be the
    # ones a fresh learning on the same data gives, with thresholds for each stage's own size.
    from dpverify.attacks import pair_events
    from dpverify.mechanism import as_mechanism
    from dpverify.pipeline import Settings, search as search_module
    from dpverify.sampling import Sampler

    calls = []
    real_learn = search_module.learn_pair
    monkeypatch.setattr(search_module, "learn_pair",
                        lambda *a, **k: calls.append(len(a[0])) or real_learn(*a, **k))
    mech = as_mechanism(laplace)
    pairs = [(0.0, 1.0)]
    search = search_module.Search(1, floating_point=False, paired=True,
                                  settings=Settings(search_cap=1 << 12))
    with Sampler(mech, pairs, 3, n_jobs=1) as sampler:
        stages = [search.stage(sampler, j, n, 1 << 16, 0.0, 0.01, 2)
                  for j, n in enumerate([1 << 10, 1 << 12, 1 << 14], start=1)]
    # stage 2 fills the cap (1024 + 3072 runs per input); stage 3 draws nothing new
    assert search.kept[0] == 1 << 12
    assert calls == [1 << 10, 1 << 12]
    # the pipeline's search samples are paired (row i of both inputs from one seed)
    fresh = [c for c in pair_events(0, real_learn(*stages[2].data[0], False, True),
                                    1 << 14, 0.0, 0.01, 1 << 16, sampler.chunk_size)
             if not c.one_sided]  # kept apart by the search, as hedges
    reused = sorted(stages[2].candidates, key=lambda c: (c.model.kind, c.direction, c.sign))
    fresh = sorted(fresh, key=lambda c: (c.model.kind, c.direction, c.sign))
    assert [(c.threshold, c.expected_epsilon) for c in reused] == \
        [(c.threshold, c.expected_epsilon) for c in fresh]
    # the thresholds are re-chosen for the larger certifying size of stage 3
    assert [c.expected_epsilon for c in stages[2].candidates] != \
        [c.expected_epsilon for c in stages[1].candidates]


def test_a_pruned_pair_stays_pruned_when_a_tracked_candidate_of_it_ranks_first():
    """Pruning frees a pair's search sample but keeps its `kept` count; a later prune whose
    pool (tracked candidates included) ranks that pair first once re-activated it with an
    empty sample, and the next search stage failed joining no chunks (svt4 at 2^25 samples,
    stop_early=False)."""
    from dpverify.attacks import Candidate, Coordinate
    from dpverify.mechanism import as_mechanism
    from dpverify.pipeline import Settings
    from dpverify.pipeline.search import Search
    from dpverify.sampling import Sampler

    def cand(pair, potential):
        return Candidate(pair, 0, Coordinate(0), 1, 0.0, 0.1, (1, 2, 1, 2), potential)

    search = Search(3, floating_point=False, paired=True,
                    settings=Settings(search_cap=1 << 11, active_pairs=1))
    with Sampler(as_mechanism(laplace), [(0.0, 1.0), (0.0, 2.0), (1.0, 0.0)], 0,
                 n_jobs=1) as sampler:
        search.stage(sampler, 1, 1 << 11, 1 << 14, 0.0, 0.01, 2)  # every sample at its cap
        search.prune([cand(0, 0.5), cand(1, 0.4), cand(2, 0.3)])
        assert search.active == [0]
        search.prune([cand(2, 0.9), cand(0, 0.5)])  # pair 2's sample is gone
        assert search.active == [0]
        chosen = search.stage(sampler, 2, 1 << 12, 1 << 14, 0.0, 0.01, 2)
    assert set(chosen.data) == {0}


# ---- common random numbers (certify.pilot; stats.coupled_epsilon_bound) ----

def test_small_stages_keep_independent_samples():
    # below 64 blocks of 2^14 runs a chunk's fixed cost would outweigh what coupling saves
    from dpverify.stats import coupled_block_size
    assert coupled_block_size(1 << 19, 1 << 18) == 0
    assert coupled_block_size(1 << 20, 1 << 18) == 1 << 14
    assert coupled_block_size(1 << 26, 1 << 18) == 1 << 18


def test_only_events_with_enough_disagreements_per_block_are_certified_coupled():
    # Pilot rates of 2^16 runs per input for two events on one pair, a stage of 2^22 runs
    # (64 blocks of 2^16): event 0 has 9,000 hits and 900 disagreeing runs (900 per block),
    # event 1 is rare and no stronger: 60 vs 58 hits, 30 disagreeing (30 per block, under the
    # 50 the t-test needs), however small its pilot variance. The pair couples for event 0;
    # event 1 falls back to two Clopper–Pearson bounds, and neither keeps the ratio test (its
    # counts would be dependent).
    from dpverify.attacks import Candidate, Coordinate
    from dpverify.certify import Certificate, choose_coupling
    from dpverify.stats import MIN_COUPLED_HITS_PER_BLOCK
    events = [Candidate(0, 0, Coordinate(0), 1, t, 0.1, (0, 1, 0, 1),
                        certificate=Certificate.RATIO_TEST)
              for t in (0.0, 5.0)]
    m = 1 << 16
    rates = {0: (9000, 8150, m, 900, 0.7), 1: (60, 58, m, 30, 1e-6)}
    assert 30 < MIN_COUPLED_HITS_PER_BLOCK < 900
    out, pairs, block = choose_coupling(events, rates, 1 << 22, 1 << 18, 0.0, 0.05)
    assert pairs == {0} and block == 1 << 16
    assert [c.certificate for c in out] == [Certificate.COUPLED, Certificate.TWO_BOUNDS]
    # with the rare event alone nothing couples, and its ratio test stays
    out, pairs, _ = choose_coupling(events[1:], {0: rates[1]}, 1 << 22, 1 << 18, 0.0, 0.05)
    assert not pairs and out[0].certificate is Certificate.RATIO_TEST


def test_the_planner_counts_on_the_coupled_test_only_with_room_above_the_pilots_bar():
    # An event's paired tuning counts: 1,200 vs 1,000 hits in 2^22 runs, planned for a stage of
    # 2^26 runs in 64 blocks. With 220 or 240 disagreeing runs a block would hold 55 or 60 of
    # them: over the pilot's bar of 50, but the pilot counts them on about one block's runs (a
    # Poisson error of ~7), so it would often refuse the coupled test the plan relied on. The
    # plan is then the independent one; with 270 or 400 (67 or 100 per block) it is the coupled
    # test's, which beats it.
    from dpverify.stats import MIN_COUPLED_HITS_PER_BLOCK, expected_paired_bound_and_method
    m, k_p, k_q, n, block = 1 << 22, 1200, 1000, 1 << 26, 1 << 20

    def planned(disagree, block):
        return float(expected_paired_bound_and_method(k_p, k_q, m, n, 0.0, 0.05, 2.0,
                                                      disagree / (k_p * k_q), block=block)[0])
    for disagree in (220, 240):
        assert disagree * block / m > MIN_COUPLED_HITS_PER_BLOCK
        assert planned(disagree, block) == planned(disagree, 0)
    for disagree in (270, 400):
        assert planned(disagree, block) > planned(disagree, 0) + 0.005


def test_coupled_chunks_share_a_seed_across_the_two_inputs_only():
    from dpverify.sampling import CERTIFY, ChunkTask
    def seed(side, index, coupled):
        task = ChunkTask(pair=0, side=side, stage=3, purpose=CERTIFY, index=index, start=0,
                         size=8, coupled=coupled)
        return np.random.default_rng(task.seed_sequence(5)).integers(1 << 62)
    assert seed(0, 0, True) == seed(1, 0, True)         # D and D' draw block 0 alike
    assert seed(0, 0, True) != seed(0, 1, True)         # blocks are independent
    assert seed(0, 0, True) not in {seed(0, 0, False), seed(1, 0, False)}  # never an uncoupled seed


def _laplace_audits(monkeypatch, couple: bool):
    from dpverify.pipeline import Settings, audit_with_settings
    settings = Settings(coupling="pilot" if couple else "never")
    return [audit_with_settings(make_laplace(0.1), settings, stop_early=False, samples=1 << 20,
                                seed=seed, confidence=0.9) for seed in range(8)]


def test_laplace_is_certified_on_common_random_numbers_and_more_tightly(monkeypatch):
    # Shared noise puts D's and D''s runs on the same side of a threshold 95% of the time:
    # the pilot chooses the coupled certificate, and at the same 2^20 runs per input (seeds
    # 0–7) its gap to the true ε = 0.1 is a fraction of what independent samples give. (Over
    # seeds 0–19 the coupled gap averages 0.0008 and is at most 0.0021; the independent one
    # averages 0.0027: which event the tuning stage picks moves each by ±0.001, so four seeds
    # are too few to compare the sums.)
    coupled = _laplace_audits(monkeypatch, True)
    assert all(r.witness.certificate == COUPLED for r in coupled)
    assert all(r.witness.samples_D == r.witness.samples_D_prime == 1 << 20 for r in coupled)
    independent = _laplace_audits(monkeypatch, False)
    assert not any(r.witness.certificate == COUPLED for r in independent)
    # (each 90% bound may sit above 0.1 on up to 10% of seeds, so the test compares distances
    # to the truth; the rate is tested in test_stats)
    gap = [sum(abs(0.1 - r.epsilon_lower_bound) for r in rs) for rs in (coupled, independent)]
    assert gap[0] < gap[1] / 2
    assert all(abs(0.1 - r.epsilon_lower_bound) < 0.003 for r in coupled)
    # the witness carries what the t-test saw: its block counts add up to its hits and give
    # its bound back at the last stage's share of α
    from dpverify.stats import coupled_epsilon_bound
    for r in coupled:
        w = r.witness
        assert sum(w.blocks_D) == w.count_D and sum(w.blocks_D_prime) == w.count_D_prime
        assert len(w.blocks_D) * w.block_size == w.samples_D
        level = (1 - r.confidence) / r.stages[-1].candidates_certified
        assert coupled_epsilon_bound(w.blocks_D, w.blocks_D_prime, w.block_size, 0.0,
                                     level) == pytest.approx(r.epsilon_lower_bound, abs=1e-12)


def test_randomized_response_keeps_independent_samples():
    # Shared coins make RR's outputs on 0 and 1 always differ: coupling would only add
    # variance, and the pilot sees it.
    r = dpverify.audit(make_randomized_response(1.0), stop_early=False, samples=1 << 20, seed=0)
    assert r.witness.certificate != COUPLED
    assert 0.8 < r.epsilon_lower_bound <= 1.0


@pytest.mark.parametrize("stop_early", [True, False])
def test_stages_that_certify_nothing_choose_events_for_the_next_stage(monkeypatch, stop_early):
    """Ordinary audits and measurement runs certify at their last stage only (an ordinary
    audit's earlier evidence is the betting test's), so each earlier stage's search plans its
    thresholds for the next stage's size, the least they are certified on."""
    from dpverify.pipeline import search as search_module
    planned = {}
    original = search_module.pair_events

    def spy(p, models, n, *rest):
        planned.setdefault(n, 0)
        planned[n] += 1
        return original(p, models, n, *rest)

    monkeypatch.setattr(search_module, "pair_events", spy)
    sizes = [1 << 10, 1 << 12, 1 << 14, 1 << 16]
    dpverify.audit(make_laplace(0.5), epsilon=1.0, samples=1 << 16, stop_early=stop_early,
                   n_jobs=1, seed=3)
    assert set(planned) <= set(sizes[1:]) and 1 << 12 in planned


# ---- paired search and tuning samples (PAIRED_SEARCH) ----

def test_search_samples_are_paired_run_for_run():
    """The search draws row i of M(D) and of M(D') from one seed: Laplace's outputs on 0 and 1
    then differ by exactly the shift on every row (independent draws almost never would)."""
    from dpverify.mechanism import as_mechanism
    from dpverify.pipeline.search import Search
    from dpverify.sampling import Sampler
    search = Search(1, floating_point=False, paired=True)
    with Sampler(as_mechanism(make_laplace(0.1)), [(0.0, 1.0)], 3, n_jobs=1) as sampler:
        chosen = search.stage(sampler, 2, 1 << 12, 1 << 16, 0.0, 0.01, 2)
    a, b = chosen.data[0]
    assert len(a) == len(b) == 1 << 12
    np.testing.assert_allclose(b.X - a.X, 1.0, atol=1e-3)


def test_a_measurement_runs_tuning_counts_are_paired_and_planned_as_such(monkeypatch):
    """The stages of a measurement run that certify nothing count the tracked grids in paired
    blocks; the variance they carry for each threshold is the paired one: for Laplace's
    half-lines (both inputs' runs fall on the same side of t unless the noise lands within the
    shift of it) far below the independent 1/k_p + 1/k_q."""
    from dpverify.pipeline import selection
    tunings = []
    real = selection.retune
    monkeypatch.setattr(selection, "retune",
                        lambda cand, tuning, *a, **k: tunings.append((cand, tuning)) or
                        real(cand, tuning, *a, **k))
    result = dpverify.audit(make_laplace(0.1), stop_early=False, samples=1 << 20, seed=0,
                            confidence=0.9)
    assert result.epsilon_lower_bound <= 0.1 + 0.001   # the truth is 0.1
    # stages of 2^16 and 2^18 runs are paired (64 blocks of ≥ 2^10 runs), smaller ones not
    half_lines = [t for c, t in tunings if c.model.kind == "half-line" and t.variance is not None]
    assert len(half_lines) >= 2 and {t.m_p for t in half_lines} >= {1 << 16, 1 << 18}
    for t in half_lines:
        k_p, k_q = np.asarray(t.k_p, float), np.asarray(t.k_q, float)
        many = (k_p >= 1000) & (k_q >= 1000)
        assert many.any()
        assert np.all(t.variance[many] < (1 / k_p[many] + 1 / k_q[many]) / 4)


def _desynchronised_laplace(epsilon=1.0):
    """Laplace(1/ε) on the pair (0, 1), exactly ε-DP, whose input 1 first draws 3 extra values:
    under a shared seed its run i gets the noise of input 0's run i + 3, and within a call it
    reverses its runs. Row for row, the two inputs' runs are unrelated; only a block's set of
    noise values is (almost) shared."""
    @dpverify.mechanism(epsilon=epsilon, pairs=[(0.0, 1.0)], name="desynchronised_laplace")
    def desynchronised_laplace(data, rng, size):
        if data > 0.5:
            rng.random(3)
            return float(data) + rng.laplace(0.0, 1.0 / epsilon, size=size)[::-1]
        return float(data) + rng.laplace(0.0, 1.0 / epsilon, size=size)
    return desynchronised_laplace


def test_coupled_certificate_keeps_its_false_alarm_rate_when_runs_are_not_aligned():
    """The coupled t-test compares BLOCK totals; it must stay sound when a mechanism consumes
    its random numbers differently for the two inputs (data-dependent draws). Here all 64
    blocks of 256 runs lie in one chunk, so D′'s block b holds the noise of D's block 63 − b:
    the blocks are not independent, in the way docs/method.md, "Coupled blocks", argues makes
    the test conservative. Coupling
    is forced on every event (the pilot would see the runs disagree and decline it), blocks are
    allowed down to 256 runs, and 100 measurement runs of a mechanism claimed at exactly its
    true ε = 1 (half-lines sit exactly at ε) may raise at most Binomial(100, 0.05)'s 99th
    percentile (10) of false alarms at confidence 0.95 (a sound engine fails this with
    probability < 1%; measured: 6 of 100, and 8 of 200 on seeds 0-199). It catches a
    certificate erring at about twice its promised rate or worse: the t-test run at 6× its
    level gave 21 of 100 (at 3×, 9: a milder error needs more seeds than a unit test has).
    A coupled certificate that treated rows as aligned would exceed it."""
    from scipy.stats import binom
    from dpverify.pipeline import Settings, audit_with_settings
    forced = Settings(coupling="always", min_coupled_block_runs=256, min_tuning_block_runs=256)
    mech = _desynchronised_laplace(1.0)
    runs, confidence = 100, 0.95
    results = [audit_with_settings(mech, forced, seed=s, samples=1 << 14, n_jobs=1,
                                   stop_early=False, confidence=confidence) for s in range(runs)]
    coupled = sum(r.witness is not None and r.witness.certificate == COUPLED for r in results)
    assert coupled >= 0.9 * runs          # the test exercises the coupled certificate
    alarms = sum(r.verdict == "violation" for r in results)
    assert alarms <= binom.ppf(0.99, runs, 1 - confidence)
    # ...and it is not vacuous: the same audits see a real violation (claim 0.8 of a true 1)
    caught = sum(audit_with_settings(mech, forced, epsilon=0.8, seed=s, samples=1 << 14,
                                     n_jobs=1, stop_early=False).verdict == "violation"
                 for s in range(10))
    assert caught >= 8                    # measured: 20 of 20 seeds


def test_an_audit_tracks_each_pair_and_directions_best_before_a_second_model(monkeypatch):
    """The runner hands `spread_over_pairs`'s order to its tracked grids: on SVT3's twelve pairs,
    a stage tracks a second candidate of one pair and direction only when no other pair and
    direction with a trackable candidate is left untracked."""
    from dpverify.pipeline.run import AuditRun
    from mechanisms_under_test import svt3

    seen = []
    original = AuditRun._probes

    def recording(self):
        probes = original(self)
        trackable = {(c.pair, c.direction) for c in self.pool
                     if c.tuning is not None or c.pair in self.search.data}
        # one-sided hedges are tracked beyond the spread places (docs/method.md, "Rare leaks")
        seen.append(([(p.pair, p.candidate.direction) for p in probes
                      if not p.candidate.one_sided], trackable))
        return probes

    monkeypatch.setattr(AuditRun, "_probes", recording)
    dpverify.audit(svt3, samples=1 << 16, seed=0)
    assert seen
    for keys, trackable in seen:
        if len(set(keys)) < len(keys):
            assert trackable <= set(keys), (keys, trackable)


def test_small_batches_of_a_slow_mechanism_go_to_the_pool_and_of_a_fast_one_stay(monkeypatch):
    """A batch of two chunks is below the runs worth a round trip to the pool, so it runs in
    the calling thread; once the runs timed so far show the mechanism is slow (50 µs a run,
    as a library call may be), the same batch is shared by the workers (scaling.md). The
    chunks are timed at the cost each mechanism declares, not by the clock, so a busy machine
    cannot make the fast one look slow."""
    import threading
    from dpverify.mechanism import as_mechanism
    from dpverify.sampling import SEARCH, ChunkTask, Sampler
    declared = [0.0]

    def timed_as_declared(self, task, seconds):
        self._timed[0] += task.size
        self._timed[1] += task.size * declared[0]
    monkeypatch.setattr(Sampler, "_time", timed_as_declared)

    def mech_taking(seconds_per_run):
        threads = []
        declared[0] = seconds_per_run

        def draw(data, rng, size):
            threads.append(threading.get_ident())
            return data + rng.laplace(0.0, 1.0, size)
        return as_mechanism(draw), threads

    def batch(index):
        return [ChunkTask(pair=0, side=side, stage=1, purpose=SEARCH, index=index, start=0,
                          size=2048) for side in (0, 1)]

    here = threading.get_ident()
    for seconds_per_run, pooled_later in ((50e-6, True), (0.0, False)):
        mech, threads = mech_taking(seconds_per_run)
        with Sampler(mech, [(0.0, 1.0)], 0, n_jobs=2) as sampler:
            sampler.run(batch(0))
            assert set(threads) == {here}  # nothing timed yet: small batches stay here
            threads.clear()
            sampler.run(batch(1))
        assert (here not in threads) == pooled_later, seconds_per_run



def _laplace_batch(data, rng, size):
    return data + rng.laplace(size=size)

def test_a_mechanism_can_ask_for_worker_processes_and_audit_backend_still_wins():
    """Mechanism.backend: a batched mechanism whose calls hold the GIL (a library binding)
    asks for loky processes instead of threads; audit(backend=...) overrides it."""
    from dpverify.sampling import Sampler
    mech = dpverify.Mechanism(fn=_laplace_batch, name="flags", epsilon=1.0, pairs=[(0, 1)],
                              batched=True, backend="loky")
    assert Sampler(mech, [(0, 1)], 0).backend == "loky"
    assert Sampler(mech, [(0, 1)], 0, backend="threading").backend == "threading"
    plain = dpverify.Mechanism(fn=_laplace_batch, name="flags", epsilon=1.0, pairs=[(0, 1)],
                               batched=True)
    assert Sampler(plain, [(0, 1)], 0).backend == "threading"
