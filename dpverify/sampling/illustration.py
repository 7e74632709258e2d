"""The illustrative sample of a witness's event: fresh runs drawn once the audit has chosen its
witness, under a seed stream of their own (`sampling.ILLUSTRATE`), that show which outputs
make up the event and how often each input gives them, and whose calls are checked to be
independent runs (`sampling.check_runs_independent`). Nothing here certifies anything: the
bound comes only from the certifying counts (docs/method.md, "Evidence in the mechanism's
terms"); the words are written in `dpverify.evidence`."""
from __future__ import annotations

import math

import numpy as np

from ..evidence import format_value

# Runs per input of the illustrative sample, at most: enough to show the common outputs of an
# event at rate 10⁻³ a hundred times over for a batched mechanism, and a fraction of a second of
# a scalar one.
ILLUSTRATE_RUNS_BATCHED = 1 << 17


ILLUSTRATE_RUNS_SCALAR = 1 << 12


# ... and no more than the event needs to show about this many of its outputs on D (its shares
# to about 3%): an event the audit saw in half the runs needs a few thousand runs, not 2^17,
# which on a library call of 100 µs is the difference between a second and half a minute.
# At least ILLUSTRATE_RUNS_LEAST.
ILLUSTRATE_HITS = 1 << 10


ILLUSTRATE_RUNS_LEAST = 1 << 12


# A batched mechanism's sample is also checked for runs that are not independent
# (sampling.check_runs_independent): at least 64 calls of 64 runs, whatever the audit ran.
CHECKED_RUNS = 1 << 12


# Outputs listed per witness.
EXAMPLES_SHOWN = 5


def illustration_size(batched: bool, samples_per_side: int, event_rate: float = 0.0) -> int:
    """Runs per input of the illustrative sample: enough to expect ILLUSTRATE_HITS outputs in
    an event seen at `event_rate` on D (0 if unknown: the cap), within [ILLUSTRATE_RUNS_LEAST,
    the cap], and at most what the audit itself ran; a batched mechanism's at least
    CHECKED_RUNS."""
    cap = ILLUSTRATE_RUNS_BATCHED if batched else ILLUSTRATE_RUNS_SCALAR
    if event_rate > 0:
        cap = min(cap, max(ILLUSTRATE_RUNS_LEAST, math.ceil(ILLUSTRATE_HITS / event_rate)))
    # a batched sample is also what the independence checks read: at least CHECKED_RUNS
    least = CHECKED_RUNS if batched else 1
    return int(max(least, min(cap, samples_per_side)))


def _is_number(x) -> bool:
    return (isinstance(x, (int, float, np.integer, np.floating))
            and not isinstance(x, (bool, np.bool_)))


def _as_shape(x, fill=None) -> str:
    """An output written with every number replaced by # (what a continuous output's event is
    made of: which coordinates are present, None or a string, not the exact values), or by the
    next text of the iterator `fill` (a range of values, `_with_ranges`)."""
    if isinstance(x, (bool, np.bool_)) and fill is not None:
        next(fill)   # a ⊤/⊥ coordinate is a pattern: written as it is
        return format_value(x)
    if isinstance(x, (bool, np.bool_)) or x is None or isinstance(x, str):
        return format_value(x)
    if _is_number(x):
        return "#" if fill is None else next(fill)
    if isinstance(x, np.ma.MaskedArray):
        return "[" + " ".join("--" if m else _as_shape(v, fill)
                              for v, m in zip(x.data.tolist(), np.ma.getmaskarray(x))) + "]"
    if isinstance(x, np.ndarray):
        return "[" + " ".join(_as_shape(v, fill) for v in x.tolist()) + "]"
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_as_shape(v, fill) for v in x)
        return f"[{inner}]" if isinstance(x, list) else f"({inner})"
    return format_value(x)


