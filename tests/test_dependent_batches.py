"""Batches whose runs are not independent are refused (ContractError), never blamed
(docs/method.md, "Independent runs"). The mechanisms here are not those of
reports/adversarial.md: repeats in runs of three, a geometric batch tiled four times, a scale
chosen once per call, and randomized response subsampled by a coin drawn once per call."""
import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom

import dpverify
from dpverify.sampling.checks import (homogeneity_pvalue, lag_pairs, lagged_ties_pvalue,
                                      ties_pvalue)


def _brute_ties_pvalue(values, batch):
    """P[tied pairs in a random `batch`-subset ≥ those of the first `batch` values], by listing
    every subset."""
    def tied(idx):
        _, counts = np.unique(values[list(idx)], return_counts=True)
        return int(sum(c * (c - 1) // 2 for c in counts))
    observed = tied(range(batch))
    subsets = list(itertools.combinations(range(len(values)), batch))
    return sum(tied(s) >= observed for s in subsets) / len(subsets)


@pytest.mark.parametrize("seed", range(6))
def test_ties_pvalue_is_the_exact_permutation_probability(seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, rng.integers(2, 6), size=10)
    _, inverse = np.unique(values, return_inverse=True)
    sizes = np.bincount(inverse)
    in_batch = np.bincount(inverse[:5], minlength=len(sizes))
    assert ties_pvalue(in_batch, sizes) == pytest.approx(_brute_ties_pvalue(values, 5), rel=1e-9)


def test_lag_pairs_share_no_run():
    for runs, lag in [(128, 1), (128, 5), (128, 64), (100, 33)]:
        i, j = lag_pairs(runs, lag)
        both = np.concatenate([i, j])
        assert len(np.unique(both)) == len(both) and np.all(j - i == lag) and j.max() < runs


def test_independence_checks_reject_independent_runs_no_more_than_their_level():
    """1000 tables and 1000 call matrices of independent categorical runs (random laws, 2-5
    values): at p < 0.01 each test rejects at most the 99.9% binomial quantile of 1%."""
    rng = np.random.default_rng(11)
    homogeneous = lagged = 0
    for _ in range(1000):
        law = rng.dirichlet(np.full(rng.integers(2, 6), 0.7))
        homogeneous += homogeneity_pvalue(rng.multinomial(128, law, size=16).astype(float)) < 0.01
        runs = rng.choice(len(law), size=(16, 128), p=law)
        reference = runs[8:12] == runs[12:16]
        lagged += lagged_ties_pvalue(runs[:8], int(reference.sum()), reference.size)[0] < 0.01
    ceiling = binom.ppf(0.999, 1000, 0.01)
    assert homogeneous <= ceiling and lagged <= ceiling, (homogeneous, lagged)


@dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
def gaussian_in_threes(data, rng, size):
    """Gaussian noise (σ = 2), each draw serving three consecutive outputs."""
    return data + np.repeat(rng.normal(0.0, 2.0, -(-size // 3)), 3)[:size]


@dpverify.mechanism(epsilon=1.0, pairs=[(0, 1)])
def geometric_tiled(data, rng, size):
    """Two-sided geometric noise (ε = 1), the batch four copies of a quarter of its draws."""
    quarter = -(-size // 4)
    noise = rng.geometric(1 - math.exp(-1), quarter) - rng.geometric(1 - math.exp(-1), quarter)
    return np.tile(data + noise, 4)[:size]


@dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
def scale_per_call(data, rng, size):
    """Gaussian noise whose σ (0.5 or 4) is chosen once per call."""
    return data + rng.normal(0.0, rng.choice([0.5, 4.0]), size)


@pytest.mark.parametrize("mech, patterns", [
    (gaussian_in_threes, ("equal",)),
    # four copies of a quarter: equal at lag size/4, which the lag test sees in calls of up to
    # 256 runs; in larger calls the copies make the calls differ instead
    (geometric_tiled, ("apart are equal", "differ between calls")),
    (scale_per_call, ("differ between calls",)),
])
def test_dependent_batches_are_refused_with_the_pattern_named(mech, patterns):
    for seed in range(3):
        with pytest.raises(dpverify.ContractError) as caught:
            dpverify.audit(mech, seed=seed, samples=1 << 16, n_jobs=1)
        message = str(caught.value)
        assert mech.name in message and "input" in message
        assert any(pattern in message for pattern in patterns), message


RATE, KEEP = 0.2, math.exp(1.0) / (1 + math.exp(1.0))


def rr_subsampled_per_call(data, rng, size):
    """Binary randomized response (ε = 1) on the record, which a subsampling coin of rate 0.2
    keeps (else the answer is about 0); the coin is drawn once per call, not per run."""
    truth = data if rng.random() < RATE else 0
    keep = rng.random(size) < KEEP
    return np.where(keep, truth, 1 - truth).astype(np.int64)


def _per_run_epsilon() -> float:
    """The exact ε of one run: outputs 1 and 0 on D = 1 against D′ = 0."""
    p1, p0 = RATE * KEEP + (1 - RATE) * (1 - KEEP), 1 - KEEP
    return max(math.log(p1 / p0), math.log((1 - p0) / (1 - p1)))


def test_a_choice_per_call_is_refused_never_blamed(monkeypatch):
    """The coin drawn once per call makes some certifying chunks all-in: without the checks on
    the illustrative sample's calls about 60% of these audits at the per-run claim report a
    violation. With them, 40 seeds give at most the 99% binomial quantile of 5% false alarms,
    and most audits are refused with a message naming the calls."""
    mech = dpverify.mechanism(epsilon=_per_run_epsilon(), pairs=[(1, 0)])(rr_subsampled_per_call)
    alarms = refused = 0
    for seed in range(40):
        try:
            alarms += dpverify.audit(mech, seed=seed, samples=1 << 16, n_jobs=1).verdict == \
                "violation"
        except dpverify.ContractError as exc:
            assert "calls" in str(exc) and mech.name in str(exc)
            refused += 1
    assert alarms <= binom.ppf(0.99, 40, 0.05), (alarms, refused)
    assert refused >= 20, refused


@dpverify.mechanism(epsilon=1.0, pairs=[(1, 0)])
def binary_response(data, rng, size):
    """Binary randomized response, ε = 1, every run from draws of its own."""
    return np.where(rng.random(size) < KEEP, data, 1 - data)


@dpverify.mechanism(epsilon=1.0, delta=1e-3, pairs=[(0.0, 1.0)])
def gaussian_scale(data, rng, size):
    """A correct Gaussian mechanism (σ = 4: (1, 10⁻³)-DP with room to spare)."""
    return data + rng.normal(0.0, 4.0, size)


def test_independent_batches_with_few_values_are_never_refused():
    """The checks' other side, on correct batched mechanisms whose outputs tie all the time
    (binary randomized response) or never (Gaussian), 30 seeds each at a small budget: no
    ContractError (each check's level is 10⁻⁹ or below)."""
    for seed in range(30):
        dpverify.audit(binary_response, seed=seed, samples=1 << 14, n_jobs=1)
        dpverify.audit(gaussian_scale, seed=seed, samples=1 << 14, n_jobs=1)
