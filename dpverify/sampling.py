"""Chunked, seeded, parallel runs of a mechanism on one input.

Reproducibility: every chunk draws from its own `SeedSequence(seed, spawn_key=(pair, side,
stage, purpose, chunk))`; a coupled chunk puts COUPLED_SIDES in place of the side, so M(D) and
M(D') draw it from the same seed (common random numbers) while different chunks stay
independent. Chunk boundaries depend only on the sample count, never on `n_jobs` or the
backend, so one seed gives the same result however the work is spread.
Memory: a certifying chunk returns only its event counts; a search chunk returns its encoded
outputs, and the engine caps how many search outputs it keeps.
"""
from __future__ import annotations

import copy
import multiprocessing
import pickle
import time
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np
from joblib import Parallel, delayed, parallel_config

from .encoding import Encoded, Schema, encode
from .errors import (AuditTimeoutError, DpVerifyError, InvalidClaimError, MechanismError,
                     MechanismOutputError, RandomnessError, WorkerDiedError)
from .mechanism import Mechanism

SEARCH, CERTIFY, PREFLIGHT = 0, 1, 2
# Input search (input_search.py) draws under its own purpose, so its chunks never share a seed
# with an audit's search, certifying or pre-flight chunks, whatever their stage and pair numbers.
PAIR_SEARCH = 3
# The Poisson number of certifying runs per input (`poisson_sample_size`) has a stream of its own.
SAMPLE_SIZE = 4
# A certifying stage's pilot (engine._pilot): runs that time the stage and choose its certificate,
# then are discarded, under a purpose of their own so they never share a seed with a certifying
# chunk.
TIMING = 5
# The illustrative sample of a witness's event (evidence.collect_examples): fresh runs drawn after
# the audit to show which outputs the event holds; never counted in a certificate.
ILLUSTRATE = 6
BACKENDS = ("threading", "loky", "dask")
# The spawn-key "side" of a coupled chunk, shared by both inputs (never 0 or 1, so a coupled
# chunk never shares a seed with an uncoupled one).
COUPLED_SIDES = 2


def _worker_death_types() -> tuple:
    kinds = []
    try:
        from joblib.externals.loky.process_executor import TerminatedWorkerError
        kinds.append(TerminatedWorkerError)
    except ImportError:  # pragma: no cover
        pass
    try:
        from distributed.scheduler import KilledWorker
        kinds.append(KilledWorker)
    except ImportError:
        pass
    return tuple(kinds)


_WORKER_DEATHS = _worker_death_types()
_TIMEOUTS = (multiprocessing.TimeoutError, TimeoutError)


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
    # common random numbers: both inputs of the pair draw this chunk from the same seed
    # (engine's coupled certificate, stats.coupled_epsilon_bound)
    coupled: bool = False

    def seed_sequence(self, root_seed: int) -> np.random.SeedSequence:
        side = COUPLED_SIDES if self.coupled else self.side
        return np.random.SeedSequence(
            entropy=root_seed,
            spawn_key=(self.pair, side, self.stage, self.purpose, self.index))


def split_into_chunks(n: int, chunk_size: int, **task_fields) -> list[ChunkTask]:
    """Cut n samples into chunks of at most chunk_size (the last one shorter)."""
    tasks = []
    for index, start in enumerate(range(0, n, chunk_size)):
        tasks.append(ChunkTask(index=index, start=start, size=min(chunk_size, n - start),
                               **task_fields))
    return tasks


class ChunkSeconds(NamedTuple):
    """Seconds one chunk spent drawing and encoding its outputs, and evaluating them."""
    draw: float
    evaluate: float


class RunSeconds(NamedTuple):
    """One `Sampler.run`: its wall time and its chunks' summed drawing and evaluating seconds
    (the sums exceed the wall time when chunks run in parallel)."""
    wall: float
    draw: float
    evaluate: float


def poisson_sample_size(root_seed: int, mean: int, pair: int, side: int, stage: int) -> int:
    """How many certifying runs input `side` of pair `pair` gets at `stage`: N ~ Poisson(mean).

    With a Poisson number of runs the hits of an event are Poisson(mean·p) and independent
    between the inputs, so given the total hits k_p + k_q the hits under D are exactly
    Binomial(k_p + k_q, p/(p + q)) — the one-bound ratio test of `stats.ratio_epsilon_bound`.
    N comes from its own seed stream, so it is independent of every output."""
    seq = np.random.SeedSequence(entropy=root_seed, spawn_key=(pair, side, stage, SAMPLE_SIZE, 0))
    return int(np.random.default_rng(seq).poisson(mean))


