"""Evidence in the mechanism's own terms: the outputs that make up a witness's event, the pair
with the coordinates that differ, a certified bound written so that it never reads as more
than was certified, and the one place a witness is written down (the terminal summary, the
pytest failure, report.md and index.html lay out the same phrases).

Nothing here certifies anything. The outputs shown are counted on an *illustrative* sample of
fresh runs drawn after the audit under a seed stream of their own (`sampling.ILLUSTRATE`): they
show what the event looks like, while the bound comes only from the certifying counts
(docs/method.md, "Evidence in the mechanism's terms").
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

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


def format_value(x) -> str:
    """One output (or output coordinate) as a person would write it: numbers to 6 significant
    digits, None as None, strings quoted, sequences bracketed, masked entries as --."""
    if x is None or x is np.ma.masked:
        return "None" if x is None else "--"
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.6g}"
    if isinstance(x, str):
        return repr(str(x))
    if isinstance(x, np.ma.MaskedArray):
        return "[" + " ".join("--" if m else format_value(v)
                              for v, m in zip(x.data.tolist(), np.ma.getmaskarray(x))) + "]"
    if isinstance(x, np.ndarray):
        return "[" + " ".join(format_value(v) for v in x.tolist()) + "]"
    if isinstance(x, list):
        return "[" + ", ".join(format_value(v) for v in x) + "]"
    if isinstance(x, tuple):
        return "(" + ", ".join(format_value(v) for v in x) + ("," if len(x) == 1 else "") + ")"
    return repr(x)


def plain(x):
    """A pair's input as plain Python (lists, not `array([...])`), whole, for JSON and reports."""
    if isinstance(x, np.ndarray):
        x = x.tolist()
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    return x


def _as_list(x):
    x = plain(x)
    return x if isinstance(x, list) else None


def differing_positions(D, D_prime) -> list[int]:
    """Positions where two equal-length sequence inputs differ ([] otherwise)."""
    a, b = _as_list(D), _as_list(D_prime)
    if a is None or b is None or len(a) != len(b):
        return []
    return [i for i, (u, v) in enumerate(zip(a, b)) if u != v]


def abbreviate(x, keep: set[int], width: int = 60) -> str:
    """`x` whole when it fits in `width` characters; otherwise its first three and last values
    and every position in `keep`, with … for what is left out and the length at the end."""
    values = _as_list(x)
    text = format_value(values) if values is not None else format_value(x)
    if values is None or len(text) <= width:
        return text
    shown = sorted({0, 1, 2, len(values) - 1} | {i for i in keep if i < len(values)})
    parts, last = [], -1
    for i in shown:
        if i > last + 1:
            parts.append("…")
        parts.append(f"[{i}]={format_value(values[i])}" if i in keep else format_value(values[i]))
        last = i
    if last < len(values) - 1:
        parts.append("…")
    return "[" + ", ".join(parts) + f"] ({len(values)} values)"


def pair_text(D, D_prime, width: int = 60) -> str:
    """"D=…  D'=…" for a terminal: abbreviated, but never hiding a coordinate where they differ
    (up to 12 of them; beyond that the count of differing positions is said)."""
    diff = differing_positions(D, D_prime)
    keep = set(diff[:12])
    text = f"D={abbreviate(D, keep, width)}  D'={abbreviate(D_prime, keep, width)}"
    if len(diff) > 12:
        text += f"  (they differ at {len(diff)} positions)"
    return text


def floor_to(value: float, digits: int) -> float:
    """`value` rounded down to `digits` significant digits (a lower bound stays a lower bound)."""
    if not math.isfinite(value) or value == 0:
        return value
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(abs(value))))
    return math.floor(value * scale) / scale


def lower_bound_text(bound: float, claim: float, digits: int = 4) -> str:
    """A certified lower bound written with enough significant digits (rounded down) to differ
    from the claim it is compared with: never "certified ε ≥ 1" beside "claimed ε = 1"."""
    if not math.isfinite(bound):
        return "∞" if bound > 0 else "−∞"
    for d in range(digits, 13):
        shown = floor_to(bound, d)
        if (shown > claim) == (bound > claim) and shown != claim:
            return f"{shown:.{d}g}"
    return repr(bound)


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


