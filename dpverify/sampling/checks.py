"""Pre-flight checks run before an audit's parallel work, and the search samples of the
one-event audits (Rényi, zCDP) that follow them.

The pre-flight surfaces a crashing or malformed mechanism early, and catches randomness that
does not come from the `rng` argument (docs/method.md, "The preflight").
"""
from __future__ import annotations

import numpy as np

from .encoding import Encoded
from ..errors import RandomnessError
from .chunks import PREFLIGHT, SEARCH, ChunkTask, split_into_chunks
from .draw import describe_input
from .sampler import Sampler

REPEAT_PROBE_CHUNKS = 4
REPEAT_PROBE_RUNS = 256


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
            f"{describe_input(data)}: it draws randomness from somewhere other than the `rng` "
            "argument (numpy.random.*, random, time, a library's own generator). Take all "
            "randomness from `rng` so audits are reproducible, or, if it cannot be seeded, "
            "declare it: @dpverify.mechanism(..., randomness=\"own\") (the audit stays sound, "
            "but the same seed no longer gives the same bound)")
    return first


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
