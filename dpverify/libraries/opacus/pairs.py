"""Neighbouring datasets for DP-SGD: one example added or removed (the relation Opacus's
accountants analyse), on the user's dataset and at the corners of its size.

On the user's dataset D of N examples ("user"):
- D with a canary added, against D: by default the canary is D's first example with its input
  scaled to CANARY_SCALE times the largest input norm of D (`default_canary`), so that its
  gradient is as large as clipping allows for a model whose gradient grows with its input; or
  the user's canary (e.g. a crafted input and target whose gradient is a constant of norm C);
- D against D without its last example.

Corners of the size, from D's first examples (each a pair of its own, with its own claim:
Opacus derives the rate q = 1/ceil(N/B), the steps and the expected batch size from N):
- "batches": m and m + 1 examples with m a multiple of the batch size B, so that the second
  dataset has one more batch per epoch (more steps, a lower rate);
- "normalisation": B·k and B·k − 1 examples (k the batches of D): the same batches, but the
  expected batch size int(N·q) that loss_reduction="mean" divides by is B against B − 1;
- "tiny": one example, and the same with the canary (most Poisson batches are empty).
"""
from __future__ import annotations

import numpy as np

from ...errors import InvalidPairsError
from .training import Examples, Training

CANARY_SCALE = 10.0
CORNERS = ("user", "batches", "normalisation", "tiny")


def as_examples(inputs, targets, label: str = "D") -> Examples:
    """The user's dataset as Examples: numpy arrays with the same first dimension."""
    inputs = np.asarray(_numpy(inputs))
    targets = np.asarray(_numpy(targets))
    if inputs.ndim < 1 or len(inputs) != len(targets):
        raise InvalidPairsError(f"inputs and targets must have the same first dimension, got "
                                f"shapes {inputs.shape} and {targets.shape}")
    if len(inputs) < 2:
        raise InvalidPairsError(f"the dataset needs at least 2 examples, got {len(inputs)}")
    return Examples(inputs, targets, label)


def _numpy(value):
    """A torch tensor as a numpy array; anything else as given."""
    return value.detach().cpu().numpy() if hasattr(value, "detach") else value


def default_canary(data: Examples):
    """The first example with its input scaled to norm CANARY_SCALE × the largest input norm
    of the dataset (at least 1); an all-zero first input becomes all ones first."""
    first = data.inputs[0].astype(float)
    if not np.any(first):
        first = np.ones_like(first)
    largest = max(float(np.linalg.norm(data.inputs.reshape(len(data), -1), axis=1).max()), 1.0)
    scaled = first * (CANARY_SCALE * largest / np.linalg.norm(first))
    return scaled.astype(data.inputs.dtype), data.targets[0]


def corner_pairs(training: Training, data: Examples, canary=None) -> dict[str, list[tuple]]:
    """{corner: [(D, D'), ...]} for the corners that apply to this dataset (module docstring)."""
    canary_input, canary_target = default_canary(data) if canary is None else map(
        np.asarray, canary)
    n, b = len(data), training.batch_size
    corners = {"user": [
        (data.plus(canary_input, canary_target, "D + canary"), data),
        (data, data.subset(n - 1, "D without its last example"))]}
    m = b * ((n - 1) // b)
    if m >= 1 and not training.drop_last:
        corners["batches"] = [(data.subset(m + 1, f"the first {m + 1} examples"),
                               data.subset(m, f"the first {m} examples"))]
    full = b * (n // b)
    if b >= 2 and full >= 2 and training.loss_reduction == "mean":
        corners["normalisation"] = [(data.subset(full, f"the first {full} examples"),
                                     data.subset(full - 1, f"the first {full - 1} examples"))]
    if training.drop_last:   # a one-example dataset has no batch to keep
        return corners
    first = data.subset(1, "the first example")
    corners["tiny"] = [(first.plus(canary_input, canary_target, "the first example + canary"),
                        first)]
    return corners


__all__ = ["CORNERS", "CANARY_SCALE", "as_examples", "corner_pairs", "default_canary"]