def percent(count: int, runs: int) -> str:
    """A frequency as a percentage with two significant digits below 10% (0.0031 → "0.31%")
    and three from 10% up (0.996 → "99.6%", 1.0 → "100%", never "1e+02%")."""
    if runs <= 0:
        return "n/a"
    share = 100.0 * count / runs
    if share == 0:
        return "0%"
    return f"{share:.2g}%" if share < 10 else f"{share:.3g}%"


def example_lines(examples, runs: int, indent: str = "           ", most: int = 3) -> list[str]:
    """Terminal lines: "[1 0 0 -1 …]: 0.31% of runs on D vs 0.09% on D'" for the event's
    `most` most frequent outputs (the report and the JSON keep all of `examples`)."""
    if not examples:
        return []
    lines = [f"{indent}outputs in the event (illustrative sample, {runs:,} fresh runs per input):"]
    for e in examples[:most]:
        out = e["output"] if len(e["output"]) <= 48 else e["output"][:45] + "…"
        line = (f"{indent}  {out}: {percent(e['count_D'], runs)} of runs on D vs "
                f"{percent(e['count_D_prime'], runs)} on D'")
        if e.get("e.g."):
            line += f"  (e.g. {e['e.g.'][0]})"
        lines.append(line if len(line) <= 120 else line[:119] + "…")
    return lines


def collect_examples(mech, D, D_prime, in_event, seed: int, pair: int, runs: int) -> tuple:
    """Draw `runs` fresh outputs on each input (seed stream `sampling.ILLUSTRATE`, in this
    process) and return the event's most frequent outputs with their counts (`event_examples`),
    then, per input, the encoded outputs of each call and the event's hits and runs per call.
    A batched mechanism draws them as `sampling.CALLS` calls of one size (`runs` rounded down
    to a multiple), so that its runs can be checked to be independent
    (`sampling.check_runs_independent`). `in_event(encoded)` says which encoded outputs fall
    in the event."""
    from .sampling.encoding import Encoded, encode
    from .sampling import CALLS, ILLUSTRATE, draw_outputs, split_into_chunks

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
    from .sampling import check_runs_independent
    rate = witness.count_D / witness.samples_D if witness.samples_D else 0.0
    runs = illustration_size(mech.batched, samples_per_side, rate)
    examples, by_call, per_call = collect_examples(mech, witness.D, witness.D_prime,
                                                   event.hits, seed, event.pair, runs)
    check_runs_independent(mech, (witness.D, witness.D_prime), witness.event, by_call,
                           per_call)
    return replace(witness, examples=examples,
                   examples_runs=sum(int(n) for _, n in per_call[0]))


# ------------------------------------------------------------------------------------------------
# Writing a witness down. Every phrase about a witness is written here once; the terminal summary
# (`Witness.summary_lines`), the pytest failure (`interfaces/pytest_plugin.py`), report.md and
# index.html (`interfaces/report.py`) lay the same phrases out in their own form.
# ------------------------------------------------------------------------------------------------

from .certificate_ids import (BETTING, BETTING_KINDS, CONFIRMING, COUPLED,  # noqa: E402,F401
                              RATIO_TEST, TWO_BOUNDS, certificate_id)

