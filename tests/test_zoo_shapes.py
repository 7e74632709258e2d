"""Fast checks of the mechanism zoo: output shapes and types, determinism under a seed, and a few
exact-distribution facts (theory.md §3-4).

Statistical checks are on fixed seeds, so they are deterministic; the false-alarm rate of each at
a random seed is stated where it applies.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy.integrate import trapezoid  # numpy.trapezoid is numpy >= 2 only

import dpverify
from mechanisms_under_test import CORRECT, EPSILON_ON_PAIRS, TRUE_EPSILON, ZOO
from mechanisms_under_test.basic import make_randomized_response, rr_keep_probability
from mechanisms_under_test.svt import make_svt1, make_svt3, svt1, svt3, svt5

SIZE = 64

# name -> (numpy dtype kind, shape of one output); None marks SVT3's list of tuples.
EXPECTED = {
    "laplace": ("f", ()),
    "gaussian": ("f", ()),
    "randomized_response": ("i", ()),
    "geometric": ("i", ()),
    "svt1": ("i", (10,)),
    "svt2": ("i", (10,)),
    "svt3": ("f", (10,)),  # masked array
    "svt4": ("i", (10,)),
    "svt5": ("i", (10,)),
    "svt6": ("i", (10,)),
    "rnm1": ("i", ()),
    "rnm2": ("i", ()),
    "rnm3": ("f", ()),
    "rnm4": ("f", ()),
    "noisy_hist1": ("f", (5,)),
    "noisy_hist2": ("f", (5,)),
}

TOP_BOTTOM = {"svt1", "svt2", "svt4", "svt5", "svt6"}


def first_input(mech):
    """D of the mechanism's first declared pair."""
    return list(mech.pairs)[0][0]


def run(mech, seed=0, size=SIZE, data=None):
    data = first_input(mech) if data is None else data
    return mech(data, np.random.default_rng(seed), size)


def test_zoo_is_complete_and_consistent():
    assert set(ZOO) == set(EXPECTED) == set(TRUE_EPSILON)
    assert CORRECT <= set(ZOO)
    assert set(EPSILON_ON_PAIRS) <= set(ZOO)
    for name, mech in ZOO.items():
        assert isinstance(mech, dpverify.Mechanism)
        assert mech.name == name and mech.batched and mech.pairs
        # Correct exactly when the true epsilon is within the claim.
        assert (name in CORRECT) == (TRUE_EPSILON[name] <= mech.epsilon + 1e-12), name
        assert EPSILON_ON_PAIRS.get(name, 0.0) <= TRUE_EPSILON[name]


@pytest.mark.parametrize("name", sorted(ZOO))
def test_docstring_states_claim_and_true_epsilon(name):
    doc = ZOO[name].__doc__
    assert re.search(r"^Claim: epsilon = \S+, delta = \S+$", doc, re.M), doc
    found = re.search(r"^True epsilon: (\S+)$", doc, re.M)
    assert found, doc
    assert float(found.group(1)) == pytest.approx(TRUE_EPSILON[name], rel=1e-5)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_output_shape_and_type(name):
    out = run(ZOO[name])
    if EXPECTED[name] is None:  # SVT3: list of variable-length tuples
        assert isinstance(out, list) and len(out) == SIZE
        for t in out:
            assert isinstance(t, tuple) and 1 <= len(t) <= 10
            assert all(v is None or isinstance(v, float) for v in t)
        return
    kind, shape = EXPECTED[name]
    assert isinstance(out, np.ndarray)
    assert out.shape == (SIZE, *shape)
    assert out.dtype.kind == kind
    if name in TOP_BOTTOM:
        assert out.dtype == np.int8
        assert set(np.unique(out)) <= {-1, 0, 1}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_same_seed_same_outputs(name):
    a, b, c = run(ZOO[name], seed=5), run(ZOO[name], seed=5), run(ZOO[name], seed=6)
    if isinstance(a, list):
        assert a == b and a != c
    else:
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


