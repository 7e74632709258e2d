"""Sampling and encoding: chunked, seeded, parallel runs of a mechanism on one input, and their
outputs turned into what the attacks read.

Reproducibility: every chunk draws from its own `SeedSequence(seed, spawn_key=(pair, side,
stage, purpose, chunk))`; a coupled chunk puts COUPLED_SIDES in place of the side, so M(D) and
M(D') draw it from the same seed (common random numbers) while different chunks stay
independent. Chunk boundaries depend only on the sample count, never on `n_jobs` or the
backend, so one seed gives the same result however the work is spread.
Memory: a certifying chunk returns only its event counts; a search chunk returns its encoded
outputs, and the pipeline caps how many search outputs it keeps.

Modules:
- `chunks`:  ChunkTask, split_into_chunks, the purposes (SEARCH, CERTIFY, PREFLIGHT,
             PAIR_SEARCH, TIMING, ILLUSTRATE) that keep seed streams apart, the position-free
             stage keys (LAST_STAGE_KEY, TUNING_STAGE_KEY, CONFIRM_STAGE_KEY),
             poisson_sample_size;
- `draw`:    one chunk: draw_outputs (the mechanism's runs) and run_chunk (drawn and encoded);
- `encoding`: outputs → discrete keys, numeric features, flags for ⊥/None, float bits
             (`Encoded`, `encode`);
- `sampler`: the Sampler, which runs chunks in parallel (joblib threads or loky processes, or
             dask) and turns worker failures into dpverify errors;
- `shared`:  inputs shared by several pairs, drawn once per certifying pass (shared_draws);
- `checks`:  the pre-flight (check_uses_rng, check_chunks_differ, a batch's ties and spread),
             the checks on the illustrative sample's calls that a batch's runs are independent
             (check_runs_independent) and checked_search_samples;
- `memory`:  return_freed_memory.
"""
from .checks import (CALLS, REPEAT_PROBE_CHUNKS, REPEAT_PROBE_RUNS, check_chunks_differ,
                     check_runs_independent, check_uses_rng, checked_search_samples)
from .chunks import (CERTIFY, CONFIRM_STAGE_KEY, COUPLED_SIDES, ILLUSTRATE, LAST_STAGE_KEY,
                     PAIR_SEARCH, PREFLIGHT, SAMPLE_SIZE, SEARCH, TIMING, TUNING_STAGE_KEY, ChunkTask, describe_task,
                     poisson_sample_size, split_into_chunks)
from .draw import ChunkSeconds, describe_input, draw_outputs, run_chunk
from .memory import return_freed_memory
from .sampler import (BACKENDS, BATCHED_CHUNK_SIZE, SCALAR_CHUNK_SIZE, RunSeconds, Sampler,
                      TimeBudgetSpent)
from .shared import EachUse, SharedDraw, shared_draws

__all__ = [
    "BACKENDS", "BATCHED_CHUNK_SIZE", "CALLS", "CERTIFY", "CONFIRM_STAGE_KEY", "COUPLED_SIDES",
    "ILLUSTRATE", "LAST_STAGE_KEY",
    "PAIR_SEARCH", "PREFLIGHT", "REPEAT_PROBE_CHUNKS", "REPEAT_PROBE_RUNS", "SAMPLE_SIZE",
    "SCALAR_CHUNK_SIZE", "SEARCH", "TIMING", "TUNING_STAGE_KEY", "TimeBudgetSpent",
    "ChunkSeconds", "ChunkTask", "EachUse", "RunSeconds", "Sampler", "SharedDraw",
    "check_chunks_differ", "check_runs_independent", "check_uses_rng", "checked_search_samples", "describe_input",
    "describe_task", "draw_outputs", "poisson_sample_size", "return_freed_memory", "run_chunk",
    "shared_draws", "split_into_chunks",
]
