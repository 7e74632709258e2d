"""Evidence in the mechanism's own terms: the outputs that make up a witness's event, the pair
with the coordinates that differ, and a certified bound written so that it never reads as more
than was certified.

Nothing here certifies anything. The outputs shown are counted on an *illustrative* sample of
fresh runs drawn after the audit under a seed stream of their own (`sampling.ILLUSTRATE`): they
show what the event looks like, while the bound comes only from the certifying counts
(docs/method.md, "Evidence in the mechanism's terms").
"""
from __future__ import annotations

import math
import numpy as np

# Runs per input of the illustrative sample, at most: enough to show the common outputs of an
# event at rate 10⁻³ a hundred times over for a batched mechanism, and a fraction of a second of
# a scalar one.
ILLUSTRATE_RUNS_BATCHED = 1 << 17
ILLUSTRATE_RUNS_SCALAR = 1 << 12
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


def illustration_size(batched: bool, samples_per_side: int) -> int:
    """Runs per input of the illustrative sample: at most what the audit itself ran."""
    cap = ILLUSTRATE_RUNS_BATCHED if batched else ILLUSTRATE_RUNS_SCALAR
    return int(max(1, min(cap, samples_per_side)))


def _as_shape(x) -> str:
    """An output written with every number replaced by # (what a continuous output's event is
    made of: which coordinates are present, None or a string, not the exact values)."""
    if isinstance(x, (bool, np.bool_)) or x is None or isinstance(x, str):
        return format_value(x)
    if isinstance(x, (int, float, np.integer, np.floating)):
        return "#"
    if isinstance(x, np.ma.MaskedArray):
        return "[" + " ".join("--" if m else "#" for m in np.ma.getmaskarray(x)) + "]"
    if isinstance(x, np.ndarray):
        return "[" + " ".join(_as_shape(v) for v in x.tolist()) + "]"
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_as_shape(v) for v in x)
        return f"[{inner}]" if isinstance(x, list) else f"({inner})"
    return format_value(x)


def _shape_text(output) -> str:
    """`_as_shape`, with a lone number written "a number"."""
    shape = _as_shape(output)
    return "a number" if shape == "#" else shape


def grouped_by_shape(keys_in_event: np.ndarray) -> bool:
    """True when the event's outputs are mostly distinct (a continuous output): then its outputs
    are listed by shape (`_as_shape`), since a single real value has no frequency to show."""
    n = len(keys_in_event)
    return n > 50 and len(np.unique(keys_in_event)) > n // 5


def _tally(ids: np.ndarray) -> dict:
    values, counts = np.unique(ids, return_counts=True)
    return dict(zip(values.tolist(), counts.tolist()))


def event_examples(outputs_D, enc_D, hits_D, enc_D_prime, hits_D_prime,
                   most: int = EXAMPLES_SHOWN) -> tuple:
    """The event's most frequent outputs under D, each with how often it occurred under D and
    under D' (`hits_*`: which runs fell in the event). Exact outputs are told apart by their
    encoded keys; when those are mostly distinct (`grouped_by_shape`) outputs are grouped by
    their encoded structure and shown by shape, with a few concrete values."""
    by_shape = grouped_by_shape(enc_D.keys[hits_D])
    ids_D = enc_D.struct if by_shape else enc_D.keys
    ids_Q = enc_D_prime.struct if by_shape else enc_D_prime.keys
    tally_D, tally_Q = _tally(ids_D[hits_D]), _tally(ids_Q[hits_D_prime])
    examples = []
    for key in sorted(tally_D, key=lambda k: -tally_D[k])[:most]:
        where = np.flatnonzero(hits_D & (ids_D == key))
        first = outputs_D[int(where[0])]
        entry = {"output": _shape_text(first) if by_shape else format_value(first),
                 "count_D": int(tally_D[key]), "count_D_prime": int(tally_Q.get(key, 0))}
        if by_shape:
            entry["e.g."] = [format_value(outputs_D[int(i)]) for i in where[:3]]
        examples.append(entry)
    return tuple(examples)


def percent(count: int, runs: int) -> str:
    """A frequency as a percentage with two significant digits (0.0031 → "0.31%")."""
    if runs <= 0:
        return "n/a"
    share = 100.0 * count / runs
    return "0%" if share == 0 else f"{share:.2g}%"


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
    process) and return the event's most frequent outputs with their counts (`event_examples`).
    `in_event(encoded)` says which encoded outputs fall in the event."""
    from .encoding import encode
    from .sampling import ILLUSTRATE, ChunkTask, draw_outputs

    drawn = []
    for side, data in enumerate((D, D_prime)):
        task = ChunkTask(pair=pair, side=side, stage=0, purpose=ILLUSTRATE, index=0, start=0,
                         size=runs)
        outputs = draw_outputs(mech, data, np.random.default_rng(task.seed_sequence(seed)),
                               runs, 0)
        enc, _ = encode(outputs, runs, 0, batched=mech.batched)
        drawn.append((outputs, enc, np.asarray(in_event(enc), dtype=bool)))
    (outputs_D, enc_D, hits_D), (_, enc_Q, hits_Q) = drawn
    return event_examples(outputs_D, enc_D, hits_D, enc_Q, hits_Q)



def with_examples(mech, witness, event, seed: int, samples_per_side: int):
    """The witness with its event's most frequent outputs (`collect_examples`) on an
    illustrative sample of at most `samples_per_side` runs per input; `event.hits` says which
    encoded outputs fall in the event."""
    from dataclasses import replace
    runs = illustration_size(mech.batched, samples_per_side)
    examples = collect_examples(mech, witness.D, witness.D_prime, event.hits, seed, event.pair,
                                runs)
    return replace(witness, examples=examples, examples_runs=runs)


__all__ = ["format_value", "plain", "differing_positions", "abbreviate", "pair_text",
           "floor_to", "lower_bound_text", "illustration_size", "grouped_by_shape",
           "event_examples", "percent", "example_lines", "collect_examples", "with_examples"]
