"""Running a pydp object for the engine, one library call a run (pydp has no call that draws
many outputs at once). pydp draws from its own C++ secure generator, so every runner ignores
the engine's `rng` (the mechanisms are `randomness="own"`).

Every runner is called f(data, rng) for one output or f(data, rng, size) for `size` outputs
from a loop over the bound library call: a pydp call costs a few µs, about what the engine
spends on each call of a scalar mechanism, so the adapter declares the batched form and asks
for worker processes (`Mechanism.backend="loky"`): pybind11 holds the GIL, so threads would
share one core.

pydp objects are pybind11 objects, which do not pickle: each runner holds the object's
`Recipe` and builds the object again, once, in every process that runs it.

- `NoiseDraws`: a numerical mechanism's add_noise(x) (an int input gives an int output);
- `AlgorithmDraws`: an algorithm's quick_result(D), or reset() + add_entries(D) + result();
  a tuple of results when D is a tuple of partitions;
- `KeepDraws`: a partition selection strategy's should_keep(n): True when the partition is
  released; a tuple of decisions when the unit touches several partitions.
"""
from __future__ import annotations

import threading
from numbers import Integral

import numpy as np

from .recipes import Recipe

ENTRIES = ("quick_result", "add_entries")


class _Built:
    """Holds a pydp object and the Recipe it was built from; pickles as the Recipe only. The
    object is kept per thread (a run may be several library calls on one instance, which
    threads must not interleave, e.g. under backend="threading")."""

    def __init__(self, recipe: Recipe, built=None):
        self.recipe = recipe
        self._local = threading.local()
        self._local.object = built

    @property
    def object(self):
        built = getattr(self._local, "object", None)
        if built is None:
            built = self._local.object = self.recipe.build()
        return built

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_local"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._local = threading.local()


def _outputs(one, size):
    """One output of `one()` when size is None, else `size` of them: numbers (and bools) as
    one numpy array, anything else (tuples of results) as a list."""
    if size is None:
        return one()
    outputs = [one() for _ in range(int(size))]
    if outputs and isinstance(outputs[0], (bool, int, float)):
        return np.asarray(outputs)
    return outputs


class NoiseDraws(_Built):
    """f(x, rng[, size]) -> mechanism.add_noise(x) (rng unused: pydp's own generator)."""

    def __call__(self, data, rng, size=None):
        value = int(data) if isinstance(data, Integral) else float(data)
        add_noise = self.object.add_noise
        return _outputs(lambda: add_noise(value), size)


class AlgorithmDraws(_Built):
    """f(D, rng[, size]) -> the algorithm's result on dataset D through `entry`:

    - "quick_result": quick_result(D), which resets the algorithm (and its budget) first;
    - "add_entries": reset(), add_entries(D), result(): the incremental entry point (result
      may be called once per budget; reset restores it).

    One instance is kept per process and reset by each run, so no run sees another's records.
    D a tuple of lists (a unit in several partitions): one result per partition, each a run
    of its own, as a tuple.
    """

    def __init__(self, recipe: Recipe, entry: str = "quick_result", built=None):
        super().__init__(recipe, built)
        self.entry = entry

    def _one(self, records):
        algorithm = self.object
        if self.entry == "quick_result":
            return algorithm.quick_result(records)
        algorithm.reset()
        algorithm.add_entries(records)
        return algorithm.result()

    def _result(self, data):
        if isinstance(data, tuple):
            return tuple(self._one(records) for records in data)
        return self._one(data)

    def __call__(self, data, rng, size=None):
        return _outputs(lambda: self._result(data), size)


class KeepDraws(_Built):
    """f(n, rng[, size]) -> strategy.should_keep(n); a tuple of decisions for a tuple of
    counts."""

    def __call__(self, data, rng, size=None):
        keep = self.object.should_keep
        if isinstance(data, tuple):
            return _outputs(lambda: tuple(keep(n) for n in data), size)
        return _outputs(lambda: keep(data), size)
