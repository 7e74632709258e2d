"""Running an OpenDP measurement's noise for the engine. OpenDP samples from the operating
system's CSPRNG, so every draw ignores the engine's `rng` (the mechanism is `randomness="own"`).

- `BatchedDraws`: f(data, rng, size), one OpenDP call of the measurement composed with itself
  (`make_composition([meas] * k)`) returning k independent draws, when OpenDP can compose it
  (`batch_source`);
- `ScalarDraws`: f(data, rng), one call a draw, otherwise.

Both pickle (for worker processes) through `portable.py`. Outputs are handed to the engine as
numbers, strings, lists or numpy arrays. Two kinds are converted: a dict (a map of partitions,
e.g. from `make_laplace_threshold`) becomes a tuple of (key, value) pairs in sorted key order,
so which keys were released stays visible; bytes (a bit vector from
`make_randomized_response_bitvec`) become a tuple of its bits.
"""
from __future__ import annotations

import numpy as np

from .. import require_opendp
from .portable import enabled_features, portable_form, rebuild
from .records import type_name

BATCH = 512  # draws per composed OpenDP call (the per-draw cost is flat beyond ~64)


def _plain(output):
    """An output the engine can encode: a dict becomes a tuple of (key, value) pairs in sorted
    key order (which keys were released stays visible), bytes a tuple of its bits."""
    if isinstance(output, dict):
        return tuple((k, _plain(output[k])) for k in sorted(output))
    if isinstance(output, (bytes, bytearray)):
        return tuple(np.unpackbits(np.frombuffer(output, dtype=np.uint8)).tolist())
    return output


def _as_batch(outputs: list):
    """A batch of outputs: numbers as one numpy array, anything else as a list of plain
    outputs (lists stay lists: their lengths may differ between the inputs of a pair)."""
    first = outputs[0] if outputs else None
    if isinstance(first, (bool, int, float)):
        return np.asarray(outputs)
    if isinstance(first, (dict, bytes, bytearray)):
        return [_plain(o) for o in outputs]
    return outputs


class _Draws:
    """Holds an OpenDP measurement. Measurements are ctypes pointers, which do not pickle: it
    pickles as its portable form (see portable.py) plus the enabled features, and rebuilds on
    first use in the receiving process."""

    def __init__(self, measurement):
        self._measurement = measurement
        self._portable = None
        self._vector_input = type_name(measurement.input_domain) == "VectorDomain"

    @property
    def measurement(self):
        if self._measurement is None:
            self._measurement = rebuild(self._portable, self._features)
        return self._measurement

    def _prepare(self, data):
        """OpenDP takes vectors as lists; numpy arrays from user pairs are converted."""
        return data.tolist() if self._vector_input and isinstance(data, np.ndarray) else data

    def __getstate__(self):
        if self._portable is None:
            self._portable = portable_form(self.measurement)
        return {"_portable": self._portable, "_vector_input": self._vector_input,
                "_features": enabled_features()}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._measurement = None


class ScalarDraws(_Draws):
    """f(data, rng) -> one output of the measurement (rng unused: OpenDP's own CSPRNG)."""

    def __call__(self, data, rng):
        return _plain(self.measurement(self._prepare(data)))


class BatchedDraws(_Draws):
    """f(data, rng, size) -> `size` independent outputs of the measurement (rng unused).

    One OpenDP call of `make_composition([meas] * k)` returns k draws; a batch is cut into
    pieces of BATCH draws plus powers of two for the rest (compositions are built once per
    k and cached). The engine runs batches on threads (one per core), so the pieces of one
    batch run one after another.
    """

    def __init__(self, measurement):
        super().__init__(measurement)
        self.__setstate__({})

    def __setstate__(self, state):
        if state:
            super().__setstate__(state)
        self._composed = {}

    def _composition(self, k: int):
        composed = self._composed.get(k)
        if composed is None:  # two threads may both build it: harmless, the same measurement
            composed = self._composed[k] = _compose(self.measurement, k)
        return composed

    def __call__(self, data, rng, size):
        data = self._prepare(data)
        full, rest = divmod(int(size), BATCH)
        pieces = [BATCH] * full + [1 << i for i in reversed(range(rest.bit_length()))
                                   if rest >> i & 1]
        return _as_batch([o for k in pieces for o in self._composition(k)(data)])


def _compose(measurement, k: int):
    """OpenDP's composition of k copies of the measurement: one call, k independent draws."""
    dp = require_opendp()
    compose = getattr(dp.c, "make_composition", None) or dp.c.make_basic_composition
    return compose([measurement] * k)


def batch_source(measurement, claim):
    """The measurement whose self-composition gives batched draws: the measurement itself, or
    for a privacy profile (which OpenDP 0.16 cannot compose) the same function with δ fixed
    by `make_fix_delta`; None when OpenDP cannot compose either (scalar draws then)."""
    dp = require_opendp()
    candidates = [lambda: measurement]
    if "SmoothedMaxDivergence" in type_name(measurement.output_measure):
        candidates.append(lambda: dp.c.make_fix_delta(measurement, claim["delta"]))
    for candidate in candidates:
        try:
            source = candidate()
            _compose(source, 2)
            return source
        except Exception:  # OpenDP refuses: try the next form
            continue
    return None
