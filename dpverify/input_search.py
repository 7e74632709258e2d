"""Input search: find the neighbouring pairs of a declared input domain that leak the most.

`find_pairs(mech, dpverify.pairs.search(...))` scores candidate pairs (D, D') by the bound their
best event promises on a small search sample (`attacks.search_pair`, the same attacks the audit
runs), starting from StatDP's patterns moved into the domain plus random pairs, then perturbing
the best ones for a few rounds. `dpverify.audit` calls it when given a `PairSearch` and audits the
pairs it returns.

Why certification stays sound: every run made here is a chunk of purpose `PAIR_SEARCH`, whose
`SeedSequence(seed, spawn_key=(pair, side, stage, PAIR_SEARCH, chunk))` never equals a key of the
audit's own chunks (purposes SEARCH, CERTIFY, PREFLIGHT), so these samples are independent of
every sample the audit draws later. The pairs returned are therefore a function of independent
randomness, fixed before any certifying sample exists; conditionally on them the audit is an
ordinary audit of a fixed pair list, and its union bound over the events it certifies (chosen
among those pairs on its own search samples) keeps the false-alarm rate ≤ 1 − confidence. Nothing
learned here (scores, events) is reused by the audit except the pairs themselves.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .attacks import search_pair
from .sampling.encoding import Encoded
from .mechanism import as_mechanism
from .pairs import PairSearch, PairSet, all_differ, one_differ
from .sampling import PAIR_SEARCH, Sampler, split_into_chunks

SEARCH_SAMPLES_BATCHED = 1 << 14
SEARCH_SAMPLES_SCALAR = 1 << 10
BATCH_BYTES = 128 << 20   # search outputs held at once, across the candidates of one batch
MAX_BATCH = 32            # candidate pairs sampled per batch
BEAM = 4                  # pairs perturbed in each local round (at least `keep`)
TIME_SHARE = 0.5          # of the time left, the share input search may use before it stops
LEVEL = 0.05 / 4          # default per-bound level for scoring (the last stage's, at 0.95)
BOUND_SHARE = 1 / 8       # random draws: chance a coordinate sits at each bound of the domain


class FoundPairs(PairSet):
    """The pairs input search chose, best first: a list of (D, D') with their search scores and
    the mechanism runs the search made."""

    def __init__(self, pairs, scores, runs: int, evaluated: int):
        super().__init__(pairs, distance=1)
        self.scores = tuple(scores)
        self.runs = int(runs)
        self.evaluated = int(evaluated)


def _key(x, s) -> tuple:
    """One key for (D, D') and (D', D): the audit runs both orders anyway."""
    a, b = tuple(x.tolist()), tuple((x + s).tolist())
    return min(a, b), max(a, b)


def _repair(space: PairSearch, x: np.ndarray, s: np.ndarray):
    """Clip D into the domain; turn (or shorten) each move that would leave it."""
    x = np.clip(x, space.low, space.high)
    if space.integer:
        x = np.round(x)
    mag, sign = np.abs(s), np.sign(s)
    up = np.minimum(space.high - x, mag)
    down = np.minimum(x - space.low, mag)
    fits = np.where(sign > 0, up, down) == mag
    s = np.where(fits, sign * mag, np.where(up >= down, up, -down))
    return x, s


def structured_pairs(space: PairSearch) -> list[tuple]:
    """StatDP's patterns (values 0, 1, 2) moved to the bottom and the top of the domain.

    Like every candidate generator here, it returns pairs as (x, s): D = x and D' = x + s."""
    if space.high - space.low < 2:
        return []
    base = all_differ(space.length) if space.relation == "all_differ" else one_differ(space.length)
    out = []
    for offset in sorted({space.low, space.high - 2}):
        for d, d_prime in base:
            x = np.asarray(d, float) + offset
            out.append((x, np.asarray(d_prime, float) + offset - x))
    return out


def random_pairs(space: PairSearch, rng: np.random.Generator, m: int) -> list[tuple]:
    """`m` random neighbouring pairs (x, s) of the domain: x uniform (whole numbers if
    `space.integer`), each coordinate at a bound with chance BOUND_SHARE; s moves every
    coordinate by −1, 0 or +1 step, not all 0 (all_differ) or one coordinate by ±1 step
    (one_differ); moves that would leave the domain are turned or shortened (`_repair`)."""
    n, lo, hi = space.length, space.low, space.high
    if space.integer:
        x = rng.integers(int(lo), int(hi) + 1, (m, n)).astype(float)
    else:
        x = rng.uniform(lo, hi, (m, n))
    u = rng.random((m, n))
    x[u < BOUND_SHARE] = lo
    x[u > 1 - BOUND_SHARE] = hi
    if space.relation == "all_differ":
        s = rng.integers(-1, 2, (m, n)).astype(float)
        empty = np.flatnonzero(~s.any(axis=1))
        s[empty, rng.integers(0, n, len(empty))] = rng.choice([-1.0, 1.0], len(empty))
    else:
        s = np.zeros((m, n))
        s[np.arange(m), rng.integers(0, n, m)] = rng.choice([-1.0, 1.0], m)
    x, s = _repair(space, x, s * space.step)
    return list(zip(x, s))


def mutate_pair(space: PairSearch, rng: np.random.Generator, x: np.ndarray, s: np.ndarray):
    """One local move from the pair (x, s), returned as a new (x, s) in the domain: shift a
    coordinate, change which coordinates differ, push a coordinate to a bound, or translate the
    whole input (each with chance 1/4)."""
    x, s = x.copy(), s.copy()
    n, lo, hi, step = space.length, space.low, space.high, space.step
    width = max(1.0, (hi - lo) / 4) if space.integer else (hi - lo) / 4
    i = int(rng.integers(n))
    kind = int(rng.integers(4))
    if kind == 0:
        if rng.random() < 0.5:
            x[i] = rng.integers(int(lo), int(hi) + 1) if space.integer else rng.uniform(lo, hi)
        else:
            x[i] += rng.choice([-1, 1]) * (rng.integers(1, int(width) + 1) if space.integer
                                           else rng.uniform(0, width))
    elif kind == 1:
        if space.relation == "all_differ":
            s[i] = rng.choice([v for v in (-step, 0.0, step) if v != s[i]])
            if not s.any():
                s[i] = step
        else:
            j = int(np.flatnonzero(s)[0])
            k = int(rng.integers(n))
            if k == j:
                s[j] = -s[j]
            else:
                s[k], s[j] = s[j], 0.0
                x[k], x[j] = x[j], x[k]  # the changing coordinate keeps its value
    elif kind == 2:
        x[i] = lo if rng.random() < 0.5 else hi
    else:
        offset = rng.uniform(-width, width)
        x += round(offset) if space.integer else offset
    return _repair(space, x, s)


class _Scorer:
    """Draws PAIR_SEARCH samples for batches of candidate pairs and scores each pair."""

    def __init__(self, mech, seed, n_jobs, backend, deadline, samples, delta, level, n_certify):
        self.mech, self.seed = mech, int(seed)
        self.n_jobs, self.backend, self.deadline = n_jobs, backend, deadline
        self.samples, self.delta, self.level, self.n_certify = samples, delta, level, n_certify
        self.inputs: list[tuple] = []   # every pair scored, in order; its index is its spawn key
        self.runs = 0
        self.batch = 4                  # grown once the output width is known
        self.row_bytes = None

    def score(self, pairs: list[tuple], out_of_time) -> list[float]:
        """Scores of the pairs, in order; fewer when time ran out between batches."""
        scores: list[float] = []
        while len(scores) < len(pairs) and not (scores and out_of_time()):
            scores += self._score_batch(pairs[len(scores):len(scores) + self.batch])
        return scores

    def _score_batch(self, pairs):
        first = len(self.inputs)
        self.inputs += pairs
        # each pair's index among all pairs scored so far is its spawn key: the samples do not
        # depend on how pairs are grouped into batches
        tasks = [t for p in range(first, len(self.inputs)) for side in (0, 1)
                 for t in split_into_chunks(self.samples, 1 << 30, pair=p, side=side, stage=0,
                                            purpose=PAIR_SEARCH)]
        data: dict = {}
        with Sampler(self.mech, self.inputs, self.seed, n_jobs=self.n_jobs, backend=self.backend,
                     deadline=self.deadline) as sampler:
            for task, enc in zip(tasks, sampler.run(tasks)):
                enc.X = enc.X.astype(np.float32)
                data[task.pair, task.side] = enc
            self.runs += int(sampler.runs.sum())
        if self.row_bytes is None:
            width = max(e.X.shape[1] for e in data.values())
            self.row_bytes = 16 + 4 * width
            per_pair = 2 * self.samples * self.row_bytes
            self.batch = int(np.clip(BATCH_BYTES // per_pair, 1, MAX_BATCH))
        return [_best_expected(data[p, 0], data[p, 1], self.n_certify, self.delta, self.level)
                for p in range(first, len(self.inputs))]


def _best_expected(a: Encoded, b: Encoded, n_certify, delta, level) -> float:
    """The largest bound any learned event promises for a certifying sample of n_certify runs."""
    candidates = search_pair(0, a, b, n_certify, delta, level, n_certify)
    return max((c.expected_epsilon for c in candidates if not math.isnan(c.expected_epsilon)),
               default=-math.inf)


def find_pairs(mechanism, space: PairSearch, seed: int = 0, n_jobs: int = -1,
               backend: str | None = None, deadline: float | None = None, delta: float = 0.0,
               level: float = LEVEL, n_certify: int | None = None,
               samples_per_pair: int | None = None) -> FoundPairs:
    """The `space.keep` neighbouring pairs of the domain whose events promise the largest bound.

    Each candidate pair gets `samples_per_pair` search runs per input (default `space.samples`,
    else 2^14 batched / 2^10 scalar) and is scored by the largest `Candidate.expected_epsilon`
    of its learned events, i.e. the bound a certifying sample of `n_certify` runs at `level` is
    expected to give. Phases: StatDP's patterns moved into the domain and `space.candidates`
    random pairs; then `space.rounds` rounds that perturb the best pairs and keep what improves.
    Same seed, same pairs, for any n_jobs or backend. `deadline` (time.monotonic()) is the
    audit's: the search stops starting new rounds once half the time left at its start has
    gone, and a mechanism too slow to finish a batch raises AuditTimeoutError.

    Sound to certify on afterwards: see the module docstring (all runs here are PAIR_SEARCH
    chunks, independent of the audit's samples).
    """
    mech = as_mechanism(mechanism)
    if not isinstance(space, PairSearch):
        from .errors import InvalidPairsError
        raise InvalidPairsError(f"find_pairs needs a dpverify.pairs.search(...) domain, got "
                                f"{type(space).__name__}")
    samples = int(samples_per_pair or space.samples
                  or (SEARCH_SAMPLES_BATCHED if mech.batched else SEARCH_SAMPLES_SCALAR))
    if n_certify is None:
        n_certify = (1 << 22) if mech.batched else (1 << 17)
    stop_at = _stop_time(deadline)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(PAIR_SEARCH,)))
    scorer = _Scorer(mech, seed, n_jobs, backend, deadline, samples, delta, level, n_certify)
    search = _Search(space, rng, scorer, stop_at)
    search.score_new(structured_pairs(space) + random_pairs(space, rng, space.candidates))
    per_round = max(8, space.candidates // 4)
    for _ in range(space.rounds):
        if search.out_of_time():
            break
        beam = search.ranked()[:max(BEAM, space.keep)]
        search.score_new(search.local_moves(beam, per_round))
    best = search.ranked()[:space.keep]
    return FoundPairs([_as_pair(space, x, s) for _, _, x, s in best], [v[0] for v in best],
                      scorer.runs, len(search.found))


def _stop_time(deadline: float | None) -> float | None:
    """When the search stops starting rounds: TIME_SHARE of the time left until `deadline`."""
    if deadline is None:
        return None
    now = time.monotonic()
    return now + TIME_SHARE * max(deadline - now, 0.0)


class _Search:
    """The pairs scored so far (`found`: key → (score, order scored, x, s)) and the moves that
    propose new ones."""

    def __init__(self, space: PairSearch, rng: np.random.Generator, scorer: _Scorer,
                 stop_at: float | None):
        self.space, self.rng, self.scorer, self.stop_at = space, rng, scorer, stop_at
        self.found: dict = {}

    def out_of_time(self) -> bool:
        return self.stop_at is not None and time.monotonic() > self.stop_at

    def score_new(self, pairs: list[tuple]) -> None:
        """Score the pairs (x, s) not scored yet, each unordered pair once, none with s = 0."""
        fresh, keys = [], set()
        for x, s in pairs:
            k = _key(x, s)
            if k not in self.found and k not in keys and s.any():
                keys.add(k)
                fresh.append((k, x, s))
        if not fresh:
            return
        scores = self.scorer.score([_as_pair(self.space, x, s) for _, x, s in fresh],
                                   self.out_of_time)
        for (k, x, s), score in zip(fresh, scores):
            self.found[k] = (score, len(self.found), x, s)

    def ranked(self) -> list[tuple]:
        """The pairs found, best score first (ties: the one scored first)."""
        return sorted(self.found.values(), key=lambda v: (-v[0], v[1]))

    def local_moves(self, beam: list[tuple], count: int) -> list[tuple]:
        """`count` pairs, each one `mutate_pair` move from a beam pair (taken in turn), retried
        up to 8 times to reach a pair not scored yet."""
        children = []
        for i in range(count):
            _, _, x, s = beam[i % len(beam)]
            for _attempt in range(8):
                cx, cs = mutate_pair(self.space, self.rng, x, s)
                if _key(cx, cs) not in self.found:
                    break
            children.append((cx, cs))
        return children


def _as_pair(space: PairSearch, x: np.ndarray, s: np.ndarray) -> tuple:
    d, d_prime = x, x + s
    if space.integer:
        return d.astype(np.int64), d_prime.astype(np.int64)
    return d.copy(), d_prime.copy()
