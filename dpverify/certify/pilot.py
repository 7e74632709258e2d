"""The pilot: a small sample drawn before a stage's certifying sample, under purpose TIMING,
whose runs are thrown away. It decides, per pair, whether common random numbers will certify
the stage's events more tightly than independent samples (docs/method.md#coupled-certificate).
Nothing it shows touches a certificate's counts, so any choice made on it is sound. The same
purpose times the mechanism for a measurement run's time budget (`seconds_per_run`)."""
from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ..sampling import TIMING, EachUse, shared_draws, split_into_chunks
from ..sampling.shared import input_key
from .certificates import Certificate
from ..stats import (MIN_COUPLED_BLOCK_RUNS, MIN_COUPLED_HITS_PER_BLOCK, coupled_block_size, expected_bound_and_method,
                     expected_certified_epsilon, expected_coupled_epsilon)

PILOT_SHARE = 16  # a pilot draws at most 1/16 of its stage's planned runs per input,
PILOT_RUNS = 1 << 16  # and at most this many
TIMING_RUNS = 1 << 14  # runs per input of the pilot that sizes a measurement run's budget


class PilotRate(NamedTuple):
    """One event on the pilot: hits under P and Q, runs per input, runs where the two inputs
    disagree, and the per-run variance of (1_P − δ)/(p̂ − δ) − 1_Q/q̂."""

    k_p: int
    k_q: int
    runs: int
    disagree: int
    variance: float


PilotRates = dict  # event index → PilotRate


def _row_hits(events):
    """A chunk evaluator: which outputs fall in each event, bool (runs, events)."""
    def evaluate(enc) -> np.ndarray:
        return np.stack([c.hits(enc) for c in events], axis=1)
    return evaluate


def _rate(a: np.ndarray, b: np.ndarray, n: int, delta: float) -> PilotRate:
    """`a`, `b`: one event's per-run hits under P and under Q, run i of both from one seed."""
    k_p, k_q = int(a.sum()), int(b.sum())
    p_minus, q = k_p / n - delta, k_q / n
    variance = float(np.var(a / p_minus - b / q)) if p_minus > 0 and q > 0 else math.inf
    return PilotRate(k_p, k_q, n, int(np.count_nonzero(a != b)), variance)


def seconds_per_run(sampler, runs: int = TIMING_RUNS) -> float:
    """Wall seconds per run of the mechanism with every distinct input of the audit's pairs
    drawn side by side, timed on one chunk of min(`runs`, chunk size) runs per input drawn under
    purpose TIMING at stage 0 (a stream no other draw uses) and discarded: what
    `pipeline.schedule.samples_for_seconds` sizes a measurement run's budget on."""
    n = min(runs, sampler.chunk_size)
    seen, tasks = set(), []
    for p, inputs in enumerate(sampler.inputs):
        for side, x in enumerate(inputs):
            key = input_key(x)
            if key is None or key not in seen:
                seen.add(key)
                tasks += split_into_chunks(n, n, pair=p, side=side, stage=0, purpose=TIMING)
    started = time.perf_counter()
    sampler.probe(tasks, pooled=True)
    return (time.perf_counter() - started) / n