def _describe_input(data) -> str:
    text = repr(data)
    return text if len(text) <= 80 else text[:77] + "..."


def draw_outputs(mech: Mechanism, data, rng: np.random.Generator, size: int, start: int):
    """Run the mechanism `size` times on `data`; wrap any exception into a MechanismError whose
    message ends with the innermost frames of the mechanism's own code (file:line, source)."""
    from .errors import where_raised

    data = copy.deepcopy(data)  # a mechanism that mutates its input must not leak into later runs
    if mech.batched:
        try:
            return mech.fn(data, rng, size)
        except Exception as exc:
            where = where_raised(exc)
            raise MechanismError(
                f"mechanism {mech.name!r} raised {type(exc).__name__}: {exc} on input "
                f"{_describe_input(data)} (batch of samples {start}..{start + size - 1})"
                + (f"\n{where}" if where else "")) from exc
    fn, outputs = mech.fn, []
    append = outputs.append
    try:  # the scalar path's cost is this loop: nothing in it but the call
        for _ in range(size):
            append(fn(data, rng))
    except Exception as exc:
        where = where_raised(exc)
        raise MechanismError(
            f"mechanism {mech.name!r} raised {type(exc).__name__}: {exc} on input "
            f"{_describe_input(data)} at sample {start + len(outputs)}"
            + (f"\n{where}" if where else "")) from exc
    return outputs


def run_chunk(mech: Mechanism, data, task: ChunkTask, root_seed: int,
              evaluate: Callable[[Encoded], np.ndarray] | None = None):
    """Draw one chunk and return (schema, encoded outputs) or, with `evaluate`, (schema, counts),
    followed by the seconds spent drawing and encoding, and evaluating (`ChunkSeconds`)."""
    started = time.perf_counter()
    rng = np.random.default_rng(task.seed_sequence(root_seed))
    outputs = draw_outputs(mech, data, rng, task.size, task.start)
    try:
        enc, schema = encode(outputs, task.size, task.start, batched=mech.batched)
    except MechanismOutputError as exc:
        raise MechanismOutputError(
            f"mechanism {mech.name!r} on input {_describe_input(data)}: {exc}") from None
    drawn = time.perf_counter()
    if evaluate is None:
        return schema, enc, ChunkSeconds(drawn - started, 0.0)
    counts = evaluate(enc)
    return schema, counts, ChunkSeconds(drawn - started, time.perf_counter() - drawn)


