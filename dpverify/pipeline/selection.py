"""Which candidate events a stage certifies and tracks. Everything here is decided on search data
or on counts of earlier stages' samples, never on the counts that certify, so any choice is sound
(docs/method.md, "Choosing the events")."""
from __future__ import annotations

import math
from collections import Counter
from itertools import zip_longest

import numpy as np

from ..attacks import Candidate, retune, tuning_index, tuning_log_ratio
from ..attacks.planning import ONE_SIDED_MIN_SEARCH_HITS


def by_promise(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates, the highest expected bound first; events of the whole output space
    (`Candidate.whole_space`, which test nothing) after every other."""
    return sorted(candidates, key=lambda c: (c.whole_space, -c.expected_epsilon))


def distinct(candidates: list[Candidate]) -> list[Candidate]:
    """Drop candidates that are one event with a better one before them: the same search-sample
    counts of the same pair and direction (several models often find one event), the same model
    object, sign and threshold (a carried-over candidate and a fresh search of the same complete
    search sample), or, for re-tuned candidates, the same hits under both inputs on their common
    tuning sample (several models of a discrete output often retune onto one output, and
    tracked several times it takes the places of other pairs' events). A carried-over candidate
    keeps the search counts of the event it started from, so carried and freshly searched
    candidates are otherwise never merged."""
    out, seen = [], set()
    for c in candidates:
        keys = [(c.pair, c.direction, c.search_counts, c.tuning is None),
                (c.pair, c.direction, id(c.model), c.sign, c.threshold)]
        if c.tuning is not None:
            t, i = c.tuning, tuning_index(c)
            keys.append((c.pair, c.direction, int(t.k_p[i]), t.m_p, int(t.k_q[i]), t.m_q))
        if not any(k in seen for k in keys):
            seen.update(keys)
            out.append(c)
    return out


def carry_over(tracked: list[Candidate], n: int, delta: float, level: float,
               chunk_size: int = 0) -> list[Candidate]:
    """Candidates tracked on the stages before this one, with thresholds re-chosen on their
    counts (pooled over those stages, `attacks.pooled_tuning`) for this stage's size n. Those
    samples are independent of this stage's certifying sample, so they can choose this stage's
    events; being fresh, they are free of the selection bias of the data the model was fitted
    on. Where they were drawn in paired blocks, thresholds are planned on paired standard
    errors (`retune`; `chunk_size` sets the coupled certificate's blocks)."""
    return [retune(c, c.tuning, n, delta, level, chunk_size) for c in tracked]


def hedged(tuned: list[Candidate], searched: list[Candidate], K: int) -> list[Candidate]:
    """The K events of a measurement run's one certifying stage while search is still running:
    the best re-tuned and the best freshly searched candidates in turn. Neither ranking can be
    trusted over the other: a fresh search's best tail threshold among thousands is often luck
    (the winner's curse), while the tracked grids, counted on the previous stage's sample, can
    be too thin to see a rare event that the search sample did. Certifying both and reporting
    the larger costs a Bonferroni share, not a gamble."""
    turns = [c for both in zip_longest(distinct(by_promise(tuned)),
                                       distinct(by_promise(searched))) for c in both if c]
    return distinct(turns)[:K]


DUPLICATE_BET_Z = 2.0  # tuning log-ratios this many standard errors apart are two bets


def duplicate_bet(c: Candidate, kept: Candidate, data: dict) -> bool:
    """Whether `c` is `kept`'s event on another pair with a ratio the tuning counts cannot tell
    apart: the two select the same search outputs of both pairs, under both inputs, and their
    tuning log-ratios differ by less than DUPLICATE_BET_Z standard errors (the two errors
    added). Symmetric pairs often offer one event at one ratio several times (SVT's ⊥ᵏ⊤ on
    pairs that differ in the same number of answers); certifying it twice is one bet twice."""
    if c.pair == kept.pair or c.tuning is None or kept.tuning is None:
        return False
    if not (c.pair in data and kept.pair in data):
        return False
    spread = DUPLICATE_BET_Z * math.hypot(tuning_standard_error(c), tuning_standard_error(kept))
    if not math.isfinite(spread):
        return False  # a ratio the tuning counts do not estimate
    gap = (tuning_log_ratio(c.tuning, tuning_index(c))[0]
           - tuning_log_ratio(kept.tuning, tuning_index(kept))[0])
    if not abs(gap) < spread:
        return False
    outputs = [enc for p in (c.pair, kept.pair) for enc in data[p]]
    if len({enc.X.shape[1:] for enc in outputs}) > 1:
        return False  # variable-length outputs padded to other widths: not compared
    return all(np.array_equal(c.hits(enc), kept.hits(enc)) for enc in outputs)


def distinct_bets(events: list[Candidate], data: dict, most: int) -> list[Candidate]:
    """The first `most` events (best first) that are not `duplicate_bet`s of a kept one: a
    last stage's K slots hedge across events, not across pairs offering the same event at the
    same ratio. Judged on search data and tuning counts only, never on certifying counts."""
    out = []
    for c in events:
        if len(out) == most:
            break
        if not any(duplicate_bet(c, k, data) for k in out):
            out.append(c)
    return out


def spread_over_pairs(candidates: list[Candidate], per_pair: int) -> list[Candidate]:
    """The candidates in their order, except that once a (pair, direction) holds `per_pair`
    places, its further candidates follow all the others (in their order); 0 keeps the order.
    Tracked places are hedges for the stages to come: a pair's second and third models hedge
    less than another pair's best event, which a later stage's pooled tuning counts may show
    to lead (docs/method.md, "Choosing the events")."""
    if per_pair == 0:
        return list(candidates)
    first, rest, held = [], [], Counter()
    for c in candidates:
        held[c.pair, c.direction] += 1
        (first if held[c.pair, c.direction] <= per_pair else rest).append(c)
    return first + rest


ONE_SIDED_LEVEL = 0.1  # a hedge on a pair not tracked yet: its split's chance under the claim


def hits_beyond_claim(epsilon: float, level: float) -> int:
    """The fewest hits k under P, with none under Q, whose split has chance at most `level`
    under a ratio of e^ε: (e^ε/(1 + e^ε))^k ≤ level (the conditional binomial split,
    docs/theory.md §2.3)."""
    return math.ceil(math.log(level) / -math.log1p(math.exp(-epsilon)) - 1e-9)


def least_hedge_hits(epsilon: float, delta: float, runs: int, searched_pairs: int,
                     probed: bool) -> int:
    """The fewest selection hits (of `runs`, none under Q) a one-sided hedge needs: at least
    ONE_SIDED_MIN_SEARCH_HITS and more than δ·runs (δ allows an event seen under one input only
    at a rate up to δ); on a pair no probe draws, also `hits_beyond_claim` at ONE_SIDED_LEVEL
    shared over the searched pairs."""
    least = max(ONE_SIDED_MIN_SEARCH_HITS, math.floor(delta * runs) + 1)
    if probed:
        return least
    return max(least, hits_beyond_claim(epsilon, ONE_SIDED_LEVEL / max(searched_pairs, 1)))


def one_sided_hedges(one_sided: list[Candidate], probes: list[Candidate], data: dict,
                     most: int, epsilon: float, delta: float) -> list[Candidate]:
    """Up to `most` of the `one_sided` candidates (in their order: most hits under P first),
    tracked beside the probes: events the search saw under one input only. A leak hidden in a
    rare event (docs/method.md, "Rare leaks") is seen a dozen times on the search sample, where
    its expected bound ranks below any frequent event; tracked, the next stage's larger counts
    rank it (`attacks.planning.retune`, which lets a hedge's threshold stay one-sided). So a
    hedge is tracked even where a probe counts the same score family: the probe's threshold is
    re-chosen among thresholds with hits under both inputs to spare. Hedges selecting the same
    search outputs are tracked once. One on a pair the probes already draw costs only its grid
    and is taken as it comes (beyond δ); one on another pair costs that pair's whole tuning
    sample, so its split must also be unlikely under the claim (`least_hedge_hits`: the
    extreme tail of a continuous score is one-sided by chance on some pair of many)."""
    probed = {c.pair for c in probes}
    rare = [c for c in one_sided if c.search_counts[0] >= least_hedge_hits(
        epsilon, delta, c.search_counts[1], len(data), c.pair in probed)]
    if most <= 0 or not rare:
        return []
    return same_events_merged(rare, data, most)


def _same_hits(c: Candidate, h, out: list, hits: list) -> bool:
    return any(o.pair == c.pair and o.direction == c.direction and oh is not None
               and all(np.array_equal(x, y) for x, y in zip(oh, h))
               for o, oh in zip(out, hits))


def same_events_merged(events: list[Candidate], data: dict, most: int | None = None,
                       families: bool = False) -> list[Candidate]:
    """Drop an event that selects exactly the same search outputs, under both inputs, as a
    better one of the same pair and direction: two models (or a model learned at two stages)
    often define one event, and certifying it twice only halves each bound's share of α;
    tracking it twice takes another event's place. Judged on search data (`data`: pair →
    search outputs of D and D'). `most`: stop once that many are kept. `families` (for tracked
    candidates, whose whole threshold grid is counted): also drop a candidate whose score orders
    the search outputs as a kept one's does (`same_family`), whatever its threshold."""
    out, hits, orders = [], [], []
    for c in events:
        if most is not None and len(out) == most:
            break
        h = o = None
        if c.pair in data:
            h = tuple(c.hits(enc) for enc in data[c.pair])
            if _same_hits(c, h, out, hits):
                continue
            if families:
                o = score_order(c, *data[c.pair])
                if any(same_family(c, o, k, ko) for k, ko in zip(out, orders)):
                    continue
        out.append(c)
        hits.append(h)
        orders.append(o)
    return out


FAMILY_SAMPLE = 1 << 12  # search outputs per input on which two scores' orders are compared


def score_order(cand: Candidate, a, b) -> np.ndarray:
    """The dense ranks of the candidate's signed scores on (at most) FAMILY_SAMPLE search
    outputs of each input: two candidates with equal ranks define the same nested family of
    events {sign·s ≥ t}, one threshold grid counting both."""
    v = np.concatenate([cand.signed_scores(enc.take(slice(0, FAMILY_SAMPLE))) for enc in (a, b)])
    return np.unique(v, return_inverse=True)[1]


def same_family(c: Candidate, order, kept: Candidate, kept_order) -> bool:
    """Whether `c` and `kept` test one pair in one direction with scores in the same order."""
    return (c.pair == kept.pair and c.direction == kept.direction and order is not None
            and kept_order is not None and np.array_equal(order, kept_order))


def tuning_standard_error(cand: Candidate) -> float:
    """The standard error of the log-ratio estimate at the candidate's threshold on its tuning
    counts (`attacks.tuning_log_ratio`; inf where one count is 0)."""
    i = tuning_index(cand)
    if not (cand.tuning.k_p[i] > 0 and cand.tuning.k_q[i] > 0):
        return math.inf
    return math.sqrt(tuning_log_ratio(cand.tuning, i)[1])


def concentrate(events: list[Candidate], n: int, delta: float, level_alone: float,
                chunk_size: int = 0, lead_z: float = 2.0) -> list[Candidate]:
    """A measurement run's certifying stage: all of α on its best re-tuned event when the others
    are clearly not worth their share. Alone, the best event's threshold is re-chosen for all of
    α (`level_alone`: the per-bound level of one event with all of α) and its expected bound
    rises by `gain`. The others are dropped only if every one is expected below it by more than
    `gain` and by more than `lead_z` standard errors of its tuning estimate: the best of a
    threshold grid is itself a winner's-curse pick, and then the hedge of `hedged` is what
    saves the bound."""
    best = events[0] if events else None
    if best is None or best.tuning is None or any(
            c.expected_epsilon > best.expected_epsilon for c in events[1:]):
        return events
    alone = retune(best, best.tuning, n, delta, level_alone, chunk_size)
    lead = max(alone.expected_epsilon - best.expected_epsilon,
               lead_z * tuning_standard_error(best))
    if len(events) > 1 and max(c.expected_epsilon for c in events[1:]) >= best.expected_epsilon - lead:
        return events
    return [alone]
