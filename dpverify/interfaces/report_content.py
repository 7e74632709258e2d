"""What an audit report says, each sentence once (docs/usage.md, "Reports and pictures"):
report.md and index.html are two renderings (report_render.py) of the same blocks, built here
from the JSON entries and the audited results. Nothing here computes a statistic.

A block is a tuple: ("title", text), ("note", inline), ("table", header, rows, verdicts),
("section", mechanism, outcome), ("text", inline), ("bullets", [inline, …]), ("pre", text) or
("image", path, first). Inline text is a str, a Code, Strong, Link or Aside, or a list of them.
"""
from __future__ import annotations

import math

import json
from dataclasses import dataclass

from ..certificate_ids import certificate_id
from ..evidence import (BETTING_KINDS, CERTIFICATE_DOCS, CERTIFICATE_WORDS, CONFIRMING,
                        betting_counts_text, certificate_how, lower_bound_text, percent,
                        short_number, wealth_text)
from ..result import (confirmation_text, inconclusive_advice, leak_reach_text,
                      marginal_text)
from .report_kinds import view_of


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class Strong:
    text: str


@dataclass(frozen=True)
class Link:
    """A link into the project's docs: a link in report.md, plain words in the self-contained
    index.html."""
    text: str
    href: str


@dataclass(frozen=True)
class Aside:
    """A small note after a cell's main text (e.g. concrete outputs of a group)."""
    text: str


INTRO = [Strong("A violation"), " is certified: with probability at least the stated "
         "confidence the mechanism does not satisfy its claim on the shown pair. ",
         Strong("A pass"), " means no violation was found at this budget: it is not a proof of "
         "privacy, and it says what it covers (its resolution and leak reach). ",
         Strong("Inconclusive"), " means no violation was found, but this budget could not have "
         "caught a gross one even on an event as likely as the best it tested: raise the "
         "samples (docs/method.md)."]
INTERRUPTED_NOTE = ("This run was interrupted (Ctrl-C): the mechanisms marked interrupted count "
                    "only what was certified before it, and those marked not run were not "
                    "audited.")
SUMMARY_HEADER = ("mechanism", "verdict", "claimed (ε, δ)", "certified ε ≥", "confidence",
                  "mechanism runs", "seconds")


def outcome(r: dict) -> str:
    """violation, pass or inconclusive (or error, not run): the word a row and a heading show."""
    return r.get("outcome", r["verdict"])


def qualifier(r: dict) -> str:
    """Verdict-cell suffix: interrupted, a marginal violation, or a confirmation's outcome."""
    if r.get("interrupted"):
        return " (interrupted)"
    if r.get("marginal"):
        return " (marginal)"
    if r.get("confirmation"):
        return " (confirmed)" if r["confirmation"]["confirmed"] else " (not confirmed)"
    return ""


def summary_row(r: dict) -> tuple:
    """One entry's row of the summary table."""
    name = r["mechanism"]
    if r["verdict"] == "error":
        return (name, "error", r["error"], "", "", "", "")
    if r["verdict"] == "not run":
        return (name, "not run", r.get("reason", ""), "", "", "", "")
    claim, certified = view_of(r).cells(r)   # in the claim's own terms (report_kinds)
    return (name, outcome(r) + qualifier(r), claim, certified, str(r["confidence"]),
            f"{r['samples']:,}", f"{r['seconds']:.2f}")


def witness_table_rows(w: dict, claimed: dict) -> list[tuple[str, object]]:
    """A witness (JSON form) as (label, inline) rows: its bound, pair, event, counts and how
    the bound follows from them."""
    rows = []
    if "epsilon" in claimed:
        bound = lower_bound_text(float(w["epsilon_lower_bound"]), claimed["epsilon"])
        rows.append(("certified ε ≥", f"{bound} (claimed ε = {claimed['epsilon']:g})"))
    rows += [("pair D", Code(json.dumps(w["D"]))), ("pair D′", Code(json.dumps(w["D_prime"])))]
    kind = certificate_id(w.get("certificate"))
    if kind in BETTING_KINDS:
        confirming = kind == CONFIRMING
        rows += [("event S" if confirming else "last event bet on", w["event"]),
                 ("hits" if confirming else "hits of the events bet on",
                  betting_counts_text(w["count_D"], w["samples_D"], w["count_D_prime"], kind)),
                 ("wealth", wealth_text(float(w["e_value"]), float(w["betting_alpha"])))]
    else:
        rows += [("event S", w["event"]),
                 ("hits under D", f"{w['count_D']:,} / {w['samples_D']:,}"),
                 ("hits under D′", f"{w['count_D_prime']:,} / {w['samples_D_prime']:,}"),
                 ("P[M(D) ∈ S] ≥", short_number(w["p_lower"])),
                 ("P[M(D′) ∈ S] ≤", short_number(w["q_upper"]))]
    words = CERTIFICATE_WORDS.get(kind, str(kind))
    rows += [("certified by", Link(words, CERTIFICATE_DOCS[kind]) if kind in CERTIFICATE_DOCS
              else words), ("how", certificate_how(w))]
    if kind not in BETTING_KINDS:  # the events bet on changed between rounds: no one S
        rows.append(("plug-in ε on S", short_number(w["epsilon_estimate"])))
    if w.get("support_mismatch"):
        rows.append(("support mismatch", [Strong("ε is likely ∞."), f" The event occurred "
                     f"{w['count_D']:,} times under D and never under D′; the finite bound "
                     "only reflects the sample size"]))
    return rows