class Sampler:
    """Runs chunk tasks for one audit in parallel with joblib and checks output schemas.

    Backends: "threading" (default for batched mechanisms: numpy releases the GIL while it
    draws, and nothing is pickled), "loky" (default for scalar mechanisms, which are Python
    loops; also the one to use when a hung mechanism must be killed), and "dask" (the current
    dask.distributed Client's cluster). The result never depends on the backend or n_jobs.

    `deadline` (time.monotonic()) bounds the whole audit: every wait is cut off there and an
    AuditTimeoutError names the stage and chunk. `on_chunk(runs_done)` is called as chunks end.
    """

    def __init__(self, mech: Mechanism, inputs: list, root_seed: int, n_jobs: int = -1,
                 backend: str | None = None, chunk_size: int | None = None,
                 deadline: float | None = None, on_chunk: Callable[[int], None] | None = None,
                 progress=None):
        from .progress import Progress

        self.mech = mech
        self.inputs = inputs  # inputs[pair][side]
        self.root_seed = int(root_seed)
        self.chunk_size = chunk_size or (1 << 18 if mech.batched else 1 << 12)
        self.schema: Schema | None = None
        self.runs = np.zeros((len(inputs), 2), dtype=np.int64)
        self.backend = backend or ("threading" if mech.batched else "loky")
        if self.backend not in BACKENDS:
            raise InvalidClaimError(f"backend must be one of {', '.join(BACKENDS)}, got "
                                    f"{backend!r}")
        if self.backend == "dask":
            _require_dask_client()
            n_jobs = -1
        self.n_jobs = n_jobs
        self.deadline = deadline
        self.on_chunk = on_chunk
        # `progress` (a progress.Progress, the audit's) hears of every chunk and watches the
        # one waited on for stalls; without one the sampler keeps a watchdog of its own
        self.progress = progress
        self._watch = progress if progress is not None else Progress(mech.name, 0, enabled=False)
        self._parallel = None
        self.last_seconds = RunSeconds(0.0, 0.0, 0.0)  # of the latest `run`

    def _make_parallel(self, timeout=None) -> Parallel:
        if self.backend == "dask":
            # joblib resolves its dask backend through parallel_config (a bare
            # Parallel(backend="dask") fails on joblib 1.6 with distributed 2026.8)
            with parallel_config(backend="dask"):
                return Parallel(n_jobs=-1, return_as="generator", timeout=timeout)
        return Parallel(n_jobs=self.n_jobs, backend=self.backend, return_as="generator",
                        timeout=timeout)

    def __enter__(self):
        if self.deadline is None:  # one pool for the whole audit
            self._parallel = self._make_parallel()
            self._parallel.__enter__()
        return self

    def __exit__(self, *exc):
        if self._parallel is not None:
            self._parallel.__exit__(*exc)
        return False

    def _check_schema(self, schema: Schema):
        if self.schema is None:
            self.schema = schema
        elif schema != self.schema:
            raise MechanismOutputError(
                f"mechanism {self.mech.name!r} returned inconsistent outputs: first "
                f"{self.schema.describe()}, later {schema.describe()}; every run must return "
                "the same type and shape (use tuples/lists for variable-length outputs)")

    def _remaining(self, task: ChunkTask) -> float | None:
        if self.deadline is None:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._timeout(task)
        return left

    def _timeout(self, task: ChunkTask) -> AuditTimeoutError:
        return AuditTimeoutError(
            f"mechanism {self.mech.name!r} did not finish within the audit's time limit "
            f"(stopped at {_describe_task(task)}): it hangs or is much slower than planned. "
            "Raise the time limit, lower `samples`, or use backend='loky' so a hung run can "
            "be killed")

    def _results(self, tasks, evaluators, pooled=False):
        """Yield (task, result) in submission order, translating worker failures. `pooled`:
        through the pool even when the batch is small (a timing pilot measures the pool)."""
        def job(task):
            evaluate = evaluators[task.pair] if evaluators is not None else None
            return delayed(run_chunk)(self.mech, self.inputs[task.pair][task.side], task,
                                      self.root_seed, evaluate)

        def label(task):  # the chunk and its input, for a stall warning (progress.py)
            data, side = self.inputs[task.pair][task.side], ("D", "D'")[task.side]
            return lambda: f"{_describe_task(task)}, {side} = {_describe_input(data)},"

        watch = self._watch
        total = sum(t.size for t in tasks)
        # Small batches are not worth a round trip; the result is identical either way. With
        # a time limit everything goes through the pool, where waits can be cut off.
        if (self.deadline is None and not pooled
                and (len(tasks) <= 1 or total < 4 * self.chunk_size)):
            try:
                for t in tasks:
                    watch.begin(label(t), t.size, time.monotonic(), exact=True)
                    result = run_chunk(self.mech, self.inputs[t.pair][t.side], t, self.root_seed,
                                       evaluators[t.pair] if evaluators is not None else None)
                    watch.end(sum(result[2]))
                    yield t, result
            finally:
                watch.end()
                if self.progress is None:
                    watch.stop_watching()
            return
        parallel = self._parallel or self._make_parallel(self._remaining(tasks[0]))
        done = 0
        # joblib runs chunks ahead and returns them in order: the chunk waited on is timed
        # from the dispatch, or from the return of the chunk before it (progress.Progress.begin)
        dispatched = time.monotonic()
        stream = parallel(job(t) for t in tasks)
        watch.begin(label(tasks[0]), tasks[0].size, dispatched, exact=False)
        try:
            for result in stream:
                watch.end(sum(result[2]))
                returned = time.monotonic()
                yield tasks[done], result
                done += 1
                if done < len(tasks):
                    self._remaining(tasks[done])
                    watch.begin(label(tasks[done]), tasks[done].size, returned, exact=False)
        except _TIMEOUTS:
            raise self._timeout(tasks[min(done, len(tasks) - 1)]) from None
        except pickle.PicklingError as exc:
            raise MechanismError(
                f"mechanism {self.mech.name!r} cannot be sent to {self.backend} worker "
                f"processes ({_last_line(exc.__cause__ or exc).rstrip('.')}). Keep unpicklable state (a "
                "random.SystemRandom, an open file or connection) out of the function, e.g. "
                "create it inside the call, or pass backend='threading'") from None
        except _WORKER_DEATHS as exc:
            raise WorkerDiedError(
                f"a worker process died running mechanism {self.mech.name!r} at "
                f"{_describe_task(tasks[min(done, len(tasks) - 1)])} (or a chunk running beside "
                f"it): {type(exc).__name__}. Nothing was certified from it; retry the audit — "
                "the same seed gives the same result. If it dies again, the mechanism crashes "
                "the interpreter on that input") from None
        finally:
            watch.end()
            if self.progress is None:
                watch.stop_watching()
            close = getattr(stream, "close", None)
            if close is not None:
                close()

    def run(self, tasks: list[ChunkTask], evaluators: dict | None = None,
            pooled: bool = False) -> list:
        """Run tasks; `evaluators[pair]` turns a certifying chunk into counts. Results keep order.
        `pooled`: never run a small batch in this thread (see `_results`)."""
        out = []
        started = time.perf_counter()
        draw = evaluate = 0.0
        for task, (schema, payload, seconds) in self._results(tasks, evaluators, pooled):
            draw += seconds.draw
            evaluate += seconds.evaluate
            self._check_schema(schema)
            self.runs[task.pair, task.side] += task.size
            out.append(payload)
            if self.progress is not None:
                self.progress.update(int(self.runs.sum()))
            if self.on_chunk is not None:
                self.on_chunk(int(self.runs.sum()))
        self.last_seconds = RunSeconds(time.perf_counter() - started, draw, evaluate)
        return out

    def preflight(self, pair: int, side: int, size: int = 64, twice: bool = True) -> tuple:
        """Run one small chunk twice with the same seed (once if not `twice`), under the time
        limit, if any."""
        task = ChunkTask(pair=pair, side=side, stage=0, purpose=PREFLIGHT, index=0, start=0,
                         size=size)
        first = second = None
        for t, (schema, enc, _) in self._results([task, task] if twice else [task], None):
            self._check_schema(schema)
            self.runs[pair, side] += size
            first, second = (enc, None) if first is None else (first, enc)
        return first, second


