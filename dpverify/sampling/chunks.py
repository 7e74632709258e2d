"""Chunks of runs and their seeds.

A chunk is `size` runs of the mechanism on one input of one pair. Each chunk draws from its own
`SeedSequence(seed, spawn_key=(pair, side, stage, purpose, chunk))`, so the purpose constants
below keep the samples of different jobs (searching, certifying, pre-flight, ...) independent
whatever their stage and pair numbers. Chunk boundaries depend only on the sample count, never
on `n_jobs` or the backend.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Purposes: the fourth entry of a chunk's spawn key.
SEARCH, CERTIFY, PREFLIGHT = 0, 1, 2
# Input search (input_search.py) draws under its own purpose, so its chunks never share a seed
# with an audit's search, certifying or pre-flight chunks, whatever their stage and pair numbers.
PAIR_SEARCH = 3
# The Poisson number of certifying runs per input (`poisson_sample_size`) has a stream of its own.
SAMPLE_SIZE = 4
# A certifying stage's pilot (certify.pilot): runs that time the stage and choose its
# certificate, then are discarded, under a purpose of their own so they never share a seed with a
# certifying chunk.
TIMING = 5
# The illustrative sample of a witness's event (illustration.collect_examples): fresh runs
# drawn after the stages to show which outputs the event holds; never counted in a certificate.
ILLUSTRATE = 6
# The spawn-key "side" of a coupled chunk, shared by both inputs (never 0 or 1, so a coupled
# chunk never shares a seed with an uncoupled one).
COUPLED_SIDES = 2

# Stage keys (the third entry of a spawn key) that do not depend on how many stages came before:
# an audit's last stage always draws under LAST_STAGE_KEY, and the i-th stage that only tunes
# (search frozen, nothing certified; i = 0, 1, ...) under TUNING_STAGE_KEY − i. A run with less
# time then draws a prefix of the runs a longer one draws there (docs/method.md, "Seed streams").
# Search stages keep their index: 1, 2, ..., far below these.
LAST_STAGE_KEY = 1 << 20
TUNING_STAGE_KEY = LAST_STAGE_KEY - 1
# A violation's confirmation (audit(confirm=True), pipeline.confirm) draws round r = 0, 1, ...
# under CONFIRM_STAGE_KEY + r: above every stage's key, so its runs are fresh.
CONFIRM_STAGE_KEY = LAST_STAGE_KEY + 1
# An ordinary audit draws stage j's search rows in rounds of up to 4 steps
# (pipeline.search.round_sizes, round_steps), step s of round r under stage key
# j·ROUND_KEY_BASE + 4r + s: distinct from each other and from every other key.
ROUND_KEY_BASE = 64


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
    # (the coupled certificate, stats.coupled_epsilon_bound)
    coupled: bool = False
    # a coupled chunk of an input shared by several pairs (sampling.shared) draws the seeds of
    # this pair, so every pair linked to it by a shared input stays coupled
    seed_pair: int | None = None

    def seed_sequence(self, root_seed: int) -> np.random.SeedSequence:
        """The chunk's own seed: (pair, side, stage, purpose, index) spawned from `root_seed`;
        a coupled chunk puts COUPLED_SIDES in place of its side, and its `seed_pair`, if set,
        in place of its pair."""
        side = COUPLED_SIDES if self.coupled else self.side
        pair = self.seed_pair if self.coupled and self.seed_pair is not None else self.pair
        return np.random.SeedSequence(
            entropy=root_seed, spawn_key=(pair, side, self.stage, self.purpose, self.index))


def split_into_chunks(n: int, chunk_size: int, **task_fields) -> list[ChunkTask]:
    """Cut n samples into chunks of at most chunk_size (the last one shorter)."""
    tasks = []
    for index, start in enumerate(range(0, n, chunk_size)):
        tasks.append(ChunkTask(index=index, start=start, size=min(chunk_size, n - start),
                               **task_fields))
    return tasks


def poisson_sample_size(root_seed: int, mean: int, pair: int, side: int, stage: int) -> int:
    """How many certifying runs input `side` of pair `pair` gets at `stage`: N ~ Poisson(mean).

    With a Poisson number of runs the hits of an event are Poisson(mean·p) and independent
    between the inputs, so given the total hits k_p + k_q the hits under D are exactly
    Binomial(k_p + k_q, p/(p + q)) — the one-bound ratio test of `stats.ratio_epsilon_bound`.
    N comes from its own seed stream, so it is independent of every output. The stream is keyed
    by the mean too: the last stage's key is the same in every audit, and one stream for every
    mean would put every audit of a seed at the same quantile of its Poisson law."""
    seq = np.random.SeedSequence(entropy=root_seed,
                                 spawn_key=(pair, side, stage, SAMPLE_SIZE, int(mean)))
    return int(np.random.default_rng(seq).poisson(mean))


def stage_of_key(key: int) -> str:
    """A stage key in words: "stage 3", "the last stage", "tuning stage 2"."""
    if key == LAST_STAGE_KEY:
        return "the last stage"
    if key >= CONFIRM_STAGE_KEY:
        return f"confirmation round {key - CONFIRM_STAGE_KEY + 1}"
    if key > TUNING_STAGE_KEY // 2:
        return f"tuning stage {TUNING_STAGE_KEY - key + 1}"
    return f"stage {key}"


def describe_task(task: ChunkTask) -> str:
    """The chunk in words, for error messages: stage, purpose, pair, input, chunk, samples."""
    purpose = {SEARCH: "search", CERTIFY: "certify", PREFLIGHT: "pre-flight",
               PAIR_SEARCH: "input search", TIMING: "pilot"}[task.purpose]
    side = ("D", "D'")[task.side]
    stage = stage_of_key(task.stage)
    if task.purpose == SEARCH and ROUND_KEY_BASE <= task.stage < TUNING_STAGE_KEY // 2:
        stage = f"stage {task.stage // ROUND_KEY_BASE}, round {task.stage % ROUND_KEY_BASE // 4 + 1}"
    return (f"{stage} ({purpose}), pair {task.pair}, input {side}, "
            f"chunk {task.index} (samples {task.start}..{task.start + task.size - 1})")
