"""Fast checks of the DP-Sniper benchmark entries (mechanisms_under_test/dpsniper.py): output
shapes and types, determinism under a seed, and exact-distribution facts.

Statistical checks run on fixed seeds, so they are deterministic; each uses a 4-standard-error
tolerance.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest

import dpverify
from mechanisms_under_test.dpsniper import (
    CORRECT_DPSNIPER, DPSNIPER, TRUE_EPSILON_DPSNIPER, bloom_filter, prefix_sum, rappor,
    one_time_rappor, rappor_bit_probabilities, rappor_epsilon, truncated_geometric,
    truncated_geometric_probabilities, truncated_geometric_true_epsilon)

SIZE = 64

# name -> (numpy dtype kind, shape of one output, masked?)
EXPECTED = {
    "truncated_geometric": ("i", (), False),
    "rappor": ("i", (20,), False),
    "one_time_rappor": ("i", (20,), False),
    "laplace_parallel": ("f", (20,), False),
    "svt34_parallel": ("f", (20,), True),
    "prefix_sum": ("f", (10,), False),
    "numerical_svt": ("f", (10,), True),
}


def first_input(mech):
    return list(mech.pairs)[0][0]


def run(mech, seed=0, size=SIZE, data=None):
    data = first_input(mech) if data is None else data
    return mech(data, np.random.default_rng(seed), size)


def test_registry_is_complete_and_consistent():
    assert set(DPSNIPER) == set(EXPECTED) == set(TRUE_EPSILON_DPSNIPER)
    assert CORRECT_DPSNIPER <= set(DPSNIPER)
    for name, mech in DPSNIPER.items():
        assert isinstance(mech, dpverify.Mechanism)
        assert mech.name == name and mech.batched and mech.pairs
        assert mech.epsilon == pytest.approx(0.1)
        assert (name in CORRECT_DPSNIPER) == (TRUE_EPSILON_DPSNIPER[name] <= mech.epsilon + 1e-12)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_docstring_states_claim_and_true_epsilon(name):
    text = DPSNIPER[name].__doc__
    assert re.search(r"^Claim: epsilon = 0\.1, delta = 0$", text, re.M), text
    found = re.search(r"^True epsilon: (\S+)$", text, re.M)
    assert found, text
    assert float(found.group(1)) == pytest.approx(TRUE_EPSILON_DPSNIPER[name], rel=1e-5)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_output_shape_type_and_determinism(name):
    kind, shape, masked = EXPECTED[name]
    mech = DPSNIPER[name]
    for a, b in mech.pairs:
        for data in (a, b):
            out = run(mech, data=data)
            assert isinstance(out, np.ndarray)
            assert isinstance(out, np.ma.MaskedArray) == masked
            assert out.dtype.kind == kind and out.shape == (SIZE, *shape)
    out1, out2 = run(mech, seed=7), run(mech, seed=7)
    assert np.array_equal(np.ma.getdata(out1), np.ma.getdata(out2))
    assert np.array_equal(np.ma.getmaskarray(out1), np.ma.getmaskarray(out2))
    assert not np.array_equal(np.ma.getdata(out1), np.ma.getdata(run(mech, seed=8)))


def test_truncated_geometric_table_and_true_epsilon():
    probs = truncated_geometric_probabilities(5, 3)
    assert all(sum(row) == 1 and min(row) > 0 for row in probs)
    # Clamped two-sided geometric with alpha = 8/9: interior mass ∝ alpha^|y - c|.
    alpha = Fraction(8, 9)
    assert probs[2][3] / probs[2][2] == alpha and probs[2][4] / probs[2][2] == alpha ** 2
    assert truncated_geometric_true_epsilon(5, 3) == pytest.approx(math.log(9 / 8), abs=1e-12)
    assert TRUE_EPSILON_DPSNIPER["truncated_geometric"] == pytest.approx(0.117783, abs=1e-6)


def test_truncated_geometric_matches_its_table():
    n = 100_000
    probs = truncated_geometric_probabilities(5, 3)
    for c in range(6):
        y = truncated_geometric(c, np.random.default_rng(100 + c), n)
        assert y.min() >= 0 and y.max() <= 5
        counts = np.bincount(y, minlength=6)
        for value in range(6):
            p = float(probs[c][value])
            assert abs(counts[value] / n - p) <= 4 * math.sqrt(p * (1 - p) / n), (c, value)


def test_truncated_geometric_rejects_bad_counts():
    with pytest.raises(ValueError):
        truncated_geometric(6, np.random.default_rng(0), 4)


def test_prefix_sum_is_cumulative_with_laplace_10_steps():
    q = np.arange(10, dtype=float)
    n = 20_000
    out = prefix_sum(q, np.random.default_rng(5), n)
    steps = np.diff(np.concatenate([np.zeros((n, 1)), out], axis=1), axis=1) - q
    assert abs(steps.mean()) < 0.5
    scale = np.abs(steps).mean(axis=0)  # Laplace MLE of the scale, per column
    assert np.all(np.abs(scale / 10.0 - 1) < 0.10), scale


def test_laplace_parallel_columns_have_scale_200():
    out = DPSNIPER["laplace_parallel"](3.0, np.random.default_rng(2), 20_000)
    assert np.abs(out - 3.0).mean() == pytest.approx(200.0, rel=0.05)


@pytest.mark.parametrize("mech, f, p, q", [(rappor, 0.75, 0.45, 0.55),
                                            (one_time_rappor, 0.95, None, None)])
def test_rappor_bit_rates_match_closed_form(mech, f, p, q):
    hi, lo = rappor_bit_probabilities(f, p, q)
    if p is not None:
        assert (hi, lo) == pytest.approx((0.5125, 0.4875))
    else:
        assert (hi, lo) == pytest.approx((0.525, 0.475))
    n = 100_000
    for value in (0, 1):
        bits = bloom_filter(value)
        rates = mech(value, np.random.default_rng(40 + value), n).mean(axis=0)
        expected = np.where(bits == 1, hi, lo)
        se = np.sqrt(expected * (1 - expected) / n)
        assert np.all(np.abs(rates - expected) <= 4 * se)


def test_rappor_true_epsilon_counts_differing_bits():
    # The declared pair's filters are disjoint: 8 differing bits, anchors.md's ~0.40 / ~0.80.
    differ = int(np.count_nonzero(bloom_filter(1) != bloom_filter(3)))
    assert differ == 8
    assert TRUE_EPSILON_DPSNIPER["rappor"] == pytest.approx(8 * math.log(0.5125 / 0.4875))
    assert TRUE_EPSILON_DPSNIPER["one_time_rappor"] == pytest.approx(0.8010, abs=1e-3)
    # Colliding filters differ in fewer bits: the true ε scales with the count.
    few = int(np.count_nonzero(bloom_filter(0) != bloom_filter(1)))
    assert rappor_epsilon(0, 1, 0.75, 0.45, 0.55) == pytest.approx(few * math.log(0.5125 / 0.4875))


def test_svt34_parallel_masks():
    out = run(DPSNIPER["svt34_parallel"], size=20_000, data=np.full(10, 2.0))
    mask = np.ma.getmaskarray(out)
    data = np.ma.getdata(out)
    svt3, svt4 = ~mask[:, :10], data[:, 10:]
    assert svt3.sum(axis=1).max() <= 2  # at most c = 2 released values
    assert set(np.unique(svt4[~mask[:, 10:]])) <= {0.0, 1.0}
    # SVT4 is masked exactly after its second ⊤.
    tops = np.where(mask[:, 10:], 0.0, svt4)
    before = np.cumsum(tops, axis=1) - tops
    assert np.array_equal(mask[:, 10:], before >= 2)


def test_numerical_svt_releases_at_most_one_value():
    out = run(DPSNIPER["numerical_svt"], size=20_000, data=np.full(10, 2.0))
    released = (~np.ma.getmaskarray(out)).sum(axis=1)
    assert released.max() == 1 and released.min() == 0