def example_blocks(w: dict) -> list[tuple]:
    """The event's outputs on the illustrative sample (sampling.illustration.event_examples),
    as a table with the sentence that says what it is."""
    examples, runs = w.get("examples") or [], w.get("examples_runs", 0)
    if not examples:
        return []
    rows = [([Code(e["output"])] + ([Aside("e.g. " + "; ".join(e["e.g."]))] if e.get("e.g.")
                                     else []),
             f"{percent(e['count_D'], runs)} ({e['count_D']:,})",
             f"{percent(e['count_D_prime'], runs)} ({e['count_D_prime']:,})") for e in examples]
    return [("text", f"Outputs in the event, on an illustrative sample of {runs:,} fresh runs "
                     "per input (not part of the bound):"),
            ("table", ("output", "share of runs on D", "share of runs on D′"), rows, None)]


def finding_bullets(r: dict) -> list:
    """What an entry says beside its witness: interruption, zCDP, confirmation, marginal, and
    for a pass or an inconclusive audit what it covers."""
    items = []
    if r.get("interrupted"):
        items.append([Strong("interrupted (Ctrl-C)"), ": only what was certified before it "
                      "counts"])
    items += [line.removeprefix("- ") for line in view_of(r).lines(r)]
    if r.get("confirmation"):
        items.append(confirmation_text(r["confirmation"], r["claimed"]["epsilon"]))
    if r.get("marginal"):
        items.append(Strong(marginal_text(r["evidence_level"])))
    if outcome(r) == "inconclusive":
        items.append([Strong("INCONCLUSIVE: this budget could not have caught a gross "
                             "violation"), " (docs/theory.md §2.11); "
                      + inconclusive_advice(r.get("interrupted") or r.get("budget_spent"))])
    if r["verdict"] == "pass" and "resolution" in r:
        if math.isinf(float(r["resolution"])):
            items.append("resolution: at this budget no true ε, however large, would have been "
                         "caught half the time on an event as likely as this one")
        else:
            items.append(f"resolution: a true ε of about {short_number(r['resolution'])} on an "
                         "event as likely as this one would have been caught half the time")
    if r["verdict"] == "pass" and "leak_reach" in r:
        items.append(leak_reach_text(float(r["leak_reach"]), r["confidence"]))
    if r.get("reproducible") is False:
        items.append("own randomness: the mechanism draws its own noise, so the same seed need "
                     "not reproduce this bound; the confidence still holds (docs/method.md)")
    return items


def entry_blocks(r: dict, result, pictures: list) -> list[tuple]:
    """One mechanism's section: heading, summary, the picture of the finding, what it says,
    its witness and outputs, then the other pictures."""
    blocks = [("section", r["mechanism"], outcome(r))]
    if r["verdict"] == "error":
        return blocks + [("text", f"Could not be audited: {r['error']}")]
    if r["verdict"] == "not run":
        return blocks + [("text", "Not audited: the run was interrupted (Ctrl-C) before its "
                                  "turn.")]
    if result is not None:
        blocks.append(("pre", result.summary()))
    blocks += [("image", pictures[0], True)] if pictures else []
    bullets = finding_bullets(r)
    blocks += [("bullets", bullets)] if bullets else []
    if result is not None and getattr(result, "implied", None) is not None:
        blocks += [("text", "The implied (ε, δ) claim, audited with the other half of the "
                            "error budget:"), ("pre", result.implied.summary())]
    if r.get("witness"):
        rows = witness_table_rows(r["witness"], r["claimed"])
        blocks.append(("table", ("witness", ""), rows, None))
        blocks += example_blocks(r["witness"])
    return blocks + [("image", p, False) for p in pictures[1:]]


def report_blocks(document: dict, results, images: dict) -> list[tuple]:
    """The whole report: title, what the verdicts mean, the summary table, then a section per
    entry. `images` maps a mechanism to its pictures, the picture of the finding first."""
    entries = document["results"]
    by_name = {res.mechanism: res for res in results}
    blocks = [("title", "dpverify audit report"), ("note", INTRO)]
    if document.get("meta", {}).get("interrupted"):
        blocks.append(("note", Strong(INTERRUPTED_NOTE)))
    blocks.append(("table", SUMMARY_HEADER, [summary_row(r) for r in entries],
                   [outcome(r) for r in entries]))
    for r in entries:
        blocks += entry_blocks(r, by_name.get(r["mechanism"]), images.get(r["mechanism"], []))
    return blocks


__all__ = ["Code", "Strong", "Link", "Aside", "INTRO", "INTERRUPTED_NOTE", "SUMMARY_HEADER",
           "outcome", "qualifier", "summary_row", "witness_table_rows", "example_blocks",
           "finding_bullets", "entry_blocks", "report_blocks"]
