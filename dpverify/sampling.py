"""Chunked, seeded, parallel runs of a mechanism on one input.

Reproducibility: every chunk draws from its own `SeedSequence(seed, spawn_key=(pair, side,
stage, purpose, chunk))`. Chunk boundaries depend only on the sample count, never on `n_jobs`
or the backend, so one seed gives the same result however the work is spread.
Memory: a certifying chunk returns only its event counts; a search chunk returns its encoded
outputs, and the engine caps how many search outputs it keeps.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

import numpy as np
from joblib import Parallel, delayed

from .encoding import Encoded, Schema, encode
from .errors import MechanismError, MechanismOutputError, RandomnessError
from .mechanism import Mechanism

SEARCH, CERTIFY, PREFLIGHT = 0, 1, 2


@dataclass(frozen=True)
class ChunkTask:
    """One unit of parallel work: `size` runs of the mechanism on input `side` of pair `pair`."""

    pair: int
    side: int
    stage: int
    purpose: int
    index: int
    start: int
    size: int

    def seed_sequence(self, root_seed: int) -> np.random.SeedSequence:
        return np.random.SeedSequence(
            entropy=root_seed,
            spawn_key=(self.pair, self.side, self.stage, self.purpose, self.index))


def split_into_chunks(n: int, chunk_size: int, **task_fields) -> list[ChunkTask]:
    """Cut n samples into chunks of at most chunk_size (the last one shorter)."""
    tasks = []
    for index, start in enumerate(range(0, n, chunk_size)):
        tasks.append(ChunkTask(index=index, start=start, size=min(chunk_size, n - start),
                               **task_fields))
    return tasks


def _describe_input(data) -> str:
    text = repr(data)
    return text if len(text) <= 80 else text[:77] + "..."


def draw_outputs(mech: Mechanism, data, rng: np.random.Generator, size: int, start: int):
    """Run the mechanism `size` times on `data`; wrap any exception into a MechanismError."""
    data = copy.deepcopy(data)  # a mechanism that mutates its input must not leak into later runs
    if mech.batched:
        try:
            return mech.fn(data, rng, size)
        except Exception as exc:
            raise MechanismError(
                f"mechanism {mech.name!r} raised {type(exc).__name__}: {exc} on input "
                f"{_describe_input(data)} (batch of samples {start}..{start + size - 1})") from exc
    outputs = []
    for i in range(size):
        try:
            outputs.append(mech.fn(data, rng))
        except Exception as exc:
            raise MechanismError(
                f"mechanism {mech.name!r} raised {type(exc).__name__}: {exc} on input "
                f"{_describe_input(data)} at sample {start + i}") from exc
    return outputs


def run_chunk(mech: Mechanism, data, task: ChunkTask, root_seed: int,
              evaluate: Callable[[Encoded], np.ndarray] | None = None):
    """Draw one chunk and return (schema, encoded outputs) or, with `evaluate`, (schema, counts)."""
    rng = np.random.default_rng(task.seed_sequence(root_seed))
    outputs = draw_outputs(mech, data, rng, task.size, task.start)
    try:
        enc, schema = encode(outputs, task.size, task.start, batched=mech.batched)
    except MechanismOutputError as exc:
        raise MechanismOutputError(
            f"mechanism {mech.name!r} on input {_describe_input(data)}: {exc}") from None
    if evaluate is None:
        return schema, enc
    return schema, evaluate(enc)


class Sampler:
    """Runs chunk tasks for one audit, in parallel with joblib, and checks output schemas."""

    def __init__(self, mech: Mechanism, inputs: list, root_seed: int, n_jobs: int = -1,
                 backend: str | None = None, chunk_size: int | None = None):
        self.mech = mech
        self.inputs = inputs  # inputs[pair][side]
        self.root_seed = int(root_seed)
        self.chunk_size = chunk_size or (1 << 18 if mech.batched else 1 << 12)
        self.schema: Schema | None = None
        self.runs = np.zeros((len(inputs), 2), dtype=np.int64)
        if backend is None:
            # numpy releases the GIL while it draws, so threads parallelise batched mechanisms
            # without pickling; scalar mechanisms are Python loops and need processes.
            backend = "threading" if mech.batched else "loky"
        self._parallel = Parallel(n_jobs=n_jobs, backend=backend)
        self._n_jobs = n_jobs

    def __enter__(self):
        self._parallel.__enter__()
        return self

    def __exit__(self, *exc):
        return self._parallel.__exit__(*exc)

    def _check_schema(self, schema: Schema):
        if self.schema is None:
            self.schema = schema
        elif schema != self.schema:
            raise MechanismOutputError(
                f"mechanism {self.mech.name!r} returned inconsistent outputs: first "
                f"{self.schema.describe()}, later {schema.describe()}; every run must return "
                "the same type and shape (use tuples/lists for variable-length outputs)")

    def run(self, tasks: list[ChunkTask], evaluators: dict | None = None) -> list:
        """Run tasks; `evaluators[pair]` turns a certifying chunk into counts. Results keep order."""
        def job(task):
            evaluate = evaluators[task.pair] if evaluators is not None else None
            return delayed(run_chunk)(self.mech, self.inputs[task.pair][task.side], task,
                                      self.root_seed, evaluate)
        total = sum(t.size for t in tasks)
        # Small batches are not worth a process round trip; the result is identical either way.
        if len(tasks) <= 1 or total < 4 * self.chunk_size:
            results = [run_chunk(self.mech, self.inputs[t.pair][t.side], t, self.root_seed,
                                 evaluators[t.pair] if evaluators is not None else None)
                       for t in tasks]
        else:
            results = self._parallel(job(t) for t in tasks)
        out = []
        for task, (schema, payload) in zip(tasks, results):
            self._check_schema(schema)
            self.runs[task.pair, task.side] += task.size
            out.append(payload)
        return out


def check_uses_rng(mech: Mechanism, data, root_seed: int, size: int = 64) -> Encoded:
    """Run a small chunk twice with the same seed: differing outputs mean hidden randomness.

    Also surfaces a crashing or malformed mechanism early, before any parallel work.
    """
    task = ChunkTask(pair=0, side=0, stage=0, purpose=PREFLIGHT, index=0, start=0, size=size)
    _, first = run_chunk(mech, data, task, root_seed)
    _, second = run_chunk(mech, data, task, root_seed)
    if not np.array_equal(first.keys, second.keys):
        raise RandomnessError(
            f"mechanism {mech.name!r} gave different outputs for the same seed on input "
            f"{_describe_input(data)}: it draws randomness from somewhere other than the `rng` "
            "argument (numpy.random.*, random, time). Take all randomness from `rng` so audits "
            "are reproducible")
    return first
