"""Running a PipelineDP computation for the engine: a fresh budget accountant and DPEngine on
the LocalBackend per computation, since an accountant is spent by the computation it accounts
for.

Outputs keep what was released visible. The columns are fixed when the mechanism is built
(`Layout`): every partition key of the audited datasets and public partitions, in sorted
order, times the metrics of the result (for select_partitions, one column per key).
- aggregate: a float row per run, one value per (partition, metric); with private partition
  selection a masked row, masked where the partition was not released (so "absent" is an
  outcome of its own, and partition selection's δ is audited);
- select_partitions: an int8 row per run, 1 where the partition was released.

Many runs in one computation (`EngineRuns`). One DPEngine.aggregate over k copies of the
dataset, copy r with privacy ids (r, id) and partition keys (r, key) (and public partitions
(r, key)), gives k independent runs: PipelineDP treats every privacy id and every partition
on its own (contribution bounding samples per privacy id or per (id, partition), partition
selection and noise are drawn per partition, and the budget split does not depend on the data),
and no id or key is shared between copies. It is the same computation on a bigger dataset,
with the claim unchanged. `EngineRun` runs one computation per run on the dataset itself, as
a user's code does (the tests compare the two).
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from operator import itemgetter

import numpy as np

from ...errors import DpVerifyError
from .. import require_pipelinedp

# runs per DPEngine computation: large enough that the engine's fixed cost vanishes, small
# enough that the copies' rows stay a few MB
BATCH = 512

_EXTRACTORS = None


def _extractors():
    """DataExtractors for the adapter's rows (privacy_id, partition_key, value)."""
    global _EXTRACTORS
    if _EXTRACTORS is None:
        pipeline_dp = require_pipelinedp()
        _EXTRACTORS = pipeline_dp.DataExtractors(privacy_id_extractor=itemgetter(0),
                                                 partition_extractor=itemgetter(1),
                                                 value_extractor=itemgetter(2))
    return _EXTRACTORS


_GC_LOCK = threading.Lock()
_GC_HOLDERS = [0, False]  # threads inside `_collector_paused`, whether gc was on before


@contextmanager
def _collector_paused():
    """Python's cyclic garbage collector paused while the LocalBackend runs: its lazy
    pipelines allocate millions of small tuples, and collections triggered by them double a
    computation's time. Threads share the count; the last one out restores the collector."""
    with _GC_LOCK:
        if _GC_HOLDERS[0] == 0:
            _GC_HOLDERS[1] = gc.isenabled()
            gc.disable()
        _GC_HOLDERS[0] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_HOLDERS[0] -= 1
            if _GC_HOLDERS[0] == 0 and _GC_HOLDERS[1]:
                gc.enable()


class Layout:
    """The output columns: partition keys (sorted) times metric names; `select` rows have one
    column per key."""

    def __init__(self, keys, metrics):
        self.keys, self.metrics = tuple(keys), tuple(metrics)
        self.index = {k: i for i, k in enumerate(self.keys)}
        self.width = len(self.keys) * max(len(self.metrics), 1)

    def column(self, key) -> int:
        """The first column of a partition key."""
        try:
            return self.index[key] * max(len(self.metrics), 1)
        except KeyError:
            raise DpVerifyError(
                f"PipelineDP released partition {key!r}, which is in none of the datasets "
                "the mechanism was built with: build it with pairs= that include this "
                "dataset, so the output columns cover its partitions") from None


class _Computation:
    """One DPEngine computation (aggregate or select_partitions) on k runs of a dataset.
    Holds only picklable values (the accountant as a BudgetSpec, the params, the layout);
    pipeline_dp is imported where it runs."""

    def __init__(self, kind, budget, params, layout: Layout, public_partitions, private):
        self.kind, self.budget, self.params, self.layout = kind, budget, params, layout
        self.public = None if public_partitions is None else tuple(public_partitions)
        # partitions may be absent (private selection, post-aggregation thresholding): mask
        self.private = private

    def _engine_result(self, rows, public, accountant):
        pipeline_dp = require_pipelinedp()
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
        # an iterator, not a list: DPEngine rejects an empty list ("col must be non-empty"),
        # while the empty dataset is a dataset like any other (the `empty` corner)
        if self.kind == "select":
            return engine.select_partitions(iter(rows), self.params, _extractors())
        return engine.aggregate(iter(rows), self.params, _extractors(),
                                public_partitions=public)

    def run(self, data, runs: int, keyed: bool):
        """(values, released) of `runs` runs, values shaped (runs, layout.width): one engine
        computation on `runs` copies of `data` keyed by run index (`keyed`), or on `data`
        itself (runs = 1)."""
        if keyed:
            rows = [((r, pid), (r, pk), v) for r in range(runs) for pid, pk, v in data]
            public = (None if self.public is None
                      else [(r, k) for r in range(runs) for k in self.public])
        else:
            rows, public = list(data), None if self.public is None else list(self.public)
        with _collector_paused():
            accountant = self.budget.fresh()
            result = self._engine_result(rows, public, accountant)
            accountant.compute_budgets()  # noise is calibrated here; `result` is lazy
            released = list(result)
        return self._fill(released, runs, keyed)

    def _fill(self, released, runs: int, keyed: bool):
        layout = self.layout
        if self.kind == "select":
            out = np.zeros((runs, layout.width), dtype=np.int8)
            for key in released:
                r, pk = key if keyed else (0, key)
                out[r, layout.column(pk)] = 1
            return out, None
        values = np.zeros((runs, layout.width))
        present = np.zeros((runs, layout.width), dtype=bool)
        m = len(layout.metrics)
        for key, metrics in released:
            r, pk = key if keyed else (0, key)
            c = layout.column(pk)
            values[r, c:c + m] = [getattr(metrics, name) for name in layout.metrics]
            present[r, c:c + m] = True
        return values, present


class EngineRuns(_Computation):
    """f(data, rng, size) -> `size` independent runs (rng unused: PipelineDP's noise comes from
    python-dp's C++ generator, its contribution sampling from numpy's global one), BATCH runs
    per DPEngine computation over copies keyed by run index (module docstring)."""

    def __call__(self, data, rng, size):
        size = int(size)
        parts = [self.run(data, min(BATCH, size - s), keyed=True)
                 for s in range(0, size, BATCH)]
        values = np.concatenate([v for v, _ in parts]) if parts else np.zeros((0, self.layout.width))
        if self.kind == "select" or not self.private:
            return values
        present = np.concatenate([p for _, p in parts])
        return np.ma.masked_array(values, mask=~present)


class EngineRun(_Computation):
    """f(data, rng) -> one run: a fresh accountant and DPEngine on the dataset itself, exactly
    as a user's pipeline calls it. The output is the same row as EngineRuns', as a tuple with
    None where a partition was not released."""

    def __call__(self, data, rng):
        values, present = self.run(data, 1, keyed=False)
        row = values[0].tolist()
        if present is not None and self.private:
            row = [v if p else None for v, p in zip(row, present[0].tolist())]
        return tuple(row)
