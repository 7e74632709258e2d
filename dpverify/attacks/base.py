"""The protocol every score model follows.

A score model maps encoded outputs o to a score s(o) meant to order them like the likelihood
ratio ln p(o)/q(o) of the two inputs (Neyman–Pearson: the most powerful test of D against D'
thresholds that ratio). Candidate events are then {sign · s(o) ≥ t}; any function of the output
defines a valid event (post-processing, docs/theory.md §1), so a poor model costs power, never
soundness.

Two capabilities are optional; the base class gives each a documented "not supported" default
so callers ask the model instead of probing for attributes:

- `fast_hits`: the event computed some cheaper way than scoring every output (None: score);
- `privacy_loss`: a plug-in privacy-loss distribution for the report (None: the model has none).
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..sampling.encoding import Encoded

MAX_COORDINATES = 32  # models read at most this many leading numeric coordinates of an output


class ScoreModel(ABC):
    """A score function of encoded outputs; NaN means "never in the event"."""

    kind = "score"  # the attack's name in witnesses and reports

    @abstractmethod
    def score(self, enc: Encoded) -> np.ndarray:
        """One float per output: larger means more typical of D than of D'."""

    @abstractmethod
    def describe(self, sign: int, threshold: float) -> str:
        """The event {sign · s ≥ threshold} in words, for the witness."""

    def fast_hits(self, enc: Encoded, sign: int, threshold: float) -> np.ndarray | None:
        """Which outputs are in {sign · s ≥ threshold}, computed without scoring every output;
        None when this model has no such shortcut for this event (the caller then scores). A
        model that returns an array must return exactly the scored event."""
        return None

    def privacy_loss(self, sign: int) -> dict | None:
        """The plug-in distribution of the privacy loss L = ln p(o)/q(o) under the favoured input
        (sign +1: D; docs/theory.md §1), as {"loss", "probability", "of"}; None when the model
        does not estimate one (only the per-output ratio models do)."""
        return None
