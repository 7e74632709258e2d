"""Pre-flight checks run before an audit's parallel work, and the search samples of the
one-event audits (Rényi, zCDP) that follow them.

The pre-flight surfaces a crashing or malformed mechanism early, and catches randomness that
does not come from the `rng` argument (docs/method.md, "The preflight").
"""
from __future__ import annotations

import random
from math import comb

import numpy as np

from ..errors import ContractError, RandomnessError
from .chunks import PREFLIGHT, SEARCH, ChunkTask, split_into_chunks
from .draw import describe_input, run_chunk
from .encoding import Encoded
from .sampler import Sampler

REPEAT_PROBE_CHUNKS = 4
REPEAT_PROBE_RUNS = 256
PREFLIGHT_RUNS = 64      # runs per input of the preflight ...
PREFLIGHT_BATCHES = 2    # ... in this many batches, each from a seed of its own
SPREAD_SINGLES = 32      # one-run calls whose outputs a batch's spread is compared with
SPREAD_LEVEL = 1e-12     # the spread check's false-rejection rate, all coordinates together


def check_uses_rng(sampler: Sampler, pair: int, side: int,
                   size: int = PREFLIGHT_RUNS) -> Encoded:
    """Run a small sample twice with the same seeds: differing outputs mean randomness that
    does not come from `rng`, or state kept between calls (`hidden_randomness_error`).

    Also surfaces a crashing or malformed mechanism early, before any parallel work, and checks
    the batched form's contract (`check_batch_contract`). A mechanism declared with
    `randomness="own"` is run once instead: its outputs cannot repeat, and that is what it
    declared.
    """
    if sampler.mech.draws_own_randomness:
        first = sampler.preflight(pair, side, size, twice=False, batches=PREFLIGHT_BATCHES)[0]
        check_batch_contract(sampler, pair, side, first)
        check_batch_spread(sampler, pair, side, first[0])
        check_chunks_differ(sampler, pair, side)
        return Encoded.concat(first)
    first, second = sampler.preflight(pair, side, size, batches=PREFLIGHT_BATCHES)
    if not all(np.array_equal(a.keys, b.keys) for a, b in zip(first, second)):
        raise hidden_randomness_error(sampler, pair, side)
    check_batch_contract(sampler, pair, side, first)
    check_batch_spread(sampler, pair, side, first[0])
    return Encoded.concat(first)


def check_batch_contract(sampler: Sampler, pair: int, side: int, batches: list) -> None:
    """A batched mechanism promises `size` independent outputs per call. Two calls from seeds
    of their own (`batches`, PREFLIGHT_RUNS/2 runs each) that are each one repeated output, yet
    differ from each other, break it: one draw was broadcast to the batch
    (`np.full(size, data + rng.laplace(0, 1))`), and every certifying count would be a count of
    copies. For independent outputs this happens with probability
    Σ_o p(o)^32 Σ_{o'≠o} p(o')^32 ≤ Σ_o p(o)^32 (1 − p(o))^32 ≤ max_x x^31 (1 − x)^32
    < 1.1·10^-19, whatever the output distribution, so a correct mechanism is never rejected in
    practice (docs/method.md, "The preflight")."""
    if not sampler.mech.batched or len(batches) < 2:
        return
    one_value = all(len(np.unique(b.keys, axis=0)) == 1 for b in batches)
    if one_value and not all(np.array_equal(batches[0].keys[0], b.keys[0]) for b in batches):
        runs = len(batches[0].keys)
        raise ContractError(
            f"mechanism {sampler.mech.name!r} returned one value repeated {runs} times in each "
            f"batch on input {describe_input(sampler.inputs[pair][side])}, but a different "
            "value in each batch: its batched form f(data, rng, size) must return `size` "
            "independent outputs, each with noise of its own (e.g. rng.laplace(0, b, size), not "
            "np.full(size, rng.laplace(0, b))). Nothing can be audited on copies of one draw")


def span_pvalue(inside: int, batch: int, singles: int) -> float:
    """P[at most `inside` of `singles` values lie between the least and the largest of `batch`
    values], when all of them are exchangeable and distinct: the batch's ranks among the
    n = batch + singles values are a uniform subset, and a span of L ranks holding it can sit at
    n − L + 1 places, with C(L − 2, batch − 2) ways to fill its inside (docs/method.md, "The
    preflight")."""
    n = batch + singles
    held = sum((n - span + 1) * comb(span - 2, batch - 2)
               for span in range(batch, batch + inside + 1))
    return held / comb(n, batch)


