"""The Sampler: runs an audit's chunks in parallel (joblib, or dask on a cluster).

Results come back in submission order, and every chunk draws from its own seed
(`ChunkTask.seed_sequence`), so the result never depends on the backend or on `n_jobs`.
Worker failures (a time limit, an unpicklable mechanism, a dead worker process) become
dpverify errors that name the mechanism and the chunk.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import signal
import threading
import sys
import time
from typing import Callable, NamedTuple

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs, parallel_config

from .encoding import Encoded, Schema
from ..errors import (AuditTimeoutError, DpVerifyError, InvalidClaimError, MechanismError,
                      MechanismOutputError, WorkerDiedError)
from ..mechanism import Mechanism
from ..progress import Progress
from .chunks import PREFLIGHT, ChunkTask, describe_task
from .draw import describe_input, run_chunk

BACKENDS = ("threading", "loky", "dask")


class RunSeconds(NamedTuple):
    """One `Sampler.run`: its wall time and its chunks' summed drawing and evaluating seconds
    (the sums exceed the wall time when chunks run in parallel)."""
    wall: float
    draw: float
    evaluate: float


def worker_death_types() -> tuple:
    """The exceptions joblib's loky and dask raise when a worker process dies. Dask's is looked
    up only where `distributed` is already loaded (a dask backend needs its Client, so it is):
    importing it costs about a second that no other audit should pay."""
    kinds = []
    try:
        from joblib.externals.loky.process_executor import TerminatedWorkerError
        kinds.append(TerminatedWorkerError)
    except ImportError:  # pragma: no cover
        pass
    scheduler = sys.modules.get("distributed.scheduler")
    if scheduler is not None:
        kinds.append(scheduler.KilledWorker)
    return tuple(kinds)


_clock = time.monotonic  # the time budget's clock (tests stand in for it)


class TimeBudgetSpent(Exception):
    """An ordinary audit's time budget (`audit(seconds=)`) ran out: raised after the first
    chunk that returns past it, for the pipeline to stop with what it has proven so far. Not
    an error: the audit's result stands (docs/method.md, "Time budgets")."""


_TIMEOUTS = (multiprocessing.TimeoutError, TimeoutError)


# Runs per chunk by default: a batched mechanism's chunk is one call, long enough that the call's
# fixed cost vanishes and short enough that a stage splits over the workers; a scalar mechanism's
# chunk is a Python loop, kept short so that progress and deadlines stay responsive. Coupled
# blocks are cut from batched chunks (`stats.coupled_block_size`).
BATCHED_CHUNK_SIZE = 1 << 18
SCALAR_CHUNK_SIZE = 1 << 12
# A batch of fewer than IN_THREAD_CHUNKS chunks' runs is not worth a round trip to the pool
# and runs in the calling thread, unless the runs timed so far project it to take longer than
# IN_THREAD_SECONDS: a library call of 100 µs makes 2^14 runs a second and a half of work,
# which the workers share.
IN_THREAD_CHUNKS = 4
IN_THREAD_SECONDS = 0.05


