"""The preflight's checks of what a mechanism promises (issue 27, items 2 and 3): a batched form
returns `size` independent outputs, and the same seed gives the same outputs."""
import itertools

import numpy as np
import pytest

import dpverify
from dpverify.errors import ContractError, RandomnessError
from dpverify.mechanism import as_mechanism
from dpverify.sampling import Sampler, check_uses_rng
from mechanisms_under_test import ZOO
from mechanisms_under_test.dpsniper import DPSNIPER
from mechanisms_under_test.floating_point import FLOATING


@dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
def broadcast_laplace(data, rng, size):
    """The slip the check is for: one noise value broadcast to the whole batch."""
    return np.full(size, data + rng.laplace(0, 1))


def test_a_broadcast_batch_is_a_contract_error_never_a_pass():
    for seed in range(5):
        with pytest.raises(ContractError, match=r"'broadcast_laplace'.*input 0\.0.*independent"):
            dpverify.audit(broadcast_laplace, samples=1 << 12, seed=seed)


def test_the_cli_reports_it_as_an_error_not_a_finding(tmp_path, capsys):
    from dpverify.interfaces.cli import main
    target = tmp_path / "bcast.py"
    target.write_text("import numpy as np\nimport dpverify\n\n"
                      "@dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])\n"
                      "def bcast(data, rng, size):\n"
                      "    return np.full(size, data + rng.laplace(0, 1))\n")
    assert main(["audit", str(target), "--samples", "4096"]) == 2
    assert "independent outputs" in capsys.readouterr().err


def test_every_zoo_mechanism_keeps_the_batch_contract():
    for mech in [*ZOO.values(), *DPSNIPER.values(), *FLOATING.values()]:
        m = as_mechanism(mech)
        pairs = dpverify.pairs.normalize(m.pairs)
        with Sampler(m, pairs, 0, n_jobs=1) as sampler:
            for p in range(len(pairs)):
                for side in (0, 1):
                    check_uses_rng(sampler, p, side)


@dpverify.mechanism(epsilon=5.0, pairs=[(0, 1)])
def mostly_zero(data, rng, size):
    """Correct, and often one value for a whole batch of 32 (P = 0.97^32 ≈ 0.38), sometimes
    another: a check that flagged constant batches alone would reject it on most seeds."""
    return (rng.random(size) < 0.03).astype(np.int64)


def test_batches_that_happen_to_repeat_one_value_are_not_rejected():
    m = as_mechanism(mostly_zero)
    constant = 0
    for seed in range(300):
        with Sampler(m, [(0, 1)], seed, n_jobs=1) as sampler:
            first = sampler.preflight(0, 0, 64, twice=False, batches=2)[0]
            constant += all(len(np.unique(b.keys)) == 1 for b in first)
            check_uses_rng(sampler, 0, 0)
    assert constant > 30  # the situation arose often, and was never taken for a broadcast


def test_state_kept_between_calls_is_named_as_such():
    calls = itertools.count()

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def budget_runs_down(data, rng, size):
        return data + rng.laplace(0, 1.0 + next(calls), size)

    with pytest.raises(RandomnessError, match="keeps state between calls"):
        dpverify.audit(budget_runs_down, samples=1 << 12)


def test_global_randomness_is_named_as_such():
    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def global_numpy(data, rng, size):
        return data + np.random.laplace(0, 1.0, size)

    with pytest.raises(RandomnessError, match="somewhere other than the `rng`") as caught:
        dpverify.audit(global_numpy, samples=1 << 12)
    assert "keeps state" not in str(caught.value)


@dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
def mostly_shared_laplace(data, rng, size):
    """A batch sharing most of its noise: one draw for the batch plus a little of each run's."""
    return data + rng.laplace(0, 1) + rng.laplace(0, 0.01, size)


def test_a_batch_that_shares_most_of_its_noise_is_a_contract_error():
    for seed in range(5):
        with pytest.raises(ContractError, match=r"'mostly_shared_laplace'.*spread far less"):
            dpverify.audit(mostly_shared_laplace, samples=1 << 12, seed=seed, n_jobs=1)


def test_the_span_test_has_its_stated_null_law():
    """span_pvalue is a distribution function (it reaches 1), and on a small case it matches
    the share of random rank subsets whose span holds at most t of the others."""
    from math import comb

    from dpverify.sampling.checks import span_pvalue
    assert span_pvalue(32, 32, 32) == pytest.approx(1.0)
    assert span_pvalue(0, 32, 32) == pytest.approx(33 / comb(64, 32))
    rng = np.random.default_rng(3)
    batch, singles, draws = 4, 6, 200_000
    ranks = np.argsort(rng.random((draws, batch + singles)), axis=1)[:, :batch]
    inside = ranks.max(axis=1) - ranks.min(axis=1) + 1 - batch
    for t in range(singles + 1):
        assert np.mean(inside <= t) == pytest.approx(span_pvalue(t, batch, singles), abs=0.004)


@dpverify.mechanism(epsilon=1.0, pairs=[(1, 0)])
def rare_release(data, rng, size):
    """Releases a partition in 2% of runs on D = 1 and never on D' = 0 (ε = ∞): a batch holds
    long outputs where the single-run draws of the preflight hold none."""
    hits = rng.random(size) < (0.02 if data else 0.0)
    return [(("a", 5),) if h else () for h in hits]


def test_a_rare_long_output_does_not_crash_the_preflight_and_is_caught():
    result = dpverify.audit(rare_release, seed=0, samples=1 << 14)
    assert result.verdict == "violation"