# The certificates' names, their plain words, and where docs/method.md explains each.
CERTIFICATE_NAMES = {
    TWO_BOUNDS: "two Clopper–Pearson bounds",
    RATIO_TEST: "conditional ratio test (Poisson sample sizes)",
    COUPLED: "coupled t-test on blocks of common random numbers",
    BETTING: "testing by betting (anytime-valid)",
    CONFIRMING: "testing by betting on the witness's event over fresh runs (confirmation)",
}
CERTIFICATE_WORDS = {
    TWO_BOUNDS: "counting the event on fresh runs of each input (two Clopper–Pearson bounds)",
    RATIO_TEST: "the share of the event's hits that came from D (an exact binomial test)",
    COUPLED: "running D and D' on the same random numbers, block by block (a t-test on the "
             "blocks)",
    BETTING: "betting against the claim on each new run, with events learned on the runs "
             "before it (a test that may stop at any run)",
    CONFIRMING: "betting against the claim on fresh runs of the one event the audit found (a "
                "confirmation, which may stop at any run)",
}
CERTIFICATE_DOCS = {
    TWO_BOUNDS: "docs/method.md#two-bounds-certificate",
    RATIO_TEST: "docs/method.md#ratio-test-certificate",
    COUPLED: "docs/method.md#coupled-certificate",
    BETTING: "docs/method.md#testing-by-betting-while-searching",
    CONFIRMING: "docs/method.md#marginal-violations-and-confirmation",
}
SUPPORT_MISMATCH_NOTE = ("  [support mismatch: never seen under D'; the bound is limited by the "
                         "sample size and ε may be infinite]")


def short_number(value) -> str:
    """A float to 4 significant digits; anything else (an int, JSON's "inf") as it is."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def certificate_words(kind) -> str:
    """How the bound was certified, in plain words (the kind itself if it is not known)."""
    return CERTIFICATE_WORDS.get(certificate_id(kind), kind)


def counts_text(w) -> str:
    """"k/n under D vs k'/n' under D'": the event's hits on the certifying sample (for the
    betting test: the hits of the events bet on this pair and order, over the rounds bet)."""
    if w.certificate in BETTING_KINDS:
        return betting_counts_text(w.count_D, w.samples_D, w.count_D_prime, w.certificate)
    return (f"{w.count_D:,}/{w.samples_D:,} under D vs "
            f"{w.count_D_prime:,}/{w.samples_D_prime:,} under D'")


def betting_counts_text(count_d: int, rounds: int, count_d_prime: int,
                        kind: str = BETTING) -> str:
    """The hits of the events a betting test bet on one pair and order, over its rounds (a
    confirmation's: its one event's, over fresh rounds)."""
    if kind == CONFIRMING:
        return (f"{count_d:,} of {rounds:,} fresh rounds under D vs {count_d_prime:,} under D' "
                "(the one event, fixed before the rounds)")
    return (f"{count_d:,} of {rounds:,} search rounds under D vs {count_d_prime:,} under D' "
            "(the events bet on, each on the rounds after it was learned)")


def wealth_text(e_value: float, alpha: float) -> str:
    """The betting test's wealth against what a violation needs."""
    return (f"{e_value:.4g} from a stake of 1 (a violation needs 1/α_bet = {1 / alpha:.4g}; "
            f"a mechanism meeting the claim gets there with probability ≤ {alpha:.4g})")


def certificate_how(w: dict) -> str:
    """How the witness's bound follows from its counts (`w` in its JSON form), in one line a
    reader can recheck."""
    eps = float(w["epsilon_lower_bound"])  # JSON documents spell infinities "inf"/"-inf"
    kind = certificate_id(w.get("certificate"))
    name = CERTIFICATE_NAMES.get(kind, kind)
    if kind == RATIO_TEST and math.isfinite(eps):
        share = 1.0 / (1.0 + math.exp(-eps))  # π_L, since ε = ln(π_L/(1 − π_L))
        hits = w["count_D"] + w["count_D_prime"]
        return (f"{name}: the share of the {hits:,} hits that came from D, "
                f"P[S|D]/(P[S|D] + P[S|D']), is ≥ {share:.6g} (Clopper–Pearson), "
                "so ε ≥ ln(share/(1 − share))")
    if kind == COUPLED and w.get("blocks_D"):
        return (f"{name}: {len(w['blocks_D'])} blocks of {w['block_size']:,} runs per "
                "input, each block's runs of D and D' drawn on the same random numbers (one "
                "shared seed per chunk of runs); a one-sided t-test on the blocks' rates "
                "(Fieller's bound on the ratio of their means) bounds ln((P[S|D] − δ)/P[S|D']) "
                "≤ ε from below (the block counts are in result.json)")
    if kind in BETTING_KINDS and w.get("e_value") is not None:
        e_value, alpha = float(w["e_value"]), float(w["betting_alpha"])
        runs = ("the search runs" if kind == BETTING
                else "fresh runs of the witness's event")
        grew = (f"grew one unit of wealth to {e_value:.4g} (≥ 1/{alpha:.4g}); by Ville's "
                "inequality a mechanism meeting the claim does that with probability at most "
                f"{alpha:.4g}, whenever the test stops" if e_value >= 1 / alpha else
                f"took one unit of wealth to {e_value:.4g}, short of the 1/{alpha:.4g} a "
                "violation needs: no violation shown")
        return (f"{name}: bets against the claim on {runs}, each placed before "
                f"its runs were drawn, {grew}")
    return ("two Clopper–Pearson bounds: ε ≥ ln((lower bound on P[M(D) ∈ S] − δ)/"
            "upper bound on P[M(D') ∈ S])")


