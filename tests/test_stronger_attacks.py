"""Issue 3's attacks: float bit patterns (Mironov 2012), per-coordinate likelihood-ratio sums on
decorrelated coordinates, support-mismatch reporting. Every test compares with a known truth."""
from __future__ import annotations

import math

import numpy as np
import pytest

import dpverify
from dpverify.attacks import float_bit_pattern, whitening
from dpverify.interfaces.report import markdown
from mechanisms_under_test.dpsniper import DPSNIPER, TRUE_EPSILON_DPSNIPER
from mechanisms_under_test.floating_point import (FLOATING, TRUE_EPSILON_FLOATING,
                                                   snapping_grid)


def _zeros(x):
    return float_bit_pattern(np.array([x]))[0] & 63


def test_float_bit_pattern_reads_trailing_zeros_and_binade():
    assert _zeros(0.375) == 51            # 1.1b × 2^-2: one mantissa bit set, the top one
    assert _zeros(1.0) == 52              # empty mantissa
    assert _zeros(np.nextafter(0.25, 1)) == 0
    key = float_bit_pattern(np.array([-3.0]))[0]
    assert key >> 20 == 1 and ((key >> 6) & 0x7FF) - 1023 == 1
    assert float_bit_pattern(np.array([np.nan]))[0] == -1


def test_sums_with_one_land_on_a_coarser_grid():
    """The fact the attack learns: 1 + n for n in (−3/4, −1/2) never has an odd mantissa in
    [1/4, 1/2), while n itself there often has."""
    rng = np.random.default_rng(3)
    n = rng.uniform(-0.75, -0.5, 100_000)
    assert np.all(_bits_zero(1.0 + n) >= 1)
    own = rng.uniform(0.25, 0.5, 100_000)
    assert np.mean(_bits_zero(own) == 0) > 0.1


def _bits_zero(x):
    return float_bit_pattern(x) & 63


def test_textbook_float_laplace_is_a_support_mismatch():
    mech = FLOATING["numpy_laplace"]
    result = dpverify.audit(mech, samples=1 << 16, seed=4, stop_early=False)
    assert TRUE_EPSILON_FLOATING["numpy_laplace"] == math.inf
    assert result.verdict == "violation"
    assert result.witness.attack == "float bit pattern"
    assert result.witness.count_D_prime == 0 and result.witness.count_D >= 20
    assert result.support_mismatch
    assert "SUPPORT MISMATCH" in result.summary()
    document = {"results": [result.as_dict()]}
    assert document["results"][0]["support_mismatch"] is True
    assert "likely ∞" in markdown(document)


def test_float_attacks_are_opt_in():
    """Without floating_point the same code is audited as the real-valued Laplace it
    approximates, which honours the claim."""
    result = dpverify.audit(FLOATING["numpy_laplace"], samples=1 << 16, seed=4,
                            floating_point=False)
    assert result.verdict == "pass"
    assert result.epsilon_lower_bound <= 0.1


@pytest.mark.parametrize("seed", [0, 1])
def test_snapping_laplace_passes_its_claim(seed):
    mech = FLOATING["snapping_laplace"]
    result = dpverify.audit(mech, samples=1 << 18, seed=seed)
    assert result.verdict == "pass"
    assert result.epsilon_lower_bound <= TRUE_EPSILON_FLOATING["snapping_laplace"]
    assert not result.support_mismatch
    out = mech(0.3, np.random.default_rng(seed), 10_000)
    assert np.all(out % snapping_grid(10.0) == 0)  # every output on the Λ-grid


def test_whitening_turns_running_sums_into_increments():
    rng = np.random.default_rng(5)
    increments = rng.laplace(0, 10, size=(200_000, 6))
    sums = np.cumsum(increments, axis=1)
    transform = whitening(sums)
    assert transform is not None
    recovered = (sums - sums.mean(axis=0)) @ transform.T
    corr = np.corrcoef(recovered, rowvar=False)
    assert np.max(np.abs(corr - np.eye(6))) < 0.02
    # each recovered coordinate is (up to scale) one increment
    for j in range(6):
        assert abs(np.corrcoef(recovered[:, j], increments[:, j])[0, 1]) > 0.99
    assert whitening(increments) is None  # already uncorrelated: left alone


