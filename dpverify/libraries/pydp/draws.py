"""Running a pydp object for the engine, one library call a run (pydp has no call that draws
many outputs at once). pydp draws from its own C++ secure generator, so every runner ignores
the engine's `rng` (the mechanisms are `randomness="own"`).

pydp objects are pybind11 objects, which do not pickle: each runner holds the object's
`Recipe` and builds the object again, once, in every process that runs it (the engine spreads
a scalar mechanism's runs over worker processes).

- `NoiseDraws`: a numerical mechanism's add_noise(x) (an int input gives an int output);
- `AlgorithmDraws`: an algorithm's quick_result(D), or reset() + add_entries(D) + result();
  a tuple of results when D is a tuple of partitions;
- `KeepDraws`: a partition selection strategy's should_keep(n): True when the partition is
  released; a tuple of decisions when the unit touches several partitions.
"""
from __future__ import annotations

import threading
from numbers import Integral

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


class NoiseDraws(_Built):
    """f(x, rng) -> mechanism.add_noise(x) (rng unused: pydp's own generator)."""

    def __call__(self, data, rng):
        value = int(data) if isinstance(data, Integral) else float(data)
        return self.object.add_noise(value)


class AlgorithmDraws(_Built):
    """f(D, rng) -> the algorithm's result on dataset D through `entry`:

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

    def __call__(self, data, rng):
        if isinstance(data, tuple):
            return tuple(self._one(records) for records in data)
        return self._one(data)


class KeepDraws(_Built):
    """f(n, rng) -> strategy.should_keep(n); a tuple of decisions for a tuple of counts."""

    def __call__(self, data, rng):
        strategy = self.object
        if isinstance(data, tuple):
            return tuple(strategy.should_keep(n) for n in data)
        return strategy.should_keep(data)
