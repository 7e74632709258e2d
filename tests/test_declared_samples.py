"""A mechanism may declare its audit's default budget (`@dpverify.mechanism(samples=...)`):
library adapters set it from the library's per-call cost."""
import numpy as np
import pytest

import dpverify


def laplace(samples=None):
    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)], samples=samples)
    def mech(data, rng, size):
        return data + rng.laplace(0.0, 1.0, size)
    return mech


def test_the_declared_budget_is_the_default_and_an_explicit_one_still_wins():
    # the true ε is the claim, so every stage runs: the last one is the budget
    declared = dpverify.audit(laplace(samples=1 << 12), seed=0)
    assert declared.stages[-1].samples_per_side == 1 << 12
    explicit = dpverify.audit(laplace(samples=1 << 12), samples=1 << 14, seed=0)
    assert explicit.stages[-1].samples_per_side == 1 << 14
    undeclared = dpverify.audit(laplace(), seed=0)
    assert undeclared.stages[-1].samples_per_side == 1 << 22   # the batched default


@pytest.mark.parametrize("bad", [10, 2.5, "many", True])
def test_a_bad_declared_budget_names_what_is_allowed(bad):
    mech = laplace(samples=bad)  # recorded, not raised at import: the audit names it
    with pytest.raises(dpverify.InvalidClaimError, match="'mech'.*samples must be an integer"):
        dpverify.audit(mech)
