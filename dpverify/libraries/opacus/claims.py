"""The claim, read from Opacus itself (docs/theory.md §7): one training of a dataset through
`make_private` (or `make_private_with_epsilon`), then `PrivacyEngine.get_epsilon(δ)`, the
figure a user reports. Nothing is re-derived: the accountant (RDP, PRV or GDP) is the one the
user chose, fed by Opacus's own optimizer hook.

A pair's two datasets may get different figures (Opacus derives the sampling rate, the number
of steps and the expected batch size from the dataset's size); the claim of a pair is the larger
one, the most Opacus says of either dataset.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .training import Examples, Training, prepared, run_loop


@dataclass(frozen=True)
class Reading:
    """What Opacus says of one dataset's training: ε at δ from its accountant, and the
    quantities it derived from the dataset's size."""

    epsilon: float
    delta: float
    steps: int                 # optimizer steps in the training
    sample_rate: float         # 1 / len(data loader)
    expected_batch_size: float  # what loss_reduction="mean" divides the noisy sum by
    noise_multiplier: float    # σ (make_private_with_epsilon's choice, or the user's)

    def describe(self) -> str:
        return (f"ε = {self.epsilon:.4g} at δ = {self.delta:g} ({self.steps} steps, q = "
                f"{self.sample_rate:.4g}, σ = {self.noise_multiplier:.4g}, expected batch "
                f"{self.expected_batch_size:g})")


def read(training: Training, state: dict, examples: Examples, delta: float) -> Reading:
    """One training of `examples` and what its PrivacyEngine then reports at `delta`."""
    engine, module, optimizer, loader, criterion = prepared(training, state, examples,
                                                            np.random.default_rng(0))
    steps = []
    run_loop(training, module, optimizer, loader, criterion, lambda: steps.append(1))
    return Reading(epsilon=float(engine.get_epsilon(delta)), delta=float(delta),
                   steps=len(steps), sample_rate=1.0 / len(loader),
                   expected_batch_size=optimizer.expected_batch_size,
                   noise_multiplier=float(optimizer.noise_multiplier))


__all__ = ["Reading", "read"]