def _malloc_trim():
    """glibc's malloc_trim, or None (another C library or system: nothing to call)."""
    try:
        import ctypes
        trim = ctypes.CDLL(None).malloc_trim
    except Exception:  # noqa: BLE001
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_MALLOC_TRIM = _malloc_trim()


def return_freed_memory() -> None:
    """Give the C allocator's free pages back to the system, as dask's workers do: chunks are
    drawn and attacks learned on worker threads, whose malloc arenas otherwise keep freed
    search chunks resident (reports/memory.md). Changes no result."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _last_line(exc: BaseException) -> str:
    """The last non-empty line of an exception's text (a worker's traceback ends in its cause)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip() not in ("", '"""')]
    return lines[-1] if lines else type(exc).__name__


def _describe_task(task: ChunkTask) -> str:
    purpose = {SEARCH: "search", CERTIFY: "certify", PREFLIGHT: "pre-flight",
               PAIR_SEARCH: "input search", TIMING: "pilot"}[task.purpose]
    side = ("D", "D'")[task.side]
    return (f"stage {task.stage} ({purpose}), pair {task.pair}, input {side}, chunk {task.index} "
            f"(samples {task.start}..{task.start + task.size - 1})")


def _require_dask_client():
    try:
        from distributed import get_client
    except ImportError:
        raise DpVerifyError("backend='dask' needs dask.distributed: pip install "
                            "'dask[distributed]'") from None
    try:
        get_client()
    except ValueError:
        raise DpVerifyError("backend='dask' runs on the current dask Client: create one first "
                            "(distributed.Client('tcp://scheduler:8786') or LocalCluster()), "
                            "or pass --scheduler ADDRESS to the CLI") from None