class Sampler:
    """Runs chunk tasks for one audit in parallel with joblib and checks output schemas.

    Backends: "threading" (default for batched mechanisms: numpy releases the GIL while it
    draws, and nothing is pickled), "loky" (default for scalar mechanisms, which are Python
    loops; also the one to use when a hung mechanism must be killed), and "dask" (the current
    dask.distributed Client's cluster). A mechanism may name its own default
    (`Mechanism.backend`: a library adapter whose batched calls hold the GIL asks for loky);
    `backend=` overrides it. The result never depends on the backend or n_jobs.

    `deadline` (time.monotonic()) bounds the whole audit: every wait is cut off there and an
    AuditTimeoutError names the stage and chunk. `stop_after` (seconds from now, on `_clock`)
    is what is left of an ordinary audit's time budget: the first chunk of `run` that returns
    past it raises TimeBudgetSpent (pre-flight probes are never cut short).
    `on_chunk(runs_done)` is called as chunks end.
    """

    def __init__(self, mech: Mechanism, inputs: list, root_seed: int, n_jobs: int = -1,
                 backend: str | None = None, chunk_size: int | None = None,
                 deadline: float | None = None, on_chunk: Callable[[int], None] | None = None,
                 progress=None, stop_after: float | None = None):
        self.mech = mech
        self.inputs = inputs  # inputs[pair][side]
        self.root_seed = int(root_seed)
        self.chunk_size = chunk_size or (BATCHED_CHUNK_SIZE if mech.batched else SCALAR_CHUNK_SIZE)
        self.schema: Schema | None = None
        self.runs = np.zeros((len(inputs), 2), dtype=np.int64)
        self.backend = backend or mech.backend or ("threading" if mech.batched else "loky")
        if self.backend not in BACKENDS:
            raise InvalidClaimError(f"backend must be one of {', '.join(BACKENDS)}, got "
                                    f"{backend!r}")
        if self.backend == "dask":
            _require_dask_client()
            n_jobs = -1
        self.n_jobs = n_jobs
        self.deadline = deadline
        self.stop_at = None if stop_after is None else _clock() + stop_after
        self.on_chunk = on_chunk
        # `progress` (a progress.Progress, the audit's) hears of every chunk and watches the
        # one waited on for stalls; without one the sampler keeps a watchdog of its own
        self.progress = progress
        self._watch = progress if progress is not None else Progress(mech.name, 0, enabled=False)
        self._parallel = None
        self.last_seconds = RunSeconds(0.0, 0.0, 0.0)  # of the latest `run`
        self._timed = [0, 0.0]  # runs and their chunks' seconds so far (`_worth_the_pool`)

    @property
    def workers(self) -> int | None:
        """How many chunks run at once: n_jobs as joblib resolves it; None on dask, where the
        cluster decides."""
        return None if self.backend == "dask" else effective_n_jobs(self.n_jobs)

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
            self._time(task, seconds)
            self._check_schema(schema)
            self.runs[task.pair, task.side] += task.size
            out.append(payload)
            if self.progress is not None:
                self.progress.update(int(self.runs.sum()))
            if self.on_chunk is not None:
                self.on_chunk(int(self.runs.sum()))
            if self.stop_at is not None and _clock() > self.stop_at:
                raise TimeBudgetSpent
        self.last_seconds = RunSeconds(time.perf_counter() - started, draw, evaluate)
        return out

    def probe(self, tasks: list[ChunkTask], pooled: bool = False) -> list[Encoded]:
        """Run pre-flight chunks: their schema is checked and their runs counted, and their
        encoded outputs come back, in order, for the caller's checks (never for a certificate).
        `pooled` as in `run`."""
        out = []
        for task, (schema, enc, seconds) in self._results(tasks, None, pooled):
            self._time(task, seconds)
            self._check_schema(schema)
            self.runs[task.pair, task.side] += task.size
            out.append(enc)
        return out

    def preflight(self, pair: int, side: int, size: int = 64, twice: bool = True,
                  batches: int = 1) -> tuple:
        """Run `size` runs as `batches` small chunks (seeds of their own), twice with the same
        seeds (once if not `twice`), under the time limit, if any: (first outputs, second outputs
        or None), each a list of one Encoded per batch."""
        tasks = [ChunkTask(pair=pair, side=side, stage=0, purpose=PREFLIGHT, index=i, start=0,
                           size=size // batches) for i in range(batches)]
        outputs = self.probe(tasks + tasks if twice else tasks)
        return outputs[:batches], (outputs[batches:] if twice else None)

    def _check_schema(self, schema: Schema):
        if self.schema is None:
            self.schema = schema
        elif schema != self.schema:
            raise MechanismOutputError(
                f"mechanism {self.mech.name!r} returned inconsistent outputs: first "
                f"{self.schema.describe()}, later {schema.describe()}; a batched mechanism "
                "must return the same kind of batch in every call: a list or an object array "
                "if any run may return None, a string or a tuple, else an array of one dtype "
                "and shape")

    def _time(self, task: ChunkTask, seconds) -> None:
        self._timed[0] += task.size
        self._timed[1] += sum(seconds)

    def _worth_the_pool(self, tasks: list[ChunkTask]) -> bool:
        """Whether a batch goes to the pool: more than one chunk, and IN_THREAD_CHUNKS chunks'
        runs or more, or projected past IN_THREAD_SECONDS at the seconds per run timed so far."""
        if len(tasks) <= 1:
            return False
        total = sum(t.size for t in tasks)
        runs, seconds = self._timed
        return (total >= IN_THREAD_CHUNKS * self.chunk_size
                or (runs > 0 and total * seconds / runs > IN_THREAD_SECONDS))

    def _results(self, tasks, evaluators, pooled=False):
        """Yield (task, (schema, payload, ChunkSeconds)) in submission order. Batches not
        worth a round trip (`_worth_the_pool`) run in this thread; the result is identical
        either way. With a time limit everything goes through the pool, where waits can be
        cut off, and so does a `pooled` batch (a timing pilot measures the pool)."""
        if self.deadline is None and not pooled and not self._worth_the_pool(tasks):
            yield from self._results_in_thread(tasks, evaluators)
        else:
            yield from self._results_in_pool(tasks, evaluators)

    def _results_in_thread(self, tasks, evaluators):
        watch = self._watch
        try:
            for t in tasks:
                watch.begin(self._label(t), t.size, watch.clock(), exact=True)
                result = run_chunk(self.mech, self.inputs[t.pair][t.side], t, self.root_seed,
                                   _evaluator(evaluators, t))
                watch.end(sum(result[2]))
                yield t, result
        finally:
            self._stop_watching()

    def _results_in_pool(self, tasks, evaluators):
        """The pool's results, translating worker failures into dpverify errors. joblib runs
        chunks ahead and returns them in order: the chunk waited on is timed from the dispatch,
        or from the return of the chunk before it (progress.Progress.begin)."""
        watch = self._watch
        parallel = self._parallel or self._make_parallel(self._remaining(tasks[0]))
        done = 0
        dispatched = watch.clock()  # the watchdog's clock, as every time it compares
        with _workers_ignore_ctrl_c(self.backend, self.workers):
            stream = parallel(self._job(t, evaluators) for t in tasks)
        watch.begin(self._label(tasks[0]), tasks[0].size, dispatched, exact=False)
        try:
            for result in stream:
                watch.end(sum(result[2]))
                returned = watch.clock()
                yield tasks[done], result
                done += 1
                if done < len(tasks):
                    self._remaining(tasks[done])
                    watch.begin(self._label(tasks[done]), tasks[done].size, returned,
                                exact=False)
        except _TIMEOUTS:
            raise self._timeout(tasks[min(done, len(tasks) - 1)]) from None
        except pickle.PicklingError as exc:
            raise self._unpicklable(exc) from None
        except worker_death_types() as exc:  # evaluated only when something is raised
            raise self._worker_died(exc, tasks[min(done, len(tasks) - 1)]) from None
        finally:
            self._stop_watching()
            close = getattr(stream, "close", None)
            if close is not None:
                close()

    def _job(self, task: ChunkTask, evaluators):
        return delayed(run_chunk)(self.mech, self.inputs[task.pair][task.side], task,
                                  self.root_seed, _evaluator(evaluators, task))

    def _label(self, task: ChunkTask) -> Callable[[], str]:
        """The chunk and its input, for a stall warning (progress.py)."""
        data, side = self.inputs[task.pair][task.side], ("D", "D'")[task.side]
        return lambda: f"{describe_task(task)}, {side} = {describe_input(data)},"

    def _stop_watching(self) -> None:
        self._watch.end()
        if self.progress is None:
            self._watch.stop_watching()

    def _remaining(self, task: ChunkTask) -> float | None:
        """Seconds left before the deadline (None without one); past it, AuditTimeoutError."""
        if self.deadline is None:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._timeout(task)
        return left

    def _timeout(self, task: ChunkTask) -> AuditTimeoutError:
        return AuditTimeoutError(
            f"mechanism {self.mech.name!r} did not finish within the audit's time limit "
            f"(stopped at {describe_task(task)}): it hangs or is much slower than planned. "
            "Raise the time limit, lower `samples`, or use backend='loky' so a hung run can "
            "be killed")

    def _unpicklable(self, exc: pickle.PicklingError) -> MechanismError:
        return MechanismError(
            f"mechanism {self.mech.name!r} cannot be sent to {self.backend} worker "
            f"processes ({_last_line(exc.__cause__ or exc).rstrip('.')}). Keep unpicklable "
            "state (a random.SystemRandom, an open file or connection) out of the function, "
            "e.g. create it inside the call, or pass backend='threading'")

    def _worker_died(self, exc: BaseException, task: ChunkTask) -> WorkerDiedError:
        return WorkerDiedError(
            f"a worker process died running mechanism {self.mech.name!r} at "
            f"{describe_task(task)} (or a chunk running beside it): {type(exc).__name__}. "
            "Nothing was certified from it; retry the audit — the same seed gives the same "
            "result. If it dies again, the mechanism crashes the interpreter on that input")


_POOLS_STARTED: set = set()  # the worker counts whose loky pool this process has started


@contextlib.contextmanager
def _workers_ignore_ctrl_c(backend: str | None, workers: int):
    """While a loky pool first dispatches (and so starts its worker processes), SIGINT is
    ignored: the workers inherit that (an ignored signal stays ignored across exec), so Ctrl-C
    reaches only this process, which stops the audit and the pool, instead of every worker
    printing a KeyboardInterrupt traceback (a worker importing numpy when Ctrl-C arrives
    would). Dispatching returns at once, so a Ctrl-C is lost only if it lands in those few
    milliseconds, once per pool; later dispatches reuse the pool and change nothing. Only the
    main thread may change a signal's handler."""
    if (backend != "loky" or workers in _POOLS_STARTED
            or threading.current_thread() is not threading.main_thread()):
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
        _POOLS_STARTED.add(workers)
    finally:
        signal.signal(signal.SIGINT, previous)


def _evaluator(evaluators: dict | None, task: ChunkTask):
    """The counting function of a certifying chunk: `evaluators[(pair, side)]` where the
    caller keys them by input (an input shared by several pairs, `sampling.shared`), else
    `evaluators[pair]`; None for a search chunk."""
    if evaluators is None:
        return None
    by_input = evaluators.get((task.pair, task.side))
    return by_input if by_input is not None else evaluators[task.pair]


def _last_line(exc: BaseException) -> str:
    """The last non-empty line of an exception's text (a worker's traceback ends in its cause)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip() not in ("", '"""')]
    return lines[-1] if lines else type(exc).__name__


def _require_dask_client():
    """Raise DpVerifyError unless dask.distributed is installed and a Client is running."""
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