@dataclass(frozen=True)
class TerminalLayout:
    """How a terminal shows a witness: each line is `indent`, the label padded to
    `label_width`, a space and the text. `whole_pair`: D and D' in full on two lines (else
    `pair_text`, abbreviated on one); `details`: the support-mismatch note and the link to the
    certificate's section of docs/method.md."""

    indent: str
    label_width: int
    whole_pair: bool
    details: bool


SUMMARY_LAYOUT = TerminalLayout("           ", 0, whole_pair=False, details=True)
FAILURE_LAYOUT = TerminalLayout("  ", 8, whole_pair=True, details=False)


def witness_rows(w, layout: TerminalLayout) -> list[tuple[str, str]]:
    """(label, text) of the pair, the event, the counts and the certificate."""
    if layout.whole_pair:
        pair = [("pair", f"D = {format_value(plain(w.D))}"),
                ("", f"D' = {format_value(plain(w.D_prime))}")]
    else:
        pair = [("pair", pair_text(w.D, w.D_prime))]
    counts = counts_text(w)
    certificate = certificate_words(w.certificate)
    if layout.details:
        counts += SUPPORT_MISMATCH_NOTE if w.support_mismatch else ""
        certificate += f" ({CERTIFICATE_DOCS[w.certificate]})"
    if w.certificate == CONFIRMING:
        return pair + [("event", w.event), ("counts", counts),
                       ("wealth", wealth_text(w.e_value, w.betting_alpha)),
                       ("certified by", certificate)]
    if w.certificate == BETTING:
        return pair + [("last bet", w.event), ("counts", counts),
                       ("wealth", wealth_text(w.e_value, w.betting_alpha)),
                       ("certified by", certificate)]
    return pair + [("event", w.event), ("counts", counts), ("certified by", certificate)]


def witness_lines(w, layout: TerminalLayout = SUMMARY_LAYOUT) -> list[str]:
    """A witness for a terminal: its rows, then its event's most frequent outputs."""
    lines = [f"{layout.indent}{label:<{layout.label_width}} {text}"
             for label, text in witness_rows(w, layout)]
    return lines + example_lines(w.examples, w.examples_runs, indent=layout.indent)


__all__ = ["format_value", "plain", "differing_positions", "abbreviate", "pair_text",
           "floor_to", "lower_bound_text", "illustration_size", "grouped_by_shape",
           "numbers_of", "range_text", "value_ranges", "typical_runs", "value_matrix",
           "pattern_columns",
           "event_examples", "percent", "example_lines", "collect_examples", "with_examples",
           "TWO_BOUNDS", "RATIO_TEST", "COUPLED", "BETTING", "CONFIRMING", "BETTING_KINDS",
           "CERTIFICATE_WORDS", "CERTIFICATE_DOCS",
           "SUPPORT_MISMATCH_NOTE", "short_number", "certificate_words",
           "counts_text", "certificate_how", "TerminalLayout", "SUMMARY_LAYOUT", "FAILURE_LAYOUT",
           "witness_rows", "witness_lines"]