def test_prefix_sum_bound_beats_published_and_stays_below_truth():
    """PrefixSum (true ε = 1.0): DP-Sniper certified 0.504 (LR) / 0.577 (NN) on 4·10^8 runs."""
    result = dpverify.audit(DPSNIPER["prefix_sum"], confidence=0.9, samples=1 << 17, seed=0,
                            stop_early=False)
    assert 0.7 <= result.epsilon_lower_bound <= TRUE_EPSILON_DPSNIPER["prefix_sum"]
    assert result.witness.attack == "coordinate sum"


def test_coordinate_sum_scores_like_per_coordinate_table_lookups():
    """The score is computed as a weighted count over all coordinates at once; it must equal the
    sum of per-coordinate cell lookups, absent (NaN) cells and a split of NaN (a coordinate
    never present while learning: everything present counts as below) included."""
    from dpverify.attacks import CoordinateSum
    from dpverify.sampling.encoding import Encoded
    rng = np.random.default_rng(3)
    d, n = 6, 2000
    edges = [np.array([rng.normal()]) for _ in range(d - 1)] + [np.array([np.nan])]
    ratios = [rng.normal(size=3) for _ in range(d)]
    x = rng.normal(size=(n, d))
    x[rng.random((n, d)) < 0.2] = np.nan
    enc = Encoded(keys=np.zeros(n, dtype=np.int64), struct=np.zeros(n, dtype=np.int64), X=x)
    model = CoordinateSum(np.zeros(d), None, edges, ratios, "t")
    expected = np.zeros(n)
    for j in range(d):
        col = x[:, j]
        cell = np.where(np.isnan(col), 2, (col >= edges[j][0]).astype(int))
        expected += ratios[j][cell]
    assert np.allclose(model.score(enc), expected, rtol=0, atol=1e-12)


def test_shrinkage_pulls_equal_weak_effects_to_their_common_value():
    """20 coordinates with the same weak effect, each estimated with noise about as large as
    the effect (LaplaceParallel's situation): over 200 seeds the shrunk estimates have a far
    smaller squared error than the raw ones and almost never the wrong sign."""
    from dpverify.attacks import shrink_to_common_effect
    rng = np.random.default_rng(0)
    truth, sd, d = 0.005, 0.003, 20
    raw_err = shrunk_err = raw_wrong = shrunk_wrong = 0.0
    for _ in range(200):
        est = truth + sd * rng.standard_normal(d)
        shrunk = shrink_to_common_effect(est, np.full(d, sd ** 2))
        raw_err += np.sum((est - truth) ** 2)
        shrunk_err += np.sum((shrunk - truth) ** 2)
        raw_wrong += np.sum(est < 0)
        shrunk_wrong += np.sum(shrunk < 0)
    assert shrunk_err < 0.25 * raw_err
    assert raw_wrong > 100            # ≈ 4.8% of 4000 raw estimates have the wrong sign
    assert shrunk_wrong < 0.2 * raw_wrong


def test_shrinkage_leaves_clearly_different_effects_alone():
    """One coordinate carries the whole effect (NoisyHist1's one differing bin): the estimates'
    spread dwarfs their noise, so shrinking moves none of them by more than a few noise SDs."""
    from dpverify.attacks import shrink_to_common_effect
    rng = np.random.default_rng(1)
    sd = 0.003
    truth = np.array([0.1, 0, 0, 0, 0, 0])
    est = truth + sd * rng.standard_normal(len(truth))
    shrunk = shrink_to_common_effect(est, np.full(len(truth), sd ** 2))
    assert np.max(np.abs(shrunk - est)) < 2 * sd
    assert shrink_to_common_effect(est[:3], np.full(3, sd ** 2)) is None


def test_shrunk_coordinate_sum_learns_equal_weights_for_laplace_parallel():
    """LaplaceParallel's 20 coordinates each carry ε = 0.005. On search samples of 2^17 per
    input, the raw per-coordinate contrasts are noise-dominated; the shrunk ones must all point
    the right way and lie within a factor 1.5 of each other, on each of 5 seeds."""
    from dpverify.attacks import learn_coordinate_sums
    from dpverify.sampling.encoding import encode
    mech = DPSNIPER["laplace_parallel"]
    for seed in range(5):
        rng = np.random.default_rng(seed)
        n = 1 << 17
        a, _ = encode(mech(1.0, rng, n), n)
        b, _ = encode(mech(0.0, rng, n), n)
        models = {m.label: m for m in learn_coordinate_sums(a, b)}
        shrunk = models["shrunk 2-bin likelihood-ratio sum"]
        contrast = np.array([r[1] - r[0] for r in shrunk.ratios])
        assert np.all(contrast > 0)
        assert contrast.max() < 1.5 * contrast.min()


