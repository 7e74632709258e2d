"""One epoch of DP-SGD on one-dimensional clipped gradients, with the two ways of forming
batches that implementations use, both claiming the Poisson-subsampling accountant's curve
(reports/dpsgd.md, docs/fdp.md; Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha, Zhang, "How Private are DP-SGD
Implementations?", ICML 2024).

Each step releases the sum of its batch's per-example gradients, each clipped to [−1, 1],
plus N(0, σ²) (σ = the noise multiplier times the clip norm 1); the T releases are the output,
shape (size, T). What an attacker of DP-SGD sees is a post-processing of these sums (the
Adaptive Batch Linear Queries view of Chua et al.), so a violation here is one for DP-SGD.

- ``dpsgd_poisson``: step t includes each example independently with probability
  q = b/N (b the batch size, N = T·b the dataset size the rate was set for), for T steps.
  Its claim is exactly what the accountant analyses.
- ``dpsgd_shuffled``: one pass over a random permutation of the data, cut into batches of b
  consecutive examples (the last one shorter when b does not divide the dataset's size), as a
  shuffling data loader does. It claims the same curve, which is what Chua et al. found
  implementations report.

Neighbours add or remove one example (the accountant's relation): a dataset of N − 1 examples
and the same with one more. Two pairs: every other gradient 0 (the accountant's worst case for
Poisson sampling), and every other gradient −1, where the shuffled version's short last batch
reveals, through its sum, whether the example was there. Both entries need dp-accounting
(the claim is its PLD accountant's profile; `dpverify.libraries.accountants`).

True curves: the Poisson entry's is the accountant's (up to the accountant's pessimistic
discretisation) on the first pair, and more private on the second. The shuffled entry's has no
closed form; reports/dpsgd.md gives a lower bound on it and what was measured.
"""
from __future__ import annotations

import math

import numpy as np

import dpverify

STEPS = 10        # T: steps in the epoch
BATCH = 4         # b: expected (Poisson) or fixed (shuffled) batch size
NOISE = 3.0       # σ: noise multiplier (clip norm 1)


def poisson_event(steps=STEPS, noise=NOISE):
    """The accountant's view of the epoch: T self-composed Poisson-subsampled Gaussian steps
    at rate b/(T·b) = 1/T."""
    import dp_accounting
    step = dp_accounting.PoissonSampledDpEvent(1.0 / steps, dp_accounting.GaussianDpEvent(noise))
    return dp_accounting.SelfComposedDpEvent(step, steps)


def accountant_claim(steps=STEPS, noise=NOISE):
    """The epoch's profile from dp_accounting's PLD accountant, add-or-remove neighbours (the
    rate is 1/T whatever the batch size: N = T·b)."""
    from dpverify.libraries.accountants import dp_accounting_profile
    return dp_accounting_profile(poisson_event(steps, noise),
                                 name=f"dp_accounting's PLD accountant, {steps} Poisson-"
                                      f"subsampled Gaussian steps (q = 1/{steps}, σ = {noise:g})")


def neighbour_pairs(steps=STEPS, batch=BATCH):
    """(D with one more example of gradient 1, D without it), the others' gradients 0 or −1."""
    n = steps * batch
    return [(tuple([1.0] + [other] * (n - 1)), tuple([other] * (n - 1))) for other in (0.0, -1.0)]


def clipped(data) -> np.ndarray:
    """Per-example gradients clipped to the norm bound 1."""
    return np.clip(np.asarray(data, dtype=float), -1.0, 1.0)


def make_dpsgd(sampling: str, steps=STEPS, batch=BATCH, noise=NOISE, claim=None):
    """A DP-SGD epoch with `sampling` "poisson" or "shuffled" (module docstring), claiming
    `claim` (default: the Poisson accountant's profile for these parameters)."""
    rate = 1.0 / steps

    def poisson(data, rng, size):
        grads = clipped(data)
        values, counts = np.unique(grads, return_counts=True)
        sums = np.zeros((size, steps))
        for value, count in zip(values, counts):   # Σ over examples = Σ over distinct values
            if value != 0.0:
                sums += value * rng.binomial(int(count), rate, size=(size, steps))
        return sums + rng.normal(0.0, noise, size=(size, steps))

    def shuffled(data, rng, size):
        grads = clipped(data)
        n = grads.size
        if n > steps * batch or n <= (steps - 1) * batch:
            raise ValueError(f"a shuffled epoch of {steps} batches of {batch} needs "
                             f"{(steps - 1) * batch + 1} to {steps * batch} examples, got {n}")
        order = rng.permuted(np.broadcast_to(grads, (size, n)), axis=1)
        padded = np.zeros((size, steps * batch))
        padded[:, :n] = order
        sums = padded.reshape(size, steps, batch).sum(axis=2)
        return sums + rng.normal(0.0, noise, size=(size, steps))

    fn = {"poisson": poisson, "shuffled": shuffled}[sampling]
    fn.__name__ = f"dpsgd_{sampling}"
    fn.__doc__ = (f"One DP-SGD epoch, {sampling} batches: T = {steps} steps, batch {batch}, "
                  f"σ = {noise:g}; output (size, {steps}) noisy batch sums.\n\n"
                  "Claim: the Poisson accountant's privacy profile (dp_accounting PLD)\n"
                  + ("True curve: the claim's (the accountant is tight for it)\n"
                     if sampling == "poisson" else
                     "True curve: below the claim (reports/dpsgd.md)\n"))
    return dpverify.mechanism(profile=claim or accountant_claim(steps, noise),
                              pairs=neighbour_pairs(steps, batch), name=fn.__name__)(fn)


ACCOUNTANT_CLAIM = accountant_claim()   # read once: both entries claim the same curve
dpsgd_poisson = make_dpsgd("poisson", claim=ACCOUNTANT_CLAIM)
dpsgd_shuffled = make_dpsgd("shuffled", claim=ACCOUNTANT_CLAIM)

DPSGD = {m.name: m for m in (dpsgd_poisson, dpsgd_shuffled)}
CORRECT_DPSGD = ("dpsgd_poisson",)


def epsilon_of_accountant(delta: float, steps=STEPS, noise=NOISE) -> float:
    """The accountant's ε at δ (what a DP-SGD user reports), from its own get_epsilon."""
    from dp_accounting.pld import pld_privacy_accountant
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(poisson_event(steps, noise))
    return float(accountant.get_epsilon(delta)) if delta > 0 else math.inf