def check_uses_rng(sampler: Sampler, pair: int, side: int, size: int = 64) -> Encoded:
    """Run a small chunk twice with the same seed: differing outputs mean hidden randomness.

    Also surfaces a crashing or malformed mechanism early, before any parallel work. A mechanism
    declared with `randomness="own"` is run once instead: its outputs cannot repeat, and that is
    what it declared.
    """
    if sampler.mech.draws_own_randomness:
        first = sampler.preflight(pair, side, size, twice=False)[0]
        check_chunks_differ(sampler, pair, side)
        return first
    first, second = sampler.preflight(pair, side, size)
    if not np.array_equal(first.keys, second.keys):
        data = sampler.inputs[pair][side]
        raise RandomnessError(
            f"mechanism {sampler.mech.name!r} gave different outputs for the same seed on input "
            f"{_describe_input(data)}: it draws randomness from somewhere other than the `rng` "
            "argument (numpy.random.*, random, time, a library's own generator). Take all "
            "randomness from `rng` so audits are reproducible, or, if it cannot be seeded, "
            "declare it: @dpverify.mechanism(..., randomness=\"own\") (the audit stays sound, "
            "but the same seed no longer gives the same bound)")
    return first


REPEAT_PROBE_CHUNKS = 4
REPEAT_PROBE_RUNS = 256


def check_chunks_differ(sampler: Sampler, pair: int, side: int) -> None:
    """For a mechanism with its own randomness: run REPEAT_PROBE_CHUNKS chunks the way the
    audit will (through the worker pool) and raise RandomnessError if they all return the same
    varying sequence of outputs. That happens when the generator's state travels with the
    mechanism: worker processes receive a pickled copy of it with every chunk, so every chunk
    replays the same draws, and the runs the certificates take as independent are copies.
    Chunks that differ clear it. Identical chunks whose outputs do not vary say nothing (a
    rare event's chunks are often all alike) and pass. Under independence four varying
    sequences of 256 outputs coincide with probability below 3e-9, whatever the output
    distribution (docs/method.md, "The preflight")."""
    tasks = [ChunkTask(pair=pair, side=side, stage=1, purpose=PREFLIGHT, index=i, start=0,
                       size=REPEAT_PROBE_RUNS) for i in range(REPEAT_PROBE_CHUNKS)]
    keys = []
    for task, (schema, enc, _) in sampler._results(tasks, None, pooled=True):
        sampler._check_schema(schema)
        sampler.runs[pair, side] += task.size
        keys.append(enc.keys)
    varying = any(len(np.unique(k, axis=0)) > 1 for k in keys)
    if varying and all(np.array_equal(keys[0], k) for k in keys[1:]):
        raise RandomnessError(
            f"mechanism {sampler.mech.name!r} (randomness=\"own\") returned the same "
            f"{REPEAT_PROBE_RUNS} outputs, in the same order, in {REPEAT_PROBE_CHUNKS} separate "
            f"chunks on input {_describe_input(sampler.inputs[pair][side])}: its generator's "
            f"state is copied into every chunk ({sampler.backend} workers receive a pickled copy "
            "of the mechanism), so the runs are not independent. Create the generator where "
            "it is used (a module-level generator is made afresh in each worker) or pass "
            "backend='threading'")


def checked_search_samples(sampler: Sampler, runs: int) -> dict:
    """The preflight of every input (`check_uses_rng`), then `runs` search outputs of every
    input, uncoupled, joined per input: (pair, side) → Encoded. What the one-event audits of
    Rényi and zCDP claims choose their event on (engine.audit_rdp, zcdp.audit_zcdp)."""
    n_pairs = len(sampler.inputs)
    for p in range(n_pairs):
        check_uses_rng(sampler, p, 0), check_uses_rng(sampler, p, 1)
    tasks = [t for p in range(n_pairs) for s in (0, 1)
             for t in split_into_chunks(runs, sampler.chunk_size, pair=p, side=s, stage=1,
                                        purpose=SEARCH)]
    chunks: dict = {}
    for task, enc in zip(tasks, sampler.run(tasks)):
        chunks.setdefault((task.pair, task.side), []).append(enc)
    return {key: Encoded.concat(parts) for key, parts in chunks.items()}