def check_batch_spread(sampler: Sampler, pair: int, side: int, batch: Encoded) -> None:
    """A batch whose outputs spread far less than outputs drawn one per call shares noise
    between its runs (`data + shared + rng.laplace(0, 0.01, size)`). On every coordinate whose
    batch and SPREAD_SINGLES one-run outputs are finite and all distinct, count the one-run
    outputs inside the batch's range; a count whose `span_pvalue` is below SPREAD_LEVEL over
    the coordinates tested is a ContractError. Independent outputs fail it with probability
    below SPREAD_LEVEL, whatever their law; discrete coordinates (ties) are left to
    `check_batch_contract`. The contract is the mechanism's, not an input's: it is checked on
    the first input of the first pair only, which keeps its cost at SPREAD_SINGLES calls."""
    if not sampler.mech.batched or (pair, side) != (0, 0):
        return
    tasks = [ChunkTask(pair=pair, side=side, stage=2, purpose=PREFLIGHT, index=i, start=0,
                       size=1) for i in range(SPREAD_SINGLES)]
    try:
        ours, singles = batch.X, np.vstack([enc.X for enc in sampler.probe(tasks)])
    except (AttributeError, TypeError, ValueError):  # outputs without a numeric matrix
        return
    if ours.ndim != 2 or singles.shape[1:] != ours.shape[1:]:
        return  # outputs of varying length whose one-run draws held none of the batch's columns
    columns = [c for c in range(ours.shape[1]) if _distinct(ours[:, c], singles[:, c])]
    for c in columns:
        low, high = ours[:, c].min(), ours[:, c].max()
        inside = int(np.sum((singles[:, c] > low) & (singles[:, c] < high)))
        if span_pvalue(inside, len(ours), len(singles)) < SPREAD_LEVEL / len(columns):
            raise ContractError(
                f"mechanism {sampler.mech.name!r} returned a batch of {len(ours)} outputs on "
                f"input {describe_input(sampler.inputs[pair][side])} that spread far less "
                f"than outputs drawn one per call (coordinate {c}: {inside} of "
                f"{len(singles)} one-run outputs fall inside the batch's range): its runs "
                "share noise. The batched form f(data, rng, size) must give every output "
                "noise of its own (no draw shared by the batch, e.g. not "
                "data + rng.laplace(0, b) + rng.laplace(0, small, size))")


def _distinct(*columns) -> bool:
    values = np.concatenate(columns)
    return bool(np.all(np.isfinite(values))) and len(np.unique(values)) == len(values)


def hidden_randomness_error(sampler: Sampler, pair: int, side: int) -> RandomnessError:
    """The error for a mechanism that gave different outputs for the same seed. Running it once
    more in this thread tells the two causes apart: if it moved numpy's or Python's global
    generator, its randomness comes from there; if not, it keeps state between calls (a
    counter, a cache, a budget that runs down) or draws from a generator of its own."""
    data = sampler.inputs[pair][side]
    where = (f"mechanism {sampler.mech.name!r} gave different outputs for the same seed on "
             f"input {describe_input(data)}")
    if not touches_global_generators(sampler, pair, side):
        return RandomnessError(
            f"{where}, without touching numpy's or Python's global random generators: it "
            "probably keeps state between calls (a counter, a cache, a privacy budget that "
            "runs down), or draws from a generator of its own. An audit needs each call to "
            "depend only on (data, rng): keep no state between calls, and take all "
            "randomness from `rng`; a generator that cannot be seeded is declared with "
            "@dpverify.mechanism(..., randomness=\"own\")")
    return RandomnessError(
        f"{where}: it draws randomness from somewhere other than the `rng` "
        "argument (numpy.random.*, random, time, a library's own generator). Take all "
        "randomness from `rng` so audits are reproducible, or, if it cannot be seeded, "
        "declare it: @dpverify.mechanism(..., randomness=\"own\") (the audit stays sound, "
        "but the same seed no longer gives the same bound)")


def touches_global_generators(sampler: Sampler, pair: int, side: int) -> bool:
    """Whether one preflight chunk, run here, moves numpy's or Python's global generator."""
    before = (np.random.get_state()[1].copy(), np.random.get_state()[2], random.getstate())
    task = ChunkTask(pair=pair, side=side, stage=0, purpose=PREFLIGHT, index=0, start=0,
                     size=PREFLIGHT_RUNS // PREFLIGHT_BATCHES)
    try:
        run_chunk(sampler.mech, sampler.inputs[pair][side], task, sampler.root_seed)
    except Exception:  # a diagnosis only: the error about to be raised is the finding
        return True
    after = (np.random.get_state()[1], np.random.get_state()[2], random.getstate())
    return not (np.array_equal(before[0], after[0]) and before[1] == after[1]
                and before[2] == after[2])


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
    keys = [enc.keys for enc in sampler.probe(tasks, pooled=True)]
    varying = any(len(np.unique(k, axis=0)) > 1 for k in keys)
    if varying and all(np.array_equal(keys[0], k) for k in keys[1:]):
        raise RandomnessError(
            f"mechanism {sampler.mech.name!r} (randomness=\"own\") returned the same "
            f"{REPEAT_PROBE_RUNS} outputs, in the same order, in {REPEAT_PROBE_CHUNKS} separate "
            f"chunks on input {describe_input(sampler.inputs[pair][side])}: its generator's "
            f"state is copied into every chunk ({sampler.backend} workers receive a pickled copy "
            "of the mechanism), so the runs are not independent. Create the generator where "
            "it is used (a module-level generator is made afresh in each worker) or pass "
            "backend='threading'")


def checked_search_samples(sampler: Sampler, runs: int) -> dict:
    """The preflight of every input (`check_uses_rng`), then `runs` search outputs of every
    input, uncoupled, joined per input: (pair, side) → Encoded. What the one-event audits of
    Rényi and zCDP claims choose their event on (pipeline.rdp.audit_rdp, zcdp.audit_zcdp)."""
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
