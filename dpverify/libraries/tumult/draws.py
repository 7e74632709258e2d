"""Running a Tumult Core measurement for the engine, with its noise drawn from the engine's `rng`.

Where Tumult Core's randomness comes from: every sampler it has (Laplace and Gaussian by inverse
CDF on exact arbitrary-precision arithmetic, geometric and discrete Gaussian by exact rejection
sampling, NoisyQuantile's Gumbel bits and its uniform draw in the chosen interval) takes its
random bits from one numpy Generator, `tmlt.core.random.rng.prng()`, which returns the module
global `_core_privacy_prng` (RDRAND, or os.urandom without it; rebuilt after a fork). The
samplers only ask it for uniform integers. `SeededDraws` puts the engine's `rng` in that
global for the length of one call and puts the library's own generator back after it, under a
lock, so two threads never share it. Same algorithm, same distribution (uniform integers from
PCG64 instead of RDRAND), every draw from `rng`: the mechanism is declared with the engine's
default randomness="rng", and the same seed reproduces the same outputs (the engine's preflight
runs every input twice from one seed and checks exactly that).

Not covered: a noise scale of ∞ (a claim of ε = 0, which dpverify refuses anyway) makes Tumult
Core answer ±∞ from Python's `random` module.

No batched form: every Tumult Core draw is a pure-Python exact sampler, and the calls that
return many draws (AddNoiseToSeries over a long Series, Composition of copies) loop over the
same per-draw call, so they are no faster per draw. The engine runs the scalar form in worker
processes, one per core; measurements are plain Python objects and pickle as they are (with
cloudpickle, which the workers use, also those holding lambdas, e.g. PostProcess).
"""
from __future__ import annotations

import os
import threading
from numbers import Real

import numpy as np

from .inputs import input_form, prepare

_SWAP = threading.Lock()  # one call at a time holds Tumult Core's global generator


def _is_number(value) -> bool:
    return isinstance(value, (Real, np.number)) and not isinstance(value, (bool, np.bool_))


def plain(output):
    """An output the engine can encode: a numeric Series (AddNoiseToSeries) or a list of
    numbers (Composition) as a numpy array; a one-row DataFrame (AggregateByColumn) as a
    tuple of (column, value) pairs in column order; a dict as (key, value) pairs in sorted key
    order; numpy scalars as Python numbers; anything else as it is."""
    import pandas as pd
    if isinstance(output, pd.DataFrame):
        rows = [tuple((c, plain(v)) for c, v in row.items()) for _, row in output.iterrows()]
        return rows[0] if len(rows) == 1 else tuple(rows)
    if isinstance(output, pd.Series):
        output = output.tolist()
    if isinstance(output, dict):
        return tuple((k, plain(output[k])) for k in sorted(output))
    if isinstance(output, (list, tuple)):
        if output and all(_is_number(v) for v in output):
            return np.asarray(output)
        return tuple(plain(v) for v in output)
    if isinstance(output, np.generic):
        return output.item()
    return output


class SeededDraws:
    """f(data, rng) -> one output of the measurement, its noise drawn from `rng` (when the
    installed Tumult Core can be seeded, `can_seed`; else from its own generator).

    Holds the measurement (which pickles as it is) and the form of its input (`input_form`).
    The pandas input made from a pair's plain value is kept for the next call with the same
    value object: the engine calls a chunk's runs with one (deep-copied) input, and building
    a Series costs a fifth of a draw. Tumult Core's measurements do not modify their input.
    """

    def __init__(self, measurement):
        self.measurement = measurement
        self.form = input_form(measurement.input_domain)
        self.seeded = can_seed()
        self._input = (None, None)

    def __getstate__(self):
        return {**self.__dict__, "_input": (None, None)}

    def _prepared(self, data):
        raw, ready = self._input  # one read: another thread may replace it meanwhile
        if raw is not data:
            ready = prepare(self.form, data)
            self._input = (data, ready)
        return ready

    def __call__(self, data, rng):
        data = self._prepared(data)
        if not self.seeded:
            return plain(self.measurement(data))
        from tmlt.core.random import rng as source
        with _SWAP:
            own = source._core_privacy_prng, source._core_privacy_prng_pid
            source._core_privacy_prng, source._core_privacy_prng_pid = rng, os.getpid()
            try:
                output = self.measurement(data)
            finally:
                source._core_privacy_prng, source._core_privacy_prng_pid = own
        return plain(output)


def can_seed() -> bool:
    """Whether Tumult Core's samplers draw from the module global SeededDraws swaps: true when
    `tmlt.core.random.rng.prng()` returns a generator put there (as in 0.20). If not, the
    adapter declares randomness="own" and lets the library draw from its own generator."""
    try:
        from tmlt.core.random import rng as source
        with _SWAP:
            own = source._core_privacy_prng, source._core_privacy_prng_pid
            probe = np.random.default_rng(0)
            source._core_privacy_prng, source._core_privacy_prng_pid = probe, os.getpid()
            try:
                return source.prng() is probe
            finally:
                source._core_privacy_prng, source._core_privacy_prng_pid = own
    except (ImportError, AttributeError):
        return False