def test_abort_encoding_is_a_suffix_after_the_cutoff():
    """-1 appears exactly after the c-th ⊤ (c = 1 here), never in SVT5 (no cutoff)."""
    for mech in (ZOO["svt1"], ZOO["svt2"], ZOO["svt4"]):
        out = run(mech, size=5000, data=np.r_[np.full(5, 2.0), np.zeros(5)])
        tops = np.cumsum(out == 1, axis=1)
        done_before = np.c_[np.zeros(len(out), int), tops[:, :-1]] >= 1
        np.testing.assert_array_equal(out == -1, done_before)
    assert not (run(ZOO["svt5"], size=5000) == -1).any()
    assert not (run(ZOO["svt6"], size=5000) == -1).any()


def test_zoo_laplace_noise_is_laplace():
    """The SVT modules draw Laplace noise as scale · Exp(1) · random sign: on 2^18 draws the
    Kolmogorov–Smirnov test against Laplace(0, 3) (p-value > 0.01, a 1% false-alarm rate on a
    random seed) and the mean of |X| = 3 within 4 standard errors (3/√n each)."""
    from scipy import stats

    from mechanisms_under_test._common import laplace_noise

    x = laplace_noise(np.random.default_rng(11), 3.0, 1 << 18)
    assert x.shape == (1 << 18,) and x.dtype == np.float64
    assert stats.kstest(x, stats.laplace(scale=3.0).cdf).pvalue > 0.01
    assert abs(np.abs(x).mean() - 3.0) < 4 * 3.0 / math.sqrt(x.size)
    assert abs((x > 0).mean() - 0.5) < 4 * 0.5 / math.sqrt(x.size)


def svt_cutoff1_output_probabilities(q, rho_scale, nu_scale, threshold):
    """P(⊥^k ⊤ | q) for k = 0..n−1, then P(⊥^n | q), of a cutoff-1 SVT with ρ ~ Lap(rho_scale)
    and νᵢ ~ Lap(nu_scale): ∫ f_ρ(r) Π_{i<k} F_ν(T + r − qᵢ) (1 − F_ν(T + r − q_k)) dr
    (theory.md §4), by the trapezoid rule with step 0.05 on [-1500, 1500]."""
    from scipy import stats

    r = np.arange(-1500.0, 1500.0 + 1e-9, 0.05)
    density = stats.laplace(scale=rho_scale).pdf(r)
    below = stats.laplace(scale=nu_scale).cdf(threshold + r[None, :]
                                              - np.asarray(q, float)[:, None])
    before = np.vstack([np.ones_like(r), np.cumprod(below, axis=0)])  # ⊥ on the first k
    tops = [trapezoid(density * before[k] * (1 - below[k]), r) for k in range(len(q))]
    return np.array(tops + [trapezoid(density * before[-1], r)])


def test_svt4_output_frequencies_match_quadrature():
    """SVT4 at ε = 0.1 (ρ ~ Lap(40), ν ~ Lap(40/3), T = 1): on 2^20 runs the frequency of every
    output ⊥^k⊤ and ⊥^10 is within 4 standard errors of its integral."""
    q = np.r_[np.full(9, 2.0), 0.0]
    out = run(ZOO["svt4"], seed=3, size=1 << 20, data=q)
    expected = svt_cutoff1_output_probabilities(q, 40.0, 40.0 / 3, 1.0)
    assert expected.sum() == pytest.approx(1.0, abs=1e-6)
    for k, p in enumerate(expected):
        pattern = np.r_[np.zeros(k), 1, np.full(9 - k, -1)] if k < 10 else np.zeros(10)
        seen = (out == pattern).all(axis=1).mean()
        assert abs(seen - p) < 4 * math.sqrt(p / out.shape[0]), (k, seen, p)


@pytest.mark.parametrize("name, rho_scale, nu_scale, threshold", [
    ("svt1", 20.0, 40.0, 0.5), ("svt2", 20.0, 40.0, 1.0), ("svt4", 40.0, 40.0 / 3, 1.0)])
