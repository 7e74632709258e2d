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
TIES_LEVEL = 1e-12       # the ties check's false-rejection rate
# The checks on the illustrative sample (illustration.collect_examples), drawn as CALLS calls:
CALLS = 64               # calls per input
CALLS_LEVEL = 1e-9       # the false-rejection rate of each chi-square check, per audit
LEAST_EXPECTED = 5       # the fewest runs a cell of a chi-square table is expected to hold
LAGS = 64                # lags 1..LAGS (at most half a call) checked for equal outputs
LAGS_LEVEL = 1e-9        # that check's false-rejection rate per input, all lags together


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
    `check_batch_contract`. The same one-run outputs serve `check_batch_ties`. The contract is
    the mechanism's, not an input's: it is checked on the first input of the first pair only,
    which keeps its cost at SPREAD_SINGLES calls."""
    if not sampler.mech.batched or (pair, side) != (0, 0):
        return
    tasks = [ChunkTask(pair=pair, side=side, stage=2, purpose=PREFLIGHT, index=i, start=0,
                       size=1) for i in range(SPREAD_SINGLES)]
    single_runs = sampler.probe(tasks)
    check_batch_ties(sampler, pair, side, batch, Encoded.concat(single_runs))
    try:
        ours, singles = batch.X, np.vstack([enc.X for enc in single_runs])
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


def ties_pvalue(batch_groups: np.ndarray, sizes: np.ndarray) -> float:
    """P[T ≥ t] for T = Σ_v C(b_v, 2), the tied pairs inside a batch, when the batch is a
    uniformly random subset of the pooled outputs (what exchangeable, i.e. independent,
    outputs give): `sizes[v]` is how many pooled outputs equal value v, `batch_groups[v]` how
    many of them are in the batch. Exact: the ways to draw c_v of each value, Π C(k_v, c_v), are
    summed over every way of drawing the batch, value by value (docs/method.md, "Independent
    runs")."""
    batch, observed = int(batch_groups.sum()), int(sum(b * (b - 1) // 2 for b in batch_groups))
    most = batch * (batch - 1) // 2
    ways = np.zeros((batch + 1, most + 1))  # ways[j, t]: j drawn so far, t tied pairs among them
    ways[0, 0] = 1.0
    for k in sizes:
        step = np.zeros_like(ways)
        for c in range(min(int(k), batch) + 1):
            pairs = c * (c - 1) // 2
            step[c:, pairs:] += comb(int(k), c) * ways[:batch + 1 - c, :most + 1 - pairs]
        ways = step
    return float(ways[batch, observed:].sum() / comb(int(sizes.sum()), batch))


def check_batch_ties(sampler: Sampler, pair: int, side: int, batch: Encoded,
                     singles: Encoded) -> None:
    """A batch with more equal outputs than one-run calls show reuses draws (np.repeat,
    np.tile of a continuous output). Under the contract the batch and the one-run outputs are
    exchangeable, so the batch's tied pairs are those of a random subset of the pooled outputs;
    `ties_pvalue` below TIES_LEVEL is a ContractError. Discrete outputs tie by nature; the test
    holds its level for them too, and catches repeats only when they tie far more often than
    the output's law makes values tie."""
    keys = np.concatenate([batch.keys, singles.keys])
    _, value = np.unique(keys, axis=0, return_inverse=True)
    value = value.ravel()
    sizes = np.bincount(value)
    in_batch = np.bincount(value[:len(batch.keys)], minlength=len(sizes))
    if np.all(in_batch <= 1) or ties_pvalue(in_batch, sizes) >= TIES_LEVEL:
        return
    tied = int(sum(b * (b - 1) // 2 for b in in_batch))
    raise ContractError(
        f"mechanism {sampler.mech.name!r} returned a batch of {len(batch.keys)} outputs on input "
        f"{describe_input(sampler.inputs[pair][side])} with {tied} pairs of equal outputs, far "
        f"more than {len(singles.keys)} outputs drawn one per call show: it reuses draws inside "
        "a batch (np.repeat, np.tile, a cache). The batched form f(data, rng, size) must "
        "return `size` independent outputs, each from draws of its own")


def _value_ids(encs: list) -> np.ndarray:
    """calls × runs: each run's output as an integer, equal for equal outputs (encoded keys).
    `encs`: one Encoded per call, all of one size."""
    _, value = np.unique(np.concatenate([e.keys for e in encs]), axis=0, return_inverse=True)
    return value.reshape(len(encs), -1)


def _call_labels(values: np.ndarray, encs: list) -> list:
    """What `check_calls_alike` tabulates, one label per run for each view: the exact output,
    values too rare to be expected LEAST_EXPECTED times per call pooled into one label (so a
    continuous output, all of it rare, adds no table), and each numeric coordinate's quartile
    of the pooled runs."""
    flat = values.ravel()
    rare = np.bincount(flat) < LEAST_EXPECTED * len(values)
    views = [np.where(rare[flat], -1, flat)]
    try:
        X = np.vstack([e.X for e in encs])
    except (AttributeError, TypeError, ValueError):  # no numeric matrix, or one of varying width
        return views
    for column in X.T if X.ndim == 2 else ():
        finite = np.isfinite(column)
        if finite.sum() < len(column) // 2:
            continue
        edges = np.unique(np.quantile(column[finite], [0.25, 0.5, 0.75]))
        views.append(np.where(finite, np.searchsorted(edges, column, side="right"), -1))
    return views


def homogeneity_pvalue(table: np.ndarray) -> float:
    """Pearson's chi-square test that every row (a call) of a calls × categories table of counts
    draws from one law: categories expected to hold fewer than LEAST_EXPECTED runs per call are
    pooled into one, and a table left with one category says nothing (p = 1). Large expected
    counts keep the chi-square approximation close in the tail."""
    from scipy.stats import chi2  # here, not at import: scipy.stats costs every worker ~0.8 s
    total = table.sum(axis=0)
    rare = total < LEAST_EXPECTED * len(table)
    if rare.any():
        table = np.column_stack([table[:, ~rare], table[:, rare].sum(axis=1)])
        total = table.sum(axis=0)
        if total[-1] < LEAST_EXPECTED * len(table) and table.shape[1] > 1:
            table = np.column_stack([table[:, :-2], table[:, -2] + table[:, -1]])
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 1.0
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    statistic = float(((table - expected) ** 2 / expected).sum())
    return float(chi2.sf(statistic, (table.shape[0] - 1) * (table.shape[1] - 1)))


def lag_pairs(runs: int, lag: int) -> tuple:
    """Disjoint pairs (i, i + lag) of positions 0..runs−1: i in [0, lag), [2·lag, 3·lag), ...
    Each position is in at most one pair, so for independent runs the pairs are independent
    and each holds equal outputs with probability Σ_v p(v)², exactly."""
    first = np.arange(runs - lag)
    first = first[(first // lag) % 2 == 0]
    return first, first + lag


def lagged_ties_pvalue(values: np.ndarray, reference_equal: int, reference_pairs: int,
                       lags: int = LAGS) -> tuple:
    """The smallest Bonferroni-corrected p-value, and its lag, of one-sided Fisher tests that
    runs `lag` apart inside a call (rows of `values`, one call each) are equal more often than
    runs of different calls (`reference_equal` of `reference_pairs` disjoint pairs). Both
    counts are binomial with the same Σ_v p(v)² when runs are independent, and they come
    from disjoint runs, so each conditional test is exact (hypergeometric)."""
    from scipy.stats import hypergeom  # here, not at import (see homogeneity_pvalue)
    equal, pairs = np.zeros(lags, np.int64), np.zeros(lags, np.int64)
    for lag in range(1, lags + 1):
        i, j = lag_pairs(values.shape[1], lag)
        equal[lag - 1] = (values[:, i] == values[:, j]).sum()
        pairs[lag - 1] = values.shape[0] * len(i)
    p = hypergeom.sf(equal - 1, pairs + reference_pairs, equal + reference_equal, pairs)
    worst = int(np.argmin(p))
    return min(1.0, float(p[worst]) * lags), worst + 1


def check_lagged_ties(mech, data, values: np.ndarray) -> None:
    """Runs `lag` apart in a call that are equal more often than runs of different calls reuse
    draws: np.repeat (lag 1), np.tile (lag size/copies), for discrete outputs too, where ties
    are expected and `check_batch_ties` has little power. `values`: calls × runs
    (`_value_ids`). The first half of the calls gives the lags (`lagged_ties_pvalue`), the
    second half the reference: run i of call c against run i of call c + half/2."""
    calls, runs = values.shape
    if calls < 4 or runs < 2:
        return
    ours, theirs = values[:calls // 2], values[calls // 2:]
    quarter = len(theirs) // 2
    reference = theirs[:quarter] == theirs[quarter:2 * quarter]
    p, lag = lagged_ties_pvalue(ours, int(reference.sum()), reference.size,
                                lags=min(LAGS, runs // 2))
    if p < LAGS_LEVEL / 2:
        raise ContractError(
            f"mechanism {mech.name!r} returned calls on input {describe_input(data)} whose "
            f"outputs {lag} apart are equal far more often than outputs of different calls "
            f"(p = {p:.1e}): it reuses draws inside a batch (outputs repeat in runs of {lag}, "
            "or the batch is copies of a shorter one: np.repeat, np.tile). The batched form "
            "f(data, rng, size) must return `size` independent outputs, each from draws of "
            "its own")


def check_calls_alike(mech, data, values: np.ndarray, encs: list) -> None:
    """Runs of different calls must follow one law: for each view of `_call_labels` a calls ×
    categories table (`values`: calls × runs, `_value_ids` of `encs`, one Encoded per call);
    `homogeneity_pvalue` below CALLS_LEVEL/2 over the views is a ContractError. It catches
    what a batch shares: noise drawn once per call, a random choice made once per call (a
    subsampling coin), a seed per call."""
    if len(encs) < 2:
        return
    views = _call_labels(values, encs)
    call = np.repeat(np.arange(len(encs)), values.shape[1])
    for v, labels in enumerate(views):
        _, category = np.unique(labels, return_inverse=True)
        table = np.zeros((len(encs), category.max() + 1))
        np.add.at(table, (call, category.ravel()), 1)
        p = homogeneity_pvalue(table)
        if p < CALLS_LEVEL / 2 / len(views):
            what = "the outputs" if v == 0 else f"coordinate {v - 1}'s quartiles"
            raise ContractError(
                f"mechanism {mech.name!r} gave {len(encs)} calls of {len(encs[0].keys)} runs on "
                f"input {describe_input(data)} whose outputs differ between calls far more "
                f"than independent runs allow ({what}: chi-square p = {p:.1e}): something is "
                "drawn once per call and shared by its outputs (a noise term, a subsampling "
                "coin, a seed). The batched form f(data, rng, size) must return `size` "
                "independent runs")


def check_runs_independent(mech, inputs: tuple, event: str, encoded: list,
                           per_call: list) -> None:
    """The checks on the illustrative sample's calls (`illustration.collect_examples`), for a
    batched mechanism: on each input, equal outputs at a lag (`check_lagged_ties`) and calls
    alike (`check_calls_alike`); then the witness's event alike across calls
    (`check_event_alike_across_calls`). Each is a ContractError (docs/method.md,
    "Independent runs")."""
    if not mech.batched:
        return
    for data, encs in zip(inputs, encoded):
        values = _value_ids(encs)
        check_lagged_ties(mech, data, values)
        check_calls_alike(mech, data, values, encs)
    check_event_alike_across_calls(mech, inputs, event, per_call)


def check_event_alike_across_calls(mech, inputs: tuple, event: str, per_call: list) -> None:
    """The witness's event, counted on fresh runs drawn as several calls per input
    (`illustration.collect_examples`: `per_call[side]` holds each call's hits and runs), must hit
    at one rate in every call: `homogeneity_pvalue` below CALLS_LEVEL/4 on either input is a
    ContractError. The event was fixed before these runs were drawn, so under the contract the
    test holds its level (CALLS_LEVEL/4 per input); a batch whose runs share a random choice
    made once per call (a subsampling coin, a noise term) moves the event's rate from call to
    call, and the certificate that found the event counted copies of that choice, not
    independent runs."""
    if not mech.batched:
        return
    for data, calls in zip(inputs, per_call):
        if len(calls) < 2:
            continue
        table = np.column_stack([calls[:, 0], calls[:, 1] - calls[:, 0]]).astype(float)
        p = homogeneity_pvalue(table)
        if p < CALLS_LEVEL / 4:
            rates = calls[:, 0] / calls[:, 1]
            raise ContractError(
                f"mechanism {mech.name!r}: the witness's event ({event}) held "
                f"{rates.min():.3g} to {rates.max():.3g} of the runs of {len(calls)} calls on "
                f"input {describe_input(data)}, far more spread than independent runs allow "
                f"(chi-square p = {p:.1e}): something is drawn once per call and shared by its "
                "outputs (a subsampling coin, a noise term, a seed), so the runs the audit "
                "counted were not independent and its finding cannot stand. The batched form "
                "f(data, rng, size) must return `size` independent runs")


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
    Rényi and zCDP claims choose their event on (rdp.audit_rdp, zcdp.audit_zcdp)."""
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
