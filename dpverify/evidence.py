"""Evidence in words: an output as a person writes it, the pair with the coordinates that
differ, a certified bound written so that it never reads as more than was certified, the
certificates' names, and the one place a witness is written down (the terminal summary, the
pytest failure, report.md and index.html lay out the same phrases). The outputs a witness
shows are drawn and grouped in `sampling.illustration`; nothing here certifies anything
(docs/method.md, "Evidence in the mechanism's terms").
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


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


def json_number(value) -> str:
    """A number of a JSON entry to 4 significant digits; JSON spells infinities "inf"/"-inf",
    which float() reads."""
    return f"{float(value):.4g}"


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
           "floor_to", "lower_bound_text", "percent", "example_lines",
           "TWO_BOUNDS", "RATIO_TEST", "COUPLED", "BETTING", "CONFIRMING", "BETTING_KINDS",
           "CERTIFICATE_WORDS", "CERTIFICATE_DOCS",
           "SUPPORT_MISMATCH_NOTE", "json_number", "short_number", "certificate_words",
           "counts_text", "certificate_how", "TerminalLayout", "SUMMARY_LAYOUT", "FAILURE_LAYOUT",
           "witness_rows", "witness_lines"]