def pilot(sampler, events, j, planned, delta, shared_seeds=True) -> PilotRates:
    """Draw stage j's pilot: min(planned/PILOT_SHARE, PILOT_RUNS, one chunk) runs per input, in
    two chunks per input. M(D) and M(D') draw it from shared seeds, run for run (unless not
    `shared_seeds`: a mechanism with its own randomness); an input of several pairs is drawn
    once, as the stage will draw it (`sampling.shared_draws`). Returns event index →
    `PilotRate`; {} when the stage is too small to pilot."""
    n = min(planned // PILOT_SHARE, PILOT_RUNS, sampler.chunk_size)
    if n < 2 or not events:
        return {}
    by_pair: dict = {}
    for i, c in enumerate(events):
        by_pair.setdefault(c.pair, []).append(i)
    draws = shared_draws(sampler.inputs, by_pair, frozenset(by_pair) if shared_seeds else ())
    row_hits = {p: _row_hits([events[i] for i in idx]) for p, idx in by_pair.items()}
    evaluators = {(d.pair, d.side): EachUse([row_hits[p] for p, _ in d.uses]) for d in draws}
    tasks = [(d, t) for d in draws
             for t in split_into_chunks(n, -(-n // 2), pair=d.pair, side=d.side, stage=j,
                                        purpose=TIMING, coupled=shared_seeds,
                                        seed_pair=d.seed_pair)]
    hits = sampler.run([t for _, t in tasks], evaluators)
    rows: dict = {}
    for (d, _), per_use in zip(tasks, hits):
        for use, h in zip(d.uses, per_use):
            rows.setdefault(use, []).append(h)
    rates = {}
    for p, idx in by_pair.items():
        side_hits = [np.concatenate(rows[p, s]) for s in (0, 1)]
        for col, i in enumerate(idx):
            d = events[i].direction
            rates[i] = _rate(side_hits[d][:, col], side_hits[1 - d][:, col], n, delta)
    return rates


def _expected_bounds(rate: PilotRate, n, block, delta, level, min_hits_per_block):
    """(two Clopper–Pearson bounds, best independent certificate, coupled t-test): the bounds one
    event is expected to certify on n runs per input, planned on its pilot counts."""
    k_p, k_q, m, disagree, variance = rate
    two_bounds = float(expected_certified_epsilon(k_p, m, k_q, m, n, delta, level, shrink_z=0.0))
    independent = float(expected_bound_and_method(k_p, m, k_q, m, n, delta, level,
                                                  shrink_z=0.0)[0])
    n_blocks = -(-n // block)
    per_block = min(k_p, k_q, disagree) * block / m
    coupled = (float(expected_coupled_epsilon(k_p / m, k_q / m, variance, n_blocks * block,
                                              n_blocks, delta, 2 * level))
               if per_block >= min_hits_per_block else -math.inf)
    return two_bounds, independent, coupled


def choose_coupling(events, rates: PilotRates, n: int, chunk_size: int, delta: float,
                    level: float, min_hits_per_block: float = MIN_COUPLED_HITS_PER_BLOCK,
                    min_block_runs: int = MIN_COUPLED_BLOCK_RUNS):
    """How each pair's events are certified, decided on the pilot only: a pair draws its
    certifying sample on common random numbers when its best event is expected to certify more
    by the coupled t-test (stats.coupled_epsilon_bound, at 2·level) than any of its events by
    independent samples (the conditional ratio test or two Clopper–Pearson bounds). Only events
    with at least `min_hits_per_block` hits under each input and disagreeing runs per block may
    be certified coupled. On a coupled pair each event takes the coupled t-test where the pilot
    expects it to beat two Clopper–Pearson bounds, and those two bounds otherwise (they hold
    however the inputs' runs depend on each other; the ratio test needs independent Poisson
    counts). Blocks hold at least `min_block_runs` runs (`stats.coupled_block_size`). Returns
    the events with their certificates set, the coupled pairs and the block size."""
    events = [replace(c, certificate=Certificate.TWO_BOUNDS)  # none carried over
              if c.certificate is Certificate.COUPLED else c for c in events]
    block = coupled_block_size(n, chunk_size, min_block_runs)
    if block < 1 or not rates:
        return events, frozenset(), block
    expected = {i: _expected_bounds(rate, n, block, delta, level, min_hits_per_block)
                for i, rate in rates.items()}
    chosen = set()
    for p in {c.pair for c in events}:
        mine = [i for i, c in enumerate(events) if c.pair == p and i in rates]
        if mine and max(expected[i][2] for i in mine) > max(expected[i][1] for i in mine):
            chosen.add(p)
    out = [c if c.pair not in chosen else
           replace(c, certificate=Certificate.COUPLED if i in rates and expected[i][2] > expected[i][0]
                   else Certificate.TWO_BOUNDS)
           for i, c in enumerate(events)]
    return out, frozenset(chosen), block


def coupled_everywhere(events, block: int):
    """Every event certified by the coupled t-test, whatever the pilot expects (`block` > 0):
    sound for any mechanism, as the t-test compares i.i.d. block totals (used to test it)."""
    if not block or not events:
        return events, frozenset(), block
    return ([replace(c, certificate=Certificate.COUPLED) for c in events],
            frozenset(c.pair for c in events), block)