def _mixed_outputs(rng, n, favoured):
    """A product of two independent parts: two flags whose JOINT pattern carries the signal
    ((1, 1): 0.2 under D, 0.1 under D'), and a Gaussian value released with probability 0.6
    under D, 0.4 under D' (masked otherwise). The best event, flags (1, 1) and a release, has
    ratio 0.12 / 0.04 = 3; the flags alone reach 2, the release alone 1.5."""
    patterns = np.array([[1, 1], [0, 0], [1, 0], [0, 1]], dtype=float)
    probs = [0.2, 0.2, 0.3, 0.3] if favoured else [0.1, 0.3, 0.3, 0.3]
    flags = patterns[rng.choice(4, size=n, p=probs)]
    released = rng.random(n) < (0.6 if favoured else 0.4)
    values = np.column_stack([rng.normal(size=n), flags])
    mask = np.zeros(values.shape, dtype=bool)
    mask[:, 0] = ~released
    return np.ma.MaskedArray(values, mask=mask)


def _log_ratio_of_top_event(model, a, b):
    """ln P_D/P_D' of {score ≥ the model's largest score on a}, on the fresh samples a, b."""
    top = model.score(a).max()
    return math.log(np.mean(model.score(a) >= top - 1e-12) / np.mean(model.score(b) >= top - 1e-12))


def test_parts_ratio_finds_the_joint_event_of_independent_discrete_and_masked_parts():
    from dpverify.attacks import DiscretePartRatio, PartsLikelihoodRatio, learn_models
    from dpverify.sampling.encoding import encode

    rng = np.random.default_rng(11)
    n = 40_000
    learn = [encode(_mixed_outputs(rng, n, f), n)[0] for f in (True, False)]
    fresh = [encode(_mixed_outputs(rng, n, f), n)[0] for f in (True, False)]
    models = learn_models(*learn)
    part = next(m for m in models if isinstance(m, DiscretePartRatio))
    parts = next(m for m in models if isinstance(m, PartsLikelihoodRatio))
    assert part.columns == (1, 2)           # the flags, not the Gaussian value
    assert _log_ratio_of_top_event(part, *fresh) == pytest.approx(math.log(2), abs=0.08)
    assert _log_ratio_of_top_event(parts, *fresh) == pytest.approx(math.log(3), abs=0.1)


def test_discrete_part_keys_agree_on_float32_search_and_float64_certifying_data():
    from dpverify.attacks import learn_discrete_part_ratio
    from dpverify.sampling.encoding import encode

    rng = np.random.default_rng(12)
    a, b = (encode(_mixed_outputs(rng, 5000, f), 5000)[0] for f in (True, False))
    single = encode(_mixed_outputs(rng, 5000, True), 5000)[0]
    single32 = encode(_mixed_outputs(np.random.default_rng(99), 5000, True), 5000)[0]
    single64 = encode(_mixed_outputs(np.random.default_rng(99), 5000, True), 5000)[0]
    single32.X = single32.X.astype(np.float32)
    model = learn_discrete_part_ratio(a, b)
    assert np.array_equal(model.keys_of(single32), model.keys_of(single64))
    assert len(np.unique(model.keys_of(single))) == 4     # the four flag patterns


def test_no_discrete_part_for_outputs_that_are_all_continuous_or_all_discrete():
    from dpverify.attacks import learn_discrete_part_ratio
    from dpverify.sampling.encoding import encode

    rng = np.random.default_rng(13)
    continuous = [encode(rng.normal(size=(4000, 3)), 4000)[0] for _ in range(2)]
    bits = [encode(rng.integers(0, 2, size=(4000, 3)), 4000)[0] for _ in range(2)]
    assert learn_discrete_part_ratio(*continuous) is None
    assert learn_discrete_part_ratio(*bits) is None