def numbers_of(x) -> list[float]:
    """The numbers of an output, ⊤/⊥ as 1/0, in the order `_as_shape` writes them."""
    if _is_number(x) or isinstance(x, (bool, np.bool_)):
        return [float(x)]
    if isinstance(x, np.ma.MaskedArray):
        return [n for v, m in zip(x.data.tolist(), np.ma.getmaskarray(x)) if not m
                for n in numbers_of(v)]
    if isinstance(x, np.ndarray):
        return [n for v in x.tolist() for n in numbers_of(v)]
    if isinstance(x, (list, tuple)):
        return [n for v in x for n in numbers_of(v)]
    return []


def range_text(low: float, high: float) -> str:
    """A range of released values, to 3 significant digits: "3.21…4.08", or one value."""
    a, b = f"{low:.3g}", f"{high:.3g}"
    return a if a == b else f"{a}…{b}"


def _with_ranges(output, ranges) -> str:
    """The output's shape with each number replaced by its range (low, high) among the group's
    runs; a lone number reads "a number in 3.21…4.08"."""
    texts = [range_text(lo, hi) for lo, hi in ranges]
    shape = _as_shape(output, iter(texts))
    return f"a number in {shape}" if _is_number(output) else shape


def value_ranges(values: np.ndarray) -> list[tuple[float, float]]:
    """Per coordinate, the middle 90% of a group's released values (5th to 95th percentile),
    or all of them below 20 runs."""
    if len(values) < 20:
        return list(zip(values.min(axis=0).tolist(), values.max(axis=0).tolist()))
    low, high = np.percentile(values, [5, 95], axis=0)
    return list(zip(low.tolist(), high.tolist()))


def typical_runs(values: np.ndarray, most: int = 3) -> np.ndarray:
    """Indices of the `most` runs whose values lie closest to the group's median, each
    coordinate measured in its own spread: the group's typical outputs, not its first."""
    spread = np.ptp(values, axis=0)
    spread[spread == 0] = 1.0
    distance = np.abs((values - np.median(values, axis=0)) / spread).sum(axis=1)
    return np.argsort(distance, kind="stable")[:most]


