"""`audit()`: sampling → encoding → attack (search split) → certify (fresh split) → result.

Statistical design (theory.md §2), stated once:
- The audit runs in stages whose certifying sample grows 4× per stage up to `samples` per input.
- At stage j the events are chosen on search samples only; the best `certify_per_stage` events
  over all pairs and both directions are then counted on fresh samples drawn for this stage.
- Stage j spends α_j = α/2^{J−j+1} (α = 1 − confidence); each of its K events gets α_j/K,
  spent on one conditional ratio test (δ = 0; exact because each input's certifying run count
  is Poisson) or split evenly over two Clopper–Pearson bounds, whichever the search data expect
  to certify more — or, where a pilot drawn apart shows that common random numbers will
  certify a pair's events more tightly, on a t-test over blocks that both inputs draw from
  shared seeds (`_pilot`, `_choose_coupling`, stats.coupled_epsilon_bound; the ratio test is
  then off for that pair, as its counts are no longer independent).
  By the union bound the chance that ANY reported bound exceeds the true ε —
  i.e. the false-alarm rate on a correct mechanism — is ≤ α.
- The first stage whose bound exceeds the claim stops the audit (gross bugs fail fast).
- A measurement run (`stop_early=False`) certifies at its last stage only: earlier stages
  spend no α (their fresh samples choose and tune the last stage's events) and the last stage
  spends all of it, so its bound is as tight as one pre-chosen event's. With a time budget
  (`seconds=`, dpverify/budget.py) which stage is the last, and its size, are decided from the
  clock before that stage draws its certifying sample, so the bound's confidence is unchanged.
- Search samples, and the samples on which a measurement run's stages that certify nothing
  count the tracked grids, are paired: row i (block b) of M(D) and of M(D') share a seed
  (PAIRED_SEARCH). They only choose events, so this touches no certificate; it lets the planner
  judge a rare event's ratio on the runs where the inputs disagree rather than on all its hits.
- Search stops growing once the best event's log-ratio is known to ±0.01 and to a tenth of its
  size on the search sample;
  later stages then certify the same events on their own fresh samples.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from itertools import zip_longest

import numpy as np
from joblib import Parallel, delayed

from . import pairs as pairs_module
from .budget import CountingCost, TimeBudget, search_rows
from .attacks import (PROBE_STRIDE, Candidate, PairEvaluator, count_at_least, curve_grid,
                      Tuning, learn_models, learn_pair, pair_events, retune, tuning_grid)
from .encoding import Encoded
from .errors import InvalidClaimError
from .compose import group_claim
from .evidence import with_examples
from .mechanism import as_mechanism, validate_claim
from .renyi import balle_epsilon, renyi_bernoulli, renyi_lower_bound, validate_rdp
from .result import (COUPLED, RATIO_TEST, TWO_BOUNDS, AuditResult, PrivacyCurves,
                     RenyiAuditResult, StageSummary, Witness)
from .progress import Progress
from .sampling import (CERTIFY, SEARCH, TIMING, Sampler, check_uses_rng,
                       checked_search_samples, poisson_sample_size, return_freed_memory,
                       split_into_chunks)
from .region import box_outside
from .stats import (MIN_COUPLED_BLOCK_RUNS, MIN_COUPLED_BLOCKS,  # noqa: F401 (re-exported)
                    MIN_COUPLED_HITS_PER_BLOCK, certified_epsilon, coupled_block_size,
                    coupled_epsilon_bound, cp_lower, cp_upper, delta_lower_curve, epsilon_pvalue,
                    expected_bound_and_method, expected_certified_epsilon,
                    expected_coupled_epsilon, final_stage_alphas, paired_variance_from_blocks,
                    plug_in_epsilon, ratio_epsilon_bound, stage_alphas, wilson_bounds)

DEFAULT_SAMPLES_BATCHED = 1 << 22
DEFAULT_SAMPLES_SCALAR = 1 << 17
FIRST_STAGE = 1 << 10
GROWTH = 4
SEARCH_CAP = 1 << 19
SEARCH_MEMORY_BYTES = 384 << 20
PRUNE_AFTER_STAGE = 5   # from then on only the most promising pairs get more search samples
# How many pairs keep getting search samples from PRUNE_AFTER_STAGE on. With two, SVT1 (seed 1,
# 2^24 runs per input) kept its two pairs with frequent weak events (true best 0.05) and dropped
# both whose best output reaches 0.0885, measured 2 SE low on the stage-5 search: 0.044 instead
# of 0.086. With three, the X pair survives; over 30 s runs of SVT1-4, SVT6, SVT34Parallel,
# PrefixSum and NumericalSVT (1-5 seeds) the other bounds moved within their seed noise.
ACTIVE_PAIRS = 3
SEARCH_PRECISION = 0.01
# Search samples are paired: row i of M(D) and of M(D') is drawn from one seed (common random
# numbers, as the coupled certificate's blocks are). Nothing certified rests on them; paired,
# a rare event's log-ratio is measured 2-4x more precisely on the same runs (SVT events), so the
# planner can tell a rare strong event from a frequent weaker one before either is tracked.
PAIRED_SEARCH = True
# ...and so are the samples on which a measurement run's stages that certify nothing count the
# tracked grids: in at least MIN_COUPLED_BLOCKS blocks of at least this many runs (they certify
# nothing, so their blocks need not be as large as a certificate's)
MIN_TUNING_BLOCK_RUNS = 1 << 10
SUPPORT_MISMATCH_HITS = 20
TRACKED = 4   # candidates whose score is also counted on a grid of thresholds while certifying
BUDGET_SAMPLES_FACTOR = 16  # with a time budget, the default last stage may grow to 16× its size
PILOT_SHARE = 16  # a stage's pilot (`_pilot`) draws at most 1/16 of its planned runs per input,
PILOT_RUNS = 1 << 16  # and at most this many, unless it also times a time budget's last stage
# MIN_COUPLED_BLOCKS, MIN_COUPLED_HITS_PER_BLOCK, MIN_COUPLED_BLOCK_RUNS: stats.py (the
# coupled certificate's conditions, which the search's planning shares)



def default_samples(mech) -> int:
    """The certifying runs per input at the last stage when `audit` is given no `samples`: what
    the mechanism declared (`@dpverify.mechanism(samples=...)`, set by the library adapters),
    else DEFAULT_SAMPLES_BATCHED for the batched form and DEFAULT_SAMPLES_SCALAR for the
    scalar one."""
    if mech.samples is not None:
        return mech.samples
    return DEFAULT_SAMPLES_BATCHED if mech.batched else DEFAULT_SAMPLES_SCALAR


def is_zcdp_claim(mech, epsilon=None, zcdp=None) -> bool:
    """Whether `audit` audits a ρ-zCDP claim (dpverify.zcdp): one is given, or the mechanism
    declares one and no ε is given or declared."""
    return zcdp is not None or (epsilon is None and mech.epsilon is None
                                and mech.zcdp is not None)


def plan_stages(samples: int) -> list[int]:
    """Certifying sample sizes per input: samples/4^{J−1}, …, samples/4, samples (≥ 1024 each)."""
    sizes = [samples]
    while sizes[-1] // GROWTH >= FIRST_STAGE:
        sizes.append(sizes[-1] // GROWTH)
    return sizes[::-1]


def _validate_budget(seconds, stop_early) -> float:
    if stop_early:
        raise InvalidClaimError("seconds= is the time budget of a measurement run: pass "
                                "stop_early=False as well (to bound an ordinary audit's time, "
                                "use time_limit=)")
    try:
        seconds = float(seconds)
    except (TypeError, ValueError):
        raise InvalidClaimError(f"seconds must be a positive number, got {seconds!r}")
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InvalidClaimError(f"seconds must be a positive number, got {seconds!r} (e.g. 60)")
    return seconds


def _validate_options(confidence, samples, seed, certify_per_stage):
    try:
        confidence = float(confidence)
    except (TypeError, ValueError):
        raise InvalidClaimError(f"confidence must be a number in (0, 1), got {confidence!r}")
    if not (0.0 < confidence < 1.0):
        raise InvalidClaimError(f"confidence must be in (0, 1), got {confidence!r} (e.g. 0.95)")
    if samples is not None and (not isinstance(samples, (int, np.integer)) or samples < 100):
        raise InvalidClaimError(f"samples must be an integer ≥ 100 (runs per input), got {samples!r}")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidClaimError(f"seed must be a non-negative integer, got {seed!r}")
    if not isinstance(certify_per_stage, int) or certify_per_stage < 1:
        raise InvalidClaimError("certify_per_stage must be a positive integer")
    return confidence


def event_bound(cand: Candidate, k_p, n_p, k_q, n_q, delta, level, blocks=None) -> float:
    """The certified bound of one event with the certificate chosen for it before its certifying
    sample was drawn: the coupled t-test on `blocks` = (per-block hits under P, under Q, runs
    per block) at 2·level, the conditional ratio test at 2·level (one bound each), else two
    Clopper–Pearson bounds at level."""
    if cand.coupled:
        return float(coupled_epsilon_bound(*blocks, delta, 2 * level))
    if cand.ratio_test:
        return float(ratio_epsilon_bound(k_p, k_q, 2 * level))
    return float(certified_epsilon(k_p, n_p, k_q, n_q, delta, level))


def _witness(pairs, cand: Candidate, k_p, n_p, k_q, n_q, delta, level, stage,
             blocks=None) -> Witness:
    first, second = pairs[cand.pair]
    D, D_prime = (first, second) if cand.direction == 0 else (second, first)
    return Witness(
        D=D, D_prime=D_prime, event=cand.describe(), attack=cand.model.kind,
        count_D=int(k_p), samples_D=int(n_p), count_D_prime=int(k_q), samples_D_prime=int(n_q),
        p_lower=float(cp_lower(k_p, n_p, level)), q_upper=float(cp_upper(k_q, n_q, level)),
        epsilon_lower_bound=event_bound(cand, k_p, n_p, k_q, n_q, delta, level, blocks),
        epsilon_estimate=plug_in_epsilon(k_p, n_p, k_q, n_q, delta), stage=stage,
        support_mismatch=bool(k_q == 0 and k_p >= SUPPORT_MISMATCH_HITS),
        certificate=COUPLED if cand.coupled else RATIO_TEST if cand.ratio_test else TWO_BOUNDS,
        level=float(level),
        **({"blocks_D": tuple(int(k) for k in blocks[0]),
            "blocks_D_prime": tuple(int(k) for k in blocks[1]), "block_size": int(blocks[2])}
           if cand.coupled else {}))


@dataclass
class _Chosen:
    events: list        # the K events this stage certifies
    candidates: list    # every candidate, best first (for pruning pairs)
    data: dict          # pair → (search outputs of D, of D'), for grids
    learned_rows: int = 0  # search rows whose models were learned (not reused) at this stage
    learned_pairs: int = 0  # and the pairs they belong to


def _search_stage(sampler, search, kept, active, j, n_j, n_final, delta, level, K,
                  floating_point=False, learned=None, planned=None, paired=PAIRED_SEARCH):
    """Draw more search samples for the active pairs, learn attacks, rank candidate events.

    `planned`: the certifying size per input the events' thresholds are chosen for (default
    n_j, the stage's own size; a measurement run's stages that certify nothing plan for the
    next stage's size, the least their events can be certified on).

    `paired`: draw row i of both inputs from one seed (PAIRED_SEARCH; off for a mechanism that
    draws its own randomness, whose rows cannot share a seed).

    `learned`: pair → (search sizes, `attacks.learn_pair` result) of pairs whose search sample
    has reached its cap. Such a pair gets no new search data, so its models and sorted
    selection scores are reused and only the thresholds are chosen again for this stage's size."""
    # search sample: more for every active pair, up to a memory-bounded cap
    cap = _search_cap(search, active)
    tasks = [t for p in active for s in (0, 1)
             for t in split_into_chunks(int(min(n_j, max(cap - kept[p], 0))), sampler.chunk_size,
                                        pair=p, side=s, stage=j, purpose=SEARCH,
                                        coupled=paired)]
    for task, enc in zip(tasks, sampler.run(tasks)):
        # float32 halves the memory; an event is whatever the chosen rule selects, so
        # rounding while searching cannot affect soundness (float-bit attacks need the bits)
        if not floating_point:
            enc.X = enc.X.astype(np.float32)
        search[task.pair, task.side].append(enc)
        kept[task.pair] += task.size if task.side == 0 else 0
    # attack: candidate events from search data only; each side's chunks are joined once
    for p in active:
        for s in (0, 1):
            search[p, s] = [Encoded.concat(search[p, s])]
    data = {p: (search[p, 0][0], search[p, 1][0]) for p in active}
    return_freed_memory()
    learned = {} if learned is None else learned
    relearned = []

    def rank(p):
        sizes = (len(data[p][0]), len(data[p][1]))
        if p in learned and learned[p][0] == sizes:
            models = learned[p][1]
        else:
            relearned.append(sum(sizes))
            models = learn_pair(*data[p], floating_point, paired)
            # no more search data will come: keep for the next stages, but only once search is
            # down to ACTIVE_PAIRS pairs (before that, pruning drops most of them unused)
            if kept[p] >= cap and len(active) <= ACTIVE_PAIRS:
                learned[p] = (sizes, models)
        return pair_events(p, models, planned or n_j, delta, level, n_final,
                           sampler.chunk_size)

    # several pairs are learned side by side on threads (numpy's sorts and reductions release
    # the GIL); results come back in pair order, so the candidates do not depend on n_jobs
    per_pair = ([rank(p) for p in active] if len(active) == 1 else
                Parallel(n_jobs=sampler.n_jobs, backend="threading")(
                    delayed(rank)(p) for p in active))
    return_freed_memory()
    candidates: list[Candidate] = [c for found in per_pair for c in found]
    candidates.sort(key=lambda c: -c.expected_epsilon)
    return _Chosen(candidates[:K], candidates, data, sum(relearned), len(relearned))