def test_epsilon_on_pairs_is_the_largest_output_ratio_on_the_declared_pairs(
        name, rho_scale, nu_scale, threshold):
    """EPSILON_ON_PAIRS of the cutoff-1 SVTs: max over the declared pairs and every output of
    |ln P(o|D)/P(o|D')| matches the table to its 4 decimals."""
    def outputs(q):
        return svt_cutoff1_output_probabilities(q, rho_scale, nu_scale, threshold)

    largest = max(np.max(np.abs(np.log(outputs(d) / outputs(d2))))
                  for d, d2 in dpverify.pairs.normalize(ZOO[name].pairs))
    assert round(largest, 4) == EPSILON_ON_PAIRS[name]


def test_svt3_tuples_end_at_the_released_value():
    out = run(make_svt3(output="tuples"), size=5000, data=np.zeros(10))
    for t in out:
        released = [v for v in t if v is not None]
        assert len(released) <= 1
        # c = 1: either ten Nones, or Nones up to the one released value that ends the tuple.
        assert released == ([] if t[-1] is None else [t[-1]])
        assert len(t) == 10 or released


def test_svt3_masked_output_matches_the_tuple_output():
    masked = run(svt3, size=2000, data=np.zeros(10))
    tuples = run(make_svt3(output="tuples"), size=2000, data=np.zeros(10))
    assert isinstance(masked, np.ma.MaskedArray) and masked.shape == (2000, 10)
    for row, t in zip(masked, tuples):
        as_tuple = [None if m else float(v) for v, m in zip(row.data, np.ma.getmaskarray(row))]
        if t[-1] is not None:  # released at position len(t) - 1, masked after
            as_tuple = as_tuple[:len(t)]
        assert tuple(as_tuple) == t


def test_svt1_with_c1_never_outputs_more_than_one_top():
    mech = make_svt1(c=1)
    for data, _ in list(mech.pairs)[::2]:
        out = run(mech, seed=1, size=20_000, data=data)
        assert ((out == 1).sum(axis=1) <= 1).all()


def test_svt5_x_pair_witness():
    """Stoddard's SVT: with q(D) = 1^5 0^5 the output ⊤^5⊥^5 is possible; with q(D') = 0^5 1^5 it
    is impossible (it would need 0 ≥ T + ρ > 1). P_D = P(-1 < ρ ≤ 0) ≈ 0.024, so missing it in
    20000 draws has probability < 1e-200."""
    witness = np.r_[np.ones(5), np.zeros(5)].astype(np.int8)
    d, d_prime = np.r_[np.ones(5), np.zeros(5)], np.r_[np.zeros(5), np.ones(5)]
    hits_d = (run(svt5, seed=2, size=20_000, data=d) == witness).all(axis=1).sum()
    hits_d_prime = (run(svt5, seed=3, size=20_000, data=d_prime) == witness).all(axis=1).sum()
    assert hits_d > 0
    assert hits_d_prime == 0


@pytest.mark.parametrize("k", [2, 3])
def test_randomized_response_keep_rate(k):
    """Keep rate within 4 standard errors of e^ε/(e^ε+k−1) (false-alarm rate 6e-5 per seed)."""
    mech = ZOO["randomized_response"] if k == 2 else make_randomized_response(0.5, k=k)
    n = 100_000
    for value in range(k):
        out = run(mech, seed=10 + value, size=n, data=value)
        assert out.dtype.kind == "i" and set(np.unique(out)) <= set(range(k))
        p = rr_keep_probability(0.5, k)
        assert abs((out == value).mean() - p) <= 4 * math.sqrt(p * (1 - p) / n)
        if k > 2:  # the other values are equally likely
            others = np.bincount(out[out != value], minlength=k)
            others = np.delete(others, value)
            assert others.min() > 0.9 * others.max()


def test_svt_thresholds_follow_the_benchmark():
    """SVT1 uses T = 0.5, the others T = 1 (anchors.md)."""
    assert "T = 0.5" in svt1.__doc__
    assert "T = 1." in ZOO["svt2"].__doc__