def grouped_by_shape(keys_in_event: np.ndarray) -> bool:
    """True when the event's outputs are mostly distinct (a continuous part of the output):
    then its outputs are listed by shape (`_as_shape`) with their values as ranges, since a
    single real value has no frequency to show."""
    n = len(keys_in_event)
    return n >= 2 and len(np.unique(keys_in_event)) > max(1, n // 5)


def _tally(ids: np.ndarray) -> dict:
    values, counts = np.unique(ids, return_counts=True)
    return dict(zip(values.tolist(), counts.tolist()))


def _favoured_first(tally_fav: dict, tally_other: dict, runs_fav: int, runs_other: int) -> list:
    """The keys of the favoured side's tally, those whose own frequency also favours that side
    first, each part by its count on the favoured side: an event's outputs as evidence for the
    side it favours, never an output of the other side's first."""
    def favours(k):
        return tally_fav[k] * runs_other > tally_other.get(k, 0) * runs_fav
    return sorted(tally_fav, key=lambda k: (not favours(k), -tally_fav[k]))


# A released coordinate with at most this many distinct values among a group's runs is a
# pattern (⊤/⊥, an index, a count) and tells groups apart; one with more is a value, shown as a
# range.
PATTERN_VALUES = 8


def value_matrix(outputs, where: np.ndarray) -> np.ndarray | None:
    """The numbers of the outputs at `where`, one row per run (`numbers_of`); None when they do
    not all have the same count of numbers."""
    if (isinstance(outputs, np.ndarray) and not isinstance(outputs, np.ma.MaskedArray)
            and outputs.dtype.kind in "biuf"):   # a batched numeric output: no loop needed
        return outputs[where].reshape(len(where), -1).astype(float) if len(where) else None
    numbers = [numbers_of(outputs[int(i)]) for i in where]
    if not numbers or len({len(n) for n in numbers}) != 1:
        return None
    return np.array(numbers, dtype=float).reshape(len(numbers), -1)


def pattern_columns(values: np.ndarray) -> np.ndarray:
    """Which coordinates take at most PATTERN_VALUES distinct values among these runs."""
    return np.array([len(np.unique(col)) <= PATTERN_VALUES for col in values.T], dtype=bool)


def _group_keys(struct_ids, outputs, hits, columns=None) -> tuple[dict, dict]:
    """The runs in the event grouped by output shape and by the values of their pattern
    coordinates: {(shape, pattern values): run indices}, and each shape's pattern columns
    (learned on this side's runs unless `columns` gives them)."""
    groups, learned = {}, {}
    for shape in np.unique(struct_ids[hits]).tolist():
        where = np.flatnonzero(hits & (struct_ids == shape))
        values = value_matrix(outputs, where) if outputs is not None else None
        cols = (columns or {}).get(shape)
        if values is None:
            groups[(shape, ())] = where
            continue
        cols = pattern_columns(values) if cols is None else cols
        learned[shape] = cols
        patterns, which = np.unique(values[:, cols], axis=0, return_inverse=True)
        order = np.argsort(which.ravel(), kind="stable")
        for pattern, runs in zip(patterns, np.split(where[order],
                                                    np.cumsum(np.bincount(which.ravel()))[:-1])):
            groups[(shape, tuple(pattern.tolist()))] = runs
    return groups, learned


def event_examples(outputs_D, enc_D, hits_D, enc_D_prime, hits_D_prime,
                   most: int = EXAMPLES_SHOWN, outputs_D_prime=None) -> tuple:
    """The event's outputs on the input it favours (D unless D′ has it more often; outputs of
    D′ are needed for that side), each with how often it occurred under D and under D'
    (`hits_*`: which runs fell in the event), the outputs that favour the same side first.
    Exact outputs are told apart by their encoded keys. When those are mostly distinct
    (`grouped_by_shape`), outputs are grouped by shape and by the values of their pattern
    coordinates (`pattern_columns`: ⊤/⊥, indices), each group shown with its other values as
    ranges (`value_ranges`) and three typical outputs (`typical_runs`)."""
    sides = [(outputs_D, enc_D, hits_D), (outputs_D_prime, enc_D_prime, hits_D_prime)]
    on_prime = outputs_D_prime is not None and hits_D_prime.mean() > hits_D.mean()
    (outputs, enc, hits), (outputs_o, enc_o, hits_o) = sides[::-1] if on_prime else sides
    if grouped_by_shape(enc.keys[hits]):
        groups, columns = _group_keys(enc.struct, outputs, hits)
        groups_o, _ = _group_keys(enc_o.struct, outputs_o, hits_o, columns)
        tally = {k: len(v) for k, v in groups.items()}
        tally_o = {k: len(v) for k, v in groups_o.items()}
    else:
        tally, tally_o = _tally(enc.keys[hits]), _tally(enc_o.keys[hits_o])
        groups = {k: np.flatnonzero(hits & (enc.keys == k)) for k in tally}
        columns = None
    examples = []
    for key in _favoured_first(tally, tally_o, len(hits), len(hits_o))[:most]:
        mine, theirs = int(tally[key]), int(tally_o.get(key, 0))
        count_D, count_D_prime = (theirs, mine) if on_prime else (mine, theirs)
        entry = {"output": format_value(outputs[int(groups[key][0])]), "count_D": count_D,
                 "count_D_prime": count_D_prime}
        if columns is not None:
            entry.update(_group_of_values(outputs, groups[key], columns.get(key[0])))
        examples.append(entry)
    return tuple(examples)


def _group_of_values(outputs, where: np.ndarray, pattern) -> dict:
    """A group's output text, its pattern coordinates exact and its other values as ranges
    among its runs, and three typical outputs; the exact output when all are pattern."""
    first = outputs[int(where[0])]
    values = value_matrix(outputs, where)
    if values is None or pattern is None:
        return {"output": _as_shape(first),
                "e.g.": [format_value(outputs[int(i)]) for i in where[:3]]}
    if pattern.all():
        return {}
    ranges = value_ranges(values)
    texts = [(v, v) if fixed else r for v, fixed, r in zip(values[0], pattern, ranges)]
    free = values[:, ~pattern]
    return {"output": _with_ranges(first, texts),
            "e.g.": [format_value(outputs[int(where[i])]) for i in typical_runs(free)]}


def collect_examples(mech, D, D_prime, in_event, seed: int, pair: int, runs: int) -> tuple:
    """Draw `runs` fresh outputs on each input (seed stream `sampling.ILLUSTRATE`, in this
    process) and return the event's most frequent outputs with their counts (`event_examples`),
    then, per input, the encoded outputs of each call and the event's hits and runs per call.
    A batched mechanism draws them as `sampling.CALLS` calls of one size (`runs` rounded down
    to a multiple), so that its runs can be checked to be independent
    (`sampling.check_runs_independent`). `in_event(encoded)` says which encoded outputs fall
    in the event."""
    from .encoding import Encoded, encode
    from . import CALLS, ILLUSTRATE, draw_outputs, split_into_chunks

    calls = min(CALLS, runs) if mech.batched else 1
    drawn, per_call, by_call = [], [], []
    for side, data in enumerate((D, D_prime)):
        parts, encoded, hits = [], [], []
        for task in split_into_chunks(runs // calls * calls, runs // calls, pair=pair,
                                      side=side, stage=0, purpose=ILLUSTRATE):
            outputs = draw_outputs(mech, data, np.random.default_rng(task.seed_sequence(seed)),
                                   task.size, task.start)
            enc, _ = encode(outputs, task.size, task.start, batched=mech.batched,
                            exact_floats=mech.floating_point)
            parts.append(outputs)
            encoded.append(enc)
            hits.append(np.asarray(in_event(enc), dtype=bool))
        per_call.append(np.array([[h.sum(), len(h)] for h in hits]))
        by_call.append(encoded)
        drawn.append((_joined(parts), Encoded.concat(encoded), np.concatenate(hits)))
    (outputs_D, enc_D, hits_D), (outputs_Q, enc_Q, hits_Q) = drawn
    return (event_examples(outputs_D, enc_D, hits_D, enc_Q, hits_Q, outputs_D_prime=outputs_Q),
            by_call, per_call)


def _joined(parts: list):
    """The outputs of several calls as one sequence, indexable by run."""
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(p, np.ndarray) and p.shape[1:] == parts[0].shape[1:] for p in parts):
        return np.concatenate(parts)
    return [output for part in parts for output in part]


def with_examples(mech, witness, event, seed: int, samples_per_side: int):
    """The witness with its event's most frequent outputs (`collect_examples`) on an
    illustrative sample of at most `samples_per_side` runs per input; `event.hits` says which
    encoded outputs fall in the event. A ContractError if the sample's calls show runs that are
    not independent (`sampling.check_runs_independent`)."""
    from dataclasses import replace
    from . import check_runs_independent
    rate = witness.count_D / witness.samples_D if witness.samples_D else 0.0
    runs = illustration_size(mech.batched, samples_per_side, rate)
    examples, by_call, per_call = collect_examples(mech, witness.D, witness.D_prime,
                                                   event.hits, seed, event.pair, runs)
    check_runs_independent(mech, (witness.D, witness.D_prime), witness.event, by_call,
                           per_call)
    return replace(witness, examples=examples,
                   examples_runs=sum(int(n) for _, n in per_call[0]))


__all__ = ["illustration_size", "grouped_by_shape", "numbers_of", "range_text", "value_ranges",
           "typical_runs", "value_matrix", "pattern_columns", "event_examples",
           "collect_examples", "with_examples"]