def _search_cap(search, active) -> int:
    """Runs per input a pair's search sample may hold: SEARCH_CAP, less if the active pairs'
    samples would outgrow SEARCH_MEMORY_BYTES."""
    row_bytes = 16 + 4 * max((e.X.shape[1] for v in search.values() for e in v), default=1)
    return min(SEARCH_CAP, SEARCH_MEMORY_BYTES // (row_bytes * 2 * len(active)))


def _distinct(candidates: list[Candidate]) -> list[Candidate]:
    """Drop candidates that select the same search-sample counts of the same pair and direction
    as a better one (several models often find one event), and exact repeats of an event (same
    model object, sign and threshold: a carried-over candidate and a fresh search of the same
    complete search sample often are one event). A carried-over candidate keeps the search
    counts of the event it started from though its threshold was re-chosen, so carried and
    freshly searched candidates are otherwise never merged. Carried-over candidates whose
    re-chosen thresholds count the same hits under both inputs on their common tuning sample
    are one event too: several models of a discrete output (a key ratio, a coordinate
    threshold) often retune onto the same output, and tracked three times it took three of
    SVT4's four tracked places (seed 2), leaving none for another pair's event."""
    out, seen = [], set()
    for c in candidates:
        keys = [(c.pair, c.direction, c.search_counts, c.tuning is None),
                (c.pair, c.direction, id(c.model), c.sign, c.threshold)]
        if c.tuning is not None:
            t, i = c.tuning, _tuning_index(c)
            keys.append((c.pair, c.direction, int(t.k_p[i]), t.m_p, int(t.k_q[i]), t.m_q))
        if not any(k in seen for k in keys):
            seen.update(keys)
            out.append(c)
    return out


def _tuning_index(cand: Candidate) -> int:
    """The index, in the candidate's tuning grid, of the threshold it was (re)tuned to."""
    return int(np.argmin(np.abs(np.asarray(cand.tuning.thresholds) - cand.threshold)))


def _carry_over(tracked: list[Candidate], n: int, delta: float, level: float,
                chunk_size: int = 0) -> list[Candidate]:
    """Candidates tracked on the previous stage's certifying sample, with thresholds re-chosen on
    those counts for this stage's size n. That sample is independent of this stage's certifying
    sample, so it can choose this stage's events. It is a quarter of the previous stage's
    certifying sample (PROBE_STRIDE): 2^18 outputs per input at the stage before last of a
    default audit, as many as the search sample's selection half, and more for larger budgets
    (a measurement run counts them on the whole sample of its stages that certify nothing);
    being fresh, it is free of the selection bias of the data the model was fitted on. Where
    it was drawn in paired blocks, thresholds are planned on paired standard errors
    (`retune`; `chunk_size` sets the coupled certificate's blocks)."""
    return [retune(c, c.tuning, n, delta, level, chunk_size) for c in tracked]


def _hedged(tuned: list[Candidate], searched: list[Candidate], K: int) -> list[Candidate]:
    """The K events of a measurement run's one certifying stage while search is still running:
    the best re-tuned and the best freshly searched candidates in turn. Neither ranking can be
    trusted over the other: a fresh search's best tail threshold among thousands is often luck
    (the winner's curse; NumericalSVT), while the tracked grids, counted on the previous
    stage's sample, can be too thin to see a rare event that the search sample did (PrefixSum).
    Certifying both and reporting the larger costs a Bonferroni share, not a gamble."""
    def ranked(cands):
        return _distinct(sorted(cands, key=lambda c: -c.expected_epsilon))
    turns = [c for both in zip_longest(ranked(tuned), ranked(searched)) for c in both if c]
    return _distinct(turns)[:K]


def _same_events_merged(events: list[Candidate], data: dict,
                        most: int | None = None) -> list[Candidate]:
    """Drop an event that selects exactly the same search outputs, under both inputs, as a
    better one of the same pair and direction: two models (or a model learned at two stages)
    often define one event, e.g. the same single discrete output, and certifying it twice only
    halves each bound's share of α; tracking it twice takes another event's place. Judged on
    search data, so any choice here is sound. `most`: stop once that many are kept."""
    out, hits = [], []
    for c in events:
        if most is not None and len(out) == most:
            break
        if c.pair in data:
            h = tuple(c.hits(enc) for enc in data[c.pair])
            if any(o.pair == c.pair and o.direction == c.direction and oh is not None
                   and all(np.array_equal(x, y) for x, y in zip(oh, h))
                   for o, oh in zip(out, hits)):
                continue
        else:
            h = None
        out.append(c)
        hits.append(h)
    return out


CONCENTRATE_Z = 2.0  # the lead a re-tuned event needs, in standard errors of its tuning estimate


def _tuning_standard_error(cand: Candidate) -> float:
    """The standard error of the log-ratio estimate at the candidate's threshold on its tuning
    counts: the paired one where they were counted in paired blocks, else sqrt(1/k_p + 1/k_q)
    (inf where one count is 0)."""
    _, k_p, k_q, _, _, variance = cand.tuning
    i = _tuning_index(cand)
    if not (k_p[i] > 0 and k_q[i] > 0):
        return math.inf
    return math.sqrt(variance[i] if variance is not None else 1 / k_p[i] + 1 / k_q[i])


def _concentrate(events: list[Candidate], n: int, delta: float,
                 level_alone: float, chunk_size: int = 0) -> list[Candidate]:
    """A measurement run's certifying stage: all of α on its best re-tuned event when the others
    are clearly not worth their share. The events were planned for a share of α each; alone,
    the best event's threshold is re-chosen for all of it (`level_alone`: the per-bound level of
    one event with all of α) and its expected bound rises by `gain`. The others are dropped only
    if every one is expected below it by more than `gain` and by more than CONCENTRATE_Z
    standard errors of its tuning estimate: the best of a threshold grid is itself a winner's
    curse pick (a deep tail threshold of Laplace resting on a few thousand hits can promise
    more than the true ε), and then the hedge of `_hedged` — the best freshly searched event
    beside it — is what saves the bound."""
    best = events[0] if events else None
    if best is None or best.tuning is None or any(
            c.expected_epsilon > best.expected_epsilon for c in events[1:]):
        return events
    alone = retune(best, best.tuning, n, delta, level_alone, chunk_size)
    lead = max(alone.expected_epsilon - best.expected_epsilon,
               CONCENTRATE_Z * _tuning_standard_error(best))
    if len(events) > 1 and max(c.expected_epsilon for c in events[1:]) >= best.expected_epsilon - lead:
        return events
    return [alone]


def _last_stage_pairs(tracked: list[Candidate], searching: list[int], K: int,
                      n_pairs: int) -> int:
    """The most pairs a last stage's K events can come from, for a time budget's projection:
    the tracked candidates' pairs and, while search runs, any active pair."""
    return min(K, len({c.pair for c in tracked} | set(searching))) or min(K, n_pairs)


def _precise_enough(best: Candidate) -> bool:
    """Stop searching when the best event is informative (expected bound > 0) and its log-ratio
    is known to ±SEARCH_PRECISION and to a tenth of its size (one standard error,
    sqrt(1/k_p + 1/k_q), on the selection half of the search sample): a weak effect (SVT1's best
    events sit near 0.04) keeps searching while other pairs and events may still beat it."""
    k_p, m_p, k_q, m_q = best.search_counts
    if not (best.expected_epsilon > 0 and k_p > 0 and k_q > 0):
        return False
    log_ratio = math.log((k_p / m_p) / (k_q / m_q))
    return math.sqrt(1 / k_p + 1 / k_q) <= min(SEARCH_PRECISION, 0.1 * log_ratio)


def _most_promising_pairs(candidates: list[Candidate], how_many: int) -> list[int]:
    """The pairs whose events promise the highest bound at the final sample size, best first."""
    pairs: list[int] = []
    for c in sorted(candidates, key=lambda c: -c.potential):
        if c.pair not in pairs:
            pairs.append(c.pair)
        if len(pairs) == how_many:
            break
    return pairs


def _grid_slice(cands, i, counts_p, counts_q):
    """Candidate i's grid counts (k_p, k_q) out of its pair's count vectors (events come first)."""
    start = len(cands) + sum(len(c.grid) for c in cands[:i] if c.grid is not None)
    stop = start + len(cands[i].grid)
    return counts_p[start:stop], counts_q[start:stop]


def _grid_counts(cands, i, counts_p, counts_q, n_p, n_q, fraction):
    """The witness's grid counts, with what `privacy_curves_of` needs to plot them."""
    cand = cands[i]
    if cand.grid is None:
        return None
    k_p, k_q = _grid_slice(cands, i, counts_p, counts_q)
    return {"thresholds": cand.grid, "k_p": k_p, "k_q": k_q,
            "n_p": n_p, "n_q": n_q, "k_event": (counts_p[i], counts_q[i]), "fraction": fraction,
            "ratio_test": cand.ratio_test,
            "privacy_loss": (cand.model.privacy_loss(cand.sign)
                             if hasattr(cand.model, "privacy_loss") else None)}


def _certifying_counts(sampler, seed, events, probes, j, n_j, stride=PROBE_STRIDE,
                       coupled=frozenset(), block=0):
    """Count the K events on fresh samples (purpose CERTIFY) of stage j, Poisson(n_j) runs per
    input (`poisson_sample_size`: what the ratio test needs; the two-bound certificate holds
    given any sizes). A pair in `coupled` instead draws ceil(n_j/block) blocks of `block` runs
    per input, each block from one seed shared by both inputs (`_choose_coupling`). The same
    pass counts the tracked candidates' threshold grids, which choose the next stage's
    thresholds. Returns pair → (events, probes), (pair, side) → count vector (events, then the
    probes' grids, then the probe sample size; see `PairEvaluator`), (pair, side) → runs,
    (pair, side) → per-block count vectors (coupled pairs only), and the seconds its chunks
    spent counting grids (`budget`)."""
    by_pair: dict = {}
    for c in events:
        by_pair.setdefault(c.pair, ([], []))[0].append(c)
    for c in probes:
        by_pair.setdefault(c.pair, ([], []))[1].append(c)
    evaluators = {p: PairEvaluator(ev + pr, probe_start=len(ev), stride=stride)
                  for p, (ev, pr) in by_pair.items()}
    runs = {(p, s): (-(-n_j // block) * block if p in coupled
                     else poisson_sample_size(seed, n_j, p, s, j))
            for p in by_pair for s in (0, 1)}
    tasks = [t for (p, s), n in runs.items()
             for t in split_into_chunks(n, block if p in coupled else sampler.chunk_size,
                                        pair=p, side=s, stage=j, purpose=CERTIFY,
                                        coupled=p in coupled)]
    counts = {(p, s): 0 for p in by_pair for s in (0, 1)}
    blocks: dict = {}
    for task, c in zip(tasks, sampler.run(tasks, evaluators)):
        counts[task.pair, task.side] = counts[task.pair, task.side] + c
        if task.coupled:
            blocks.setdefault((task.pair, task.side), []).append(c)
    grid_seconds = sum(sum(e.grid_seconds) for e in evaluators.values())
    return by_pair, counts, runs, {k: np.array(v) for k, v in blocks.items()}, grid_seconds


def _row_hits(events: list[Candidate]):
    """A chunk evaluator for `_pilot`: which outputs fall in each event, bool (runs, events)."""
    def evaluate(enc: Encoded) -> np.ndarray:
        return np.stack([c.hits(enc) for c in events], axis=1)
    return evaluate


def _pilot(sampler, events, j, planned, delta, most=PILOT_RUNS, shared_seeds=True):
    """A small sample drawn before a certifying one: min(planned/PILOT_SHARE, `most`, one
    chunk) runs per input, in two chunks per input, under purpose TIMING (`most`: one chunk
    when it also times a time budget's last stage; then it runs through the pool, as the stage
    will). Its runs are thrown away, so nothing they show touches a certificate; they choose
    how the stage certifies. M(D) and M(D') draw it from shared seeds, run for run (unless not
    `shared_seeds`: a mechanism with its own randomness), and every event is evaluated per run. Returns the wall seconds per run per input (what a time budget's last
    stage needs) and, per event index, (hits under P, hits under Q, runs, runs where the two
    inputs disagree, per-run variance of (1_P − δ)/(p̂ − δ) − 1_Q/q̂); (None, {}) when the stage
    is too small to pilot."""
    n = min(planned // PILOT_SHARE, most, sampler.chunk_size)
    if n < 2 or not events:
        return None, {}
    by_pair: dict = {}
    for i, c in enumerate(events):
        by_pair.setdefault(c.pair, []).append(i)
    evaluators = {p: _row_hits([events[i] for i in idx]) for p, idx in by_pair.items()}
    tasks = [t for p in by_pair for s in (0, 1)
             for t in split_into_chunks(n, -(-n // 2), pair=p, side=s, stage=j, purpose=TIMING,
                                        coupled=shared_seeds)]
    started = time.perf_counter()
    # through the pool only when it times the stage (a pool round trip costs ~10 ms)
    hits = sampler.run(tasks, evaluators, pooled=most >= sampler.chunk_size)
    seconds = (time.perf_counter() - started) / n
    rows: dict = {}
    for t, h in zip(tasks, hits):
        rows.setdefault((t.pair, t.side), []).append(h)
    rates = {}
    for p, idx in by_pair.items():
        side_hits = [np.concatenate(rows[p, s]) for s in (0, 1)]
        for col, i in enumerate(idx):
            a = side_hits[events[i].direction][:, col]
            b = side_hits[1 - events[i].direction][:, col]
            k_p, k_q = int(a.sum()), int(b.sum())
            p_minus, q = k_p / n - delta, k_q / n
            variance = (float(np.var(a / p_minus - b / q)) if p_minus > 0 and q > 0
                        else math.inf)
            rates[i] = (k_p, k_q, n, int(np.count_nonzero(a != b)), variance)
    return seconds, rates


def _choose_coupling(events: list[Candidate], rates: dict, n: int, chunk_size: int,
                     delta: float, level: float) -> tuple[list[Candidate], frozenset, int]:
    """How each pair's events are certified, decided on the pilot only (`_pilot`): a pair
    draws its certifying sample on common random numbers when its best event is expected to
    certify more by the coupled t-test (stats.coupled_epsilon_bound, at 2·level) than any of
    its events by independent samples (the conditional ratio test or two Clopper–Pearson
    bounds, as `expected_bound_and_method` plans them, from the same pilot counts). Only events
    with at least MIN_COUPLED_HITS_PER_BLOCK hits under each input and disagreeing runs per
    block may be certified coupled. On a coupled pair each event takes the coupled t-test where
    the pilot expects it to beat two Clopper–Pearson bounds, and those two bounds otherwise
    (they hold however the inputs' runs depend on each other; the ratio test needs independent
    Poisson counts). Returns the events with their certificates set, the coupled pairs and the
    block size."""
    events = [replace(c, coupled=False) if c.coupled else c for c in events]  # none carried over
    block = coupled_block_size(n, chunk_size)
    if block < 1 or not rates:
        return events, frozenset(), block
    n_blocks = -(-n // block)
    two_bounds, independent, coupled = {}, {}, {}
    for i, c in rates.items():
        k_p, k_q, m, disagree, variance = c
        two_bounds[i] = float(expected_certified_epsilon(k_p, m, k_q, m, n, delta, level,
                                                         shrink_z=0.0))
        independent[i] = float(expected_bound_and_method(k_p, m, k_q, m, n, delta, level,
                                                         shrink_z=0.0)[0])
        per_block = min(k_p, k_q, disagree) * block / m
        coupled[i] = (float(expected_coupled_epsilon(k_p / m, k_q / m, variance,
                                                     n_blocks * block, n_blocks, delta,
                                                     2 * level))
                      if per_block >= MIN_COUPLED_HITS_PER_BLOCK else -math.inf)
    pairs = {c.pair for c in events}
    chosen = set()
    for p in pairs:
        mine = [i for i, c in enumerate(events) if c.pair == p and i in rates]
        if mine and max(coupled[i] for i in mine) > max(independent[i] for i in mine):
            chosen.add(p)
    out = []
    for i, c in enumerate(events):
        if c.pair not in chosen:
            out.append(c)
            continue
        out.append(replace(c, ratio_test=False,
                           coupled=i in rates and coupled[i] > two_bounds[i]))
    return out, frozenset(chosen), block


def privacy_curves_of(grid: dict, epsilon: float, delta: float, alpha: float) -> PrivacyCurves:
    """Trade-off boxes, certified δ(ε) and p-values from the witness's grid counts.

    The witness's stage spent `fraction`·α on each of its bounds; the curves get the same share,
    split over the grid (Bonferroni), so all boxes and the whole δ(ε) curve hold jointly with
    probability ≥ 1 − 4·fraction·α per plot; the p-value is scaled by the same share.
    """
    n_p, n_q = grid["n_p"], grid["n_q"]
    k_p, k_q = np.asarray(grid["k_p"]), np.asarray(grid["k_q"])
    T = len(k_p)
    box_level = grid["fraction"] * alpha / T
    p_low, p_high = cp_lower(k_p, n_p, box_level), cp_upper(k_p, n_p, box_level)
    q_low, q_high = cp_lower(k_q, n_q, box_level), cp_upper(k_q, n_q, box_level)
    top = max(4 * epsilon, 1.0)
    eps_grid = np.linspace(0, top if math.isfinite(top) else 10.0, 41)
    kp_event, kq_event = grid["k_event"]
    pvalues = [min(1.0, epsilon_pvalue(kp_event, n_p, kq_event, n_q, e, delta,
                                       fraction=grid["fraction"],
                                       ratio_test=grid["ratio_test"])) for e in eps_grid]
    return PrivacyCurves(
        thresholds=tuple(map(float, grid["thresholds"])),
        alpha=tuple(k_q / n_q), beta=tuple(1 - k_p / n_p),
        alpha_low=tuple(q_low), alpha_high=tuple(q_high),
        beta_low=tuple(1 - p_high), beta_high=tuple(1 - p_low),
        outside=tuple(bool(x) for x in box_outside(q_high, 1 - p_low, epsilon, delta)),
        box_confidence=1 - 4 * T * box_level,
        epsilons=tuple(map(float, eps_grid)),
        delta_lower=tuple(map(float, delta_lower_curve(k_p, k_q, n_p, n_q, eps_grid,
                                                       2 * box_level))),
        pvalues=tuple(map(float, pvalues)), privacy_loss=grid["privacy_loss"])


def _resolution(claim: float, witness: Witness | None) -> float:
    """Claim + the gap between the witness's point estimate and its certified bound: a true ε of
    about this size on that event would have been certified roughly half the time."""
    if witness is None:
        return math.inf
    gap = witness.epsilon_estimate - witness.epsilon_lower_bound
    return claim + gap if math.isfinite(gap) else math.inf


def audit(mechanism, pairs=None, epsilon=None, delta=None, confidence=0.95, samples=None,
          seed=0, n_jobs=-1, backend=None, certify_per_stage=2, time_limit=None,
          progress=None, curves=False, stop_early=True,
          floating_point=None, seconds=None, zcdp=None) -> AuditResult:
    """Audit a black-box mechanism against its (ε, δ) claim on neighbouring pairs.

    Arguments left as None are taken from the `@dpverify.mechanism` decorator. `samples` is the
    mean certifying sample size per input at the last stage (each input gets a Poisson number
    of runs; default: as declared with `@dpverify.mechanism(samples=...)`, else 2^22 for
    batched mechanisms and 2^17 for scalar ones). The false-alarm rate
    on a correct mechanism is at most 1 − confidence.

    backend: "threading" (default for batched), "loky" (default for scalar), or "dask" (the
    current dask.distributed Client); the same seed gives the same result on every backend.
    time_limit: seconds for the whole audit; past it an AuditTimeoutError names the chunk.
    progress: progress on stderr (default: on a terminal a line redrawn in place once the audit
    has run two seconds; elsewhere a plain line every 30 s; neither under pytest; see
    docs/ci.md, with the environment variables DPVERIFY_PROGRESS_SECONDS and
    DPVERIFY_STALL_SECONDS and the warning printed when a chunk stalls).
    Ctrl-C stops the audit and returns what was certified so far, with `interrupted=True`.
    stop_early: stop at the first stage that certifies a violation (default; stage j spends
    α/2^{J−j+1}). False measures how broken a mechanism is: every stage runs, the earlier ones
    only choose and tune events on their fresh samples, and the last stage certifies with all
    of α (a tighter bound at the same budget; nothing is certified if it is interrupted first).
    seconds: a measurement run's time budget (needs stop_early=False): each stage runs only if
    it and a last stage 4× larger are projected to fit, else it becomes the last stage, with
    as many runs per input as the time left buys (`budget.last_stage_size`); `samples` is then
    the most it may grow to (default 2^26 batched, 2^21 scalar). About `seconds` in all; the
    sizes depend on the machine's speed, so the same seed may give another bound elsewhere.
    curves: also count the witness's score at a grid of thresholds chosen on search data and
    return `result.curves` (trade-off points with boxes, certified δ(ε), p-values against ε).
    floating_point: also attack the outputs' float bit patterns (default: as declared with
    `@dpverify.mechanism(floating_point=...)`, else False); see `dpverify.mechanism`.
    zcdp: audit a rho-zCDP claim instead (default: as declared with
    `@dpverify.mechanism(zcdp=...)`); `delta` is then the δ of the implied (ε, δ) claim that is
    audited beside it (`dpverify.zcdp.audit_zcdp`).
    """
    started = time.perf_counter()
    mech = as_mechanism(mechanism)
    floating = bool(mech.floating_point if floating_point is None else floating_point)
    if is_zcdp_claim(mech, epsilon, zcdp):
        if curves or not stop_early or seconds is not None:
            raise InvalidClaimError("curves=, stop_early= and seconds= apply to (epsilon, "
                                    f"delta) claims; {mech.name!r} is audited for zCDP")
        from .zcdp import audit_zcdp
        return audit_zcdp(mech, rho=zcdp, pairs=pairs, confidence=confidence, samples=samples,
                          seed=seed, n_jobs=n_jobs, backend=backend, time_limit=time_limit,
                          delta=delta)
    if epsilon is None and mech.epsilon is None and mech.rdp is not None:
        if curves or not stop_early:
            raise InvalidClaimError("curves= and stop_early= apply to (epsilon, delta) claims; "
                                    f"{mech.name!r} declares an RDP claim")
        return audit_rdp(mech, pairs=pairs, confidence=confidence, samples=samples, seed=seed,
                         n_jobs=n_jobs, backend=backend, time_limit=time_limit)
    eps = epsilon if epsilon is not None else mech.epsilon
    if eps is None:
        raise InvalidClaimError(f"no epsilon claimed for {mech.name!r}: pass epsilon= to audit() "
                                "or declare it with @dpverify.mechanism(epsilon=...)")
    eps, dlt = validate_claim(eps, delta if delta is not None else mech.delta)
    confidence = _validate_options(confidence, samples, seed, certify_per_stage)
    given_pairs = pairs if pairs is not None else mech.pairs
    distance = getattr(given_pairs, "distance", 1)
    if distance > 1:  # pairs k steps apart: the claim that applies is the group-privacy one
        eps, dlt = group_claim(eps, dlt, distance)
        if dlt >= 1:
            raise InvalidClaimError(f"the group-privacy claim at distance {distance} has "
                                    f"δ = {dlt:.3g} ≥ 1: nothing to audit")
    if seconds is not None:
        seconds = _validate_budget(seconds, stop_early)
    if samples is None:
        samples = default_samples(mech)
        if seconds is not None:
            samples *= BUDGET_SAMPLES_FACTOR
    sizes = plan_stages(int(samples))
    alphas = (stage_alphas if stop_early else final_stage_alphas)(1.0 - confidence, len(sizes))
    K = certify_per_stage

    if time_limit is not None and not (float(time_limit) > 0):
        raise InvalidClaimError(f"time_limit must be a positive number of seconds, got "
                                f"{time_limit!r}")
    deadline = None if time_limit is None else time.monotonic() + float(time_limit)
    search_runs = 0
    if isinstance(given_pairs, pairs_module.PairSearch):  # pairs chosen on independent samples
        from .input_search import find_pairs
        given_pairs = find_pairs(mech, given_pairs, seed, n_jobs, backend, deadline, dlt,
                                 alphas[-1] / (2 * K), sizes[-1])
        search_runs = given_pairs.runs
    pair_list = pairs_module.normalize(given_pairs)
    bar = Progress(mech.name, len(sizes), enabled=progress)
    budget = TimeBudget(seconds, started) if seconds is not None else None

    search: dict = {(p, s): [] for p in range(len(pair_list)) for s in (0, 1)}
    stages: list[StageSummary] = []
    best: Witness | None = None
    active = list(range(len(pair_list)))
    frozen = False
    tracked: list[Candidate] = []
    learned: dict = {}  # pair → its learned models, once its search sample is complete
    data: dict = {}
    kept = np.zeros(len(pair_list), dtype=np.int64)
    # common random numbers (paired search and tuning, the coupled certificate) need M(D) and
    # M(D') to draw from one seed; a mechanism with its own randomness cannot (docs/method.md)
    shared_seeds = not mech.draws_own_randomness
    paired = PAIRED_SEARCH and shared_seeds
    interrupted = False
    best_curve = best_event = None
    with Sampler(mech, pair_list, seed, n_jobs=n_jobs, backend=backend, deadline=deadline,
                 progress=bar) as sampler:
        try:
            for p in range(len(pair_list)):
                for side in (0, 1):
                    check_uses_rng(sampler, p, side)
            j = 0
            while j < len(sizes):
                j += 1
                if budget is not None and j < len(sizes):
                    search_now, search_next = (((0, 0), (0, 0)) if frozen else search_rows(
                        {p: kept[p] for p in active}, _search_cap(search, active),
                        (sizes[j - 1], sizes[j])))
                    last = budget.last_size(
                        sizes[j - 1], sizes[j], search_now, search_next,
                        _last_stage_pairs(tracked, [] if frozen else active, K,
                                          len(pair_list)), K, cap=sizes[-1])
                    if last is not None:  # this stage becomes the last one, and certifies
                        sizes = sizes[:j - 1] + [last]
                        alphas = final_stage_alphas(1.0 - confidence, len(sizes))
                        bar.n_stages = len(sizes)
                        # a last search that would take most of the time left is skipped: the
                        # events tuned on the stage before's fresh sample are certified instead
                        # on the runs that time buys (`TimeBudget.search_crowds_out_counting`)
                        if not frozen and tracked and budget.search_crowds_out_counting(
                                search_now):
                            frozen = True
                            # ...and its events are planned for what the whole time left buys
                            sizes[-1] = budget.size_without_search(
                                last, _last_stage_pairs(tracked, [], K, len(pair_list)), K)
                elif budget is not None and budget.ceiling is None:
                    # the plan's own last stage, reached with every stage before it run as
                    # planned (early in a budget a stage that fits always runs): it too gets
                    # what the time left buys, at most its plan. Without this it ran in full
                    # however long the stage before took (RNM2 at a 2^27 cap: 38 s of 27).
                    budget.ceiling = sizes[-1]
                n_j, alpha_j = sizes[j - 1], alphas[j - 1]
                bar.start_stage(j, sizes)
                # a stage that spends no α (measurement runs) certifies nothing; its events and
                # thresholds are planned for the level of the last stage, which will certify
                certifies = alpha_j > 0
                level = (alpha_j if certifies else alphas[-1]) / (2 * K)
                searched = False
                final_measurement = not stop_early and j == len(sizes)
                retrack = []  # candidates whose grids this stage counts again (measurement runs)
                if frozen and tracked:
                    # search converged at the previous stage: its tracked counts choose the
                    # thresholds for the final size, and later stages certify those events. A
                    # measurement run certifies only at its last stage, so until then each
                    # stage's fresh sample counts the tracked grids again, on every output, and
                    # re-chooses on ever larger counts (the stage before last's whole sample:
                    # n/4 per input for a budget of n).
                    carried = _distinct(sorted(_carry_over(tracked, sizes[-1], dlt, level,
                                                           sampler.chunk_size),
                                               key=lambda c: -c.expected_epsilon))
                    events = [replace(c, grid=None) for c in carried[:K]]
                    if not stop_early and not final_measurement:
                        retrack = [replace(c, grid=c.tuning[0]) for c in carried[:TRACKED]]
                    tracked = []
                elif not frozen:
                    searched = True
                    # a stage that certifies nothing chooses events for the next stage's size:
                    # only a later stage certifies them, on at least that many runs (planned
                    # for its own smaller size, a rare event with a large ratio loses to frequent
                    # weaker ones before it is ever tracked)
                    planned = n_j if certifies else sizes[min(j, len(sizes) - 1)]
                    carried = _carry_over(tracked, planned, dlt, level, sampler.chunk_size)
                    search_started = time.perf_counter()
                    data = chosen = None  # free the last search sample's pruned pairs first
                    chosen = _search_stage(sampler, search, kept, active, j, n_j, sizes[-1], dlt,
                                           level, K, floating, learned, planned, paired)
                    if budget is not None:
                        budget.search.add(chosen.learned_pairs, chosen.learned_rows,
                                          time.perf_counter() - search_started)
                    pool = carried + chosen.candidates
                    if j >= PRUNE_AFTER_STAGE:
                        active = _most_promising_pairs(pool, ACTIVE_PAIRS) or active
                        for p in set(range(len(pair_list))) - set(active):
                            search[p, 0], search[p, 1] = [], []
                            learned.pop(p, None)
                    frozen = (j >= PRUNE_AFTER_STAGE and bool(chosen.events)
                              and _precise_enough(chosen.events[0]))
                    data = chosen.data
                    pool = _distinct(sorted(pool, key=lambda c: -c.expected_epsilon))
                    events = [replace(c, grid=None) for c in
                              (_hedged(carried, chosen.candidates, K) if final_measurement
                               and carried else pool[:K])]
                if final_measurement:
                    events = _concentrate(_same_events_merged(_distinct(events), data), n_j,
                                          dlt, alpha_j / 2, sampler.chunk_size)
                # the stage's α is split over the events it really certifies (union bound)
                cert_level = alpha_j / (2 * len(events)) if certifies and events else level
                if curves:
                    for c in events:
                        if c.pair in data:
                            c.grid = curve_grid(c, *data[c.pair])
                # tracked counts serve the next stage only, and only until search is frozen
                # (measurement runs: until the last stage)
                probes = retrack or ([] if not (searched and j < len(sizes)) else [
                    replace(c, grid=(c.tuning[0] if c.tuning is not None
                                     else tuning_grid(c, *data[c.pair])))
                    for c in _same_events_merged(pool, data, TRACKED)
                    if c.tuning is not None or c.pair in data])
                # a pilot drawn apart from the certifying sample times the stage and tells
                # whether common random numbers will certify its events more tightly
                times_budget = (budget is not None and final_measurement
                                and budget.ceiling is not None)
                pilot_seconds, pilot = (_pilot(sampler, events, j, n_j, dlt,
                                               sampler.chunk_size if times_budget else PILOT_RUNS,
                                               shared_seeds)
                                        if certifies and events else (None, {}))
                if budget is not None and final_measurement and events:
                    # its events known, the last stage takes the time left on their pairs, at
                    # the rate the pilot measured (only if the budget, not a test, set the stage)
                    measured = pilot_seconds if budget.ceiling is not None else None
                    # (it may shrink, to no less than the stage before's size, when the pilot
                    # shows the time left will not buy the planned runs)
                    n_j = sizes[-1] = budget.fill_last(n_j, len({c.pair for c in events}),
                                                       len(events), measured,
                                                       least=n_j // GROWTH)
                coupled_pairs, block = frozenset(), 0
                if certifies and shared_seeds:
                    events, coupled_pairs, block = _choose_coupling(
                        events, pilot, n_j, sampler.chunk_size, dlt, cert_level)
                elif paired and probes:
                    # nothing certified: the tracked grids are counted in paired blocks, on
                    # which a rare event's ratio is known far better (`retune`)
                    block = coupled_block_size(n_j, sampler.chunk_size, MIN_TUNING_BLOCK_RUNS)
                    coupled_pairs = frozenset(c.pair for c in probes) if block else frozenset()
                # a stage that certifies nothing draws only what its probes need; with no events
                # to count, the tracked grids get every output (4× the tuning data for the
                # thresholds the last stage certifies)
                stride = PROBE_STRIDE if certifies else 1
                by_pair, counts, stage_runs, blocks, grid_seconds = _certifying_counts(
                    sampler, seed, events if certifies else [], probes, j, n_j, stride=stride,
                    coupled=coupled_pairs, block=block)
                if budget is not None:
                    budget.counting = CountingCost(
                        n_j, len(by_pair),
                        sum(len(ev) + len(pr) / stride for ev, pr in by_pair.values()),
                        *sampler.last_seconds, grid=grid_seconds)
                stage_best = -math.inf
                tracked = []
                for p, (ev, pr) in by_pair.items():
                    cs = ev + pr
                    for i, cand in enumerate(cs):
                        k_p = counts[p, cand.direction][i]
                        k_q = counts[p, 1 - cand.direction][i]
                        n_p = stage_runs[p, cand.direction]
                        n_q = stage_runs[p, 1 - cand.direction]
                        if i >= len(ev):  # a tracked candidate: keep its grid counts
                            g_p, g_q = _grid_slice(cs, i, counts[p, cand.direction],
                                                   counts[p, 1 - cand.direction])
                            # outputs the grids saw under each input (the counts' last entry)
                            m_p = int(counts[p, cand.direction][-1])
                            m_q = int(counts[p, 1 - cand.direction][-1])
                            variance = None
                            if (p, cand.direction) in blocks:  # paired blocks
                                b_p, b_q = _grid_slice(cs, i, blocks[p, cand.direction].T,
                                                       blocks[p, 1 - cand.direction].T)
                                variance = paired_variance_from_blocks(b_p.T, b_q.T)
                            tracked.append(replace(cand, grid=None, tuning=Tuning(
                                cand.grid, g_p, g_q, m_p, m_q, variance)))
                            continue
                        if not certifies:
                            continue
                        w = _witness(pair_list, cand, k_p, n_p, k_q, n_q, dlt, cert_level, j,
                                     (blocks[p, cand.direction][:, i],
                                      blocks[p, 1 - cand.direction][:, i], block)
                                     if cand.coupled else None)
                        stage_best = max(stage_best, w.epsilon_lower_bound)
                        if best is None or w.epsilon_lower_bound > best.epsilon_lower_bound:
                            best, best_event = w, cand
                            best_curve = _grid_counts(cs, i, counts[p, cand.direction],
                                                      counts[p, 1 - cand.direction], n_p, n_q,
                                                      cert_level / (1.0 - confidence))
                stages.append(StageSummary(j, n_j, alpha_j, len(events) if certifies else 0,
                                           stage_best))
                if stop_early and best is not None and best.epsilon_lower_bound > eps:
                    break
        except KeyboardInterrupt:
            interrupted = True  # keep what was certified so far
        finally:
            bar.close()
        runs = sampler.runs

    lower = best.epsilon_lower_bound if best is not None else -math.inf
    if best is not None and not interrupted:
        best = with_examples(mech, best, best_event, seed, int(runs.max()))
    privacy_curves = (privacy_curves_of(best_curve, eps, dlt, 1.0 - confidence)
                      if curves and best_curve is not None else None)
    verdict = "violation" if lower > eps else "pass"
    return AuditResult(
        mechanism=mech.name, verdict=verdict, claimed_epsilon=eps, claimed_delta=dlt,
        epsilon_lower_bound=lower, confidence=confidence, witness=best,
        resolution=_resolution(eps, best), samples=int(runs.sum()) + search_runs,
        samples_per_side=int(runs.max()), seconds=time.perf_counter() - started, seed=int(seed),
        stages=tuple(stages), interrupted=interrupted, curves=privacy_curves,
        randomness=mech.randomness)


RDP_SEARCH_SAMPLES = 1 << 17


def audit_rdp(mechanism, rdp=None, pairs=None, confidence=0.95, samples=None, seed=0,
              n_jobs=-1, backend=None, implied_delta=1e-5, time_limit=None) -> RenyiAuditResult:
    """Audit an (α, ρ)-RDP claim: one event per pair and direction is chosen on a search sample
    (learned scores, as for ε), the best is counted on a fresh sample, and its two-cell Rényi
    divergence is bounded below over the Clopper–Pearson box (renyi.renyi_lower_bound). The
    four interval bounds each get (1 − confidence)/4, so the false-alarm rate is ≤ 1 − confidence.
    """
    started = time.perf_counter()
    mech = as_mechanism(mechanism)
    alpha_r, rho = validate_rdp(rdp if rdp is not None else mech.rdp)
    confidence = _validate_options(confidence, samples, seed, 1)
    pair_list = pairs_module.normalize(pairs if pairs is not None else mech.pairs)
    n = int(samples or mech.samples
            or (DEFAULT_SAMPLES_BATCHED // 4 if mech.batched else DEFAULT_SAMPLES_SCALAR))
    level = (1.0 - confidence) / 4
    m = min(RDP_SEARCH_SAMPLES, n)
    deadline = None if time_limit is None else time.monotonic() + float(time_limit)
    with Sampler(mech, pair_list, seed, n_jobs=n_jobs, backend=backend,
                 deadline=deadline) as sampler:
        search = checked_search_samples(sampler, m)
        best = None  # (planned bound, candidate)
        for p in range(len(pair_list)):
            for cand, planned in _rdp_candidates(p, search[p, 0], search[p, 1], alpha_r, n,
                                                 level):
                if best is None or planned > best[0]:
                    best = (planned, cand)
        witness, lower = None, 0.0
        if best is not None:
            cand = best[1]
            evaluators = {cand.pair: PairEvaluator([cand])}
            tasks = [t for s in (0, 1) for t in split_into_chunks(
                n, sampler.chunk_size, pair=cand.pair, side=s, stage=2, purpose=CERTIFY)]
            counts = np.zeros(2, dtype=np.int64)
            for task, c in zip(tasks, sampler.run(tasks, evaluators)):
                counts[task.side] += c[0]
            k_p, k_q = counts[cand.direction], counts[1 - cand.direction]
            lower = renyi_lower_bound(float(cp_lower(k_p, n, level)), float(cp_upper(k_p, n, level)),
                                      float(cp_lower(k_q, n, level)), float(cp_upper(k_q, n, level)),
                                      alpha_r)
            # fixed sample sizes here: the witness's ε shown with the two-bound certificate
            witness = _witness(pair_list, replace(cand, ratio_test=False), k_p, n, k_q, n, 0.0,
                               level, 2)
        runs = sampler.runs
    return RenyiAuditResult(
        mechanism=mech.name, verdict="violation" if lower > rho else "pass", alpha=alpha_r,
        claimed_rho=rho, rho_lower_bound=float(lower), confidence=confidence,
        implied_epsilon=balle_epsilon(alpha_r, rho, implied_delta), implied_delta=implied_delta,
        witness=witness, samples=int(runs.sum()), seconds=time.perf_counter() - started,
        seed=int(seed))


def _rdp_candidates(pair, a, b, alpha_r, n, level):
    """For each learned score and direction, the threshold whose two-cell D_α is largest at the
    box corner nearest the diagonal (Wilson, 2 standard errors): a cheap planning proxy."""
    learn_a, sel_a = a.take(slice(0, None, 2)), a.take(slice(1, None, 2))
    learn_b, sel_b = b.take(slice(0, None, 2)), b.take(slice(1, None, 2))
    for model in learn_models(learn_a, learn_b):
        for sign in (1, -1):
            probe = Candidate(pair, 0, model, sign, 0.0, 0.0, (0, 1, 0, 1))
            va, vb = np.sort(probe.signed_scores(sel_a)), np.sort(probe.signed_scores(sel_b))
            thresholds = np.unique(np.concatenate([va[np.isfinite(va)], vb[np.isfinite(vb)]]))
            if thresholds.size == 0:
                continue
            if thresholds.size > 4096:
                thresholds = np.quantile(thresholds, np.linspace(0, 1, 4096))
            ka, kb = count_at_least(va, thresholds), count_at_least(vb, thresholds)
            for direction, (kp, mp, kq, mq) in enumerate([(ka, len(va), kb, len(vb)),
                                                            (kb, len(vb), ka, len(va))]):
                p_lo, p_hi = wilson_bounds(kp, mp, 2.0)
                q_lo, q_hi = wilson_bounds(kq, mq, 2.0)
                p_near = np.where(kp / mp >= kq / mq, p_lo, p_hi)
                q_near = np.where(kp / mp >= kq / mq, q_hi, q_lo)
                planned = np.where((p_lo <= q_hi) & (q_lo <= p_hi), 0.0,
                                   renyi_bernoulli(p_near, q_near, alpha_r))
                planned = np.where(np.isfinite(planned), planned, 0.0)
                i = int(np.argmax(planned))
                yield (Candidate(pair, direction, model, sign, float(thresholds[i]), 0.0,
                                 (int(kp[i]), mp, int(kq[i]), mq)), float(planned[i]))
