"""One mechanism's outcome in `dpverify gate`, and the reports made of the outcomes: the
printed lines, the count line, JUnit XML (--junit) and a Markdown summary (--summary)."""
from __future__ import annotations

import math
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from ..evidence import lower_bound_text
from ..result import AuditResult
from .drift import Drift, bound_text, estimate_of, number_text
from .outputs import write_output

NOT_IN_BASELINE = "not in baseline: run with --update-baseline"
WITHHELD = "not written to the baseline: inconclusive"
NOT_RUN_REASON = "the run was interrupted (Ctrl-C) before its turn"
INCONCLUSIVE_REASON = ("inconclusive: this budget could not have caught a gross violation; "
                       "raise --samples")


@dataclass
class Outcome:
    """One mechanism in a gate run: its audit result (or error), its baseline entry and drift,
    whether the baseline was updated, and notes on how the runs differ."""

    name: str
    source: str | None
    seconds: float
    result: AuditResult | None = None
    error: str | None = None
    baseline: dict | None = None
    drift: Drift | None = None
    updated: bool = False
    withheld: bool = False  # --update-baseline on an inconclusive audit: not written
    notes: list = field(default_factory=list)
    not_run: bool = False   # never audited: the run was interrupted (Ctrl-C) before its turn

    @classmethod
    def never_run(cls, name: str, source: str | None) -> "Outcome":
        return cls(name, source, 0.0, not_run=True)

    @property
    def baseline_state(self) -> str | None:
        """How this run compares with the baseline: "updated", "withheld" (inconclusive, so not
        written), "drift", "no drift" or "missing" (None for an error). The one record that the
        printed baseline line (`drift_line`), the failures, the JUnit/Markdown reports and the
        summary counts are all derived from, so a DRIFT or "not in baseline" line is always
        counted, whatever the verdict beside it."""
        if self.error is not None or self.not_run:
            return None
        if self.updated:
            return "updated"
        if self.withheld:
            return "withheld"
        if self.drift is None:
            return "missing"
        return "drift" if self.drift.drifted else "no drift"

    @property
    def failures(self) -> list[str]:
        """Why this mechanism fails the gate (empty: it passes; ignored for errors)."""
        if self.result is None:
            return []
        out = []
        r = self.result
        if r.verdict == "violation" and getattr(r, "implied", None) is not None:  # zCDP
            out.append(f"violation: claimed {r.claim_text()}, {r.rho_clause()} at confidence "
                       f"{r.confidence:g}; {r.implied_clause()}")
        elif r.verdict == "violation":
            out.append(f"violation{' (marginal)' if getattr(r, 'marginal', False) else ''}: "
                       f"claimed (ε={r.claimed_epsilon:g}, δ={r.claimed_delta:g}), certified "
                       f"ε ≥ {certified_text(r)} at confidence {r.confidence:g}")
        state = self.baseline_state
        if state == "drift":
            out.append("drift: " + self.drift.describe())
        elif state == "missing":
            out.append(self._missing_text())
        return out

    def _missing_text(self) -> str:
        # only a conclusive pass is written to the baseline: no hint to --update-baseline for
        # a violation or an inconclusive audit
        return NOT_IN_BASELINE if self.result.outcome == "pass" else "not in baseline"

    @property
    def stopped_early(self) -> bool:
        """Audited until Ctrl-C stopped it, with no violation proved: neither a pass nor
        inconclusive, since it did not spend its budget."""
        return (self.error is None and not self.not_run and self.result.interrupted
                and self.result.verdict != "violation")

    @property
    def inconclusive(self) -> bool:
        """Audited, no violation, but the budget could not have caught a gross one."""
        return (self.error is None and not self.not_run and not self.stopped_early
                and self.result.outcome == "inconclusive")

    @property
    def reasons(self) -> list[str]:
        """Why this mechanism does not pass: its failures (exit 1), else inconclusive (exit 3)."""
        return self.failures or ([INCONCLUSIVE_REASON] if self.inconclusive else [])

    @property
    def status(self) -> str:
        if self.not_run:
            return "not run"
        if self.error is not None:
            return "error"
        if self.result.verdict == "violation":
            return "violation"
        state = {"drift": "drift", "missing": "missing"}.get(self.baseline_state)
        return state or ("inconclusive" if self.inconclusive else "pass")

    def drift_column(self) -> str:
        return {None: "—", "updated": "baseline updated", "missing": "not in baseline",
                "withheld": WITHHELD,
                "drift": "**yes**", "no drift": "no"}[self.baseline_state]

    def drift_line(self) -> str:
        state = self.baseline_state
        if state == "updated":
            was = (f"; was {number_text(self.drift.base)}, now {number_text(self.drift.now)}"
                   if self.drift is not None else "")
            return "baseline updated" + was
        if state == "missing":
            return self._missing_text()
        if state == "withheld":
            return WITHHELD
        return ("DRIFT: " if state == "drift" else "no drift: ") + self.drift.describe()

    def details(self) -> str:
        if self.not_run:
            return f"{self.name} was not audited: {NOT_RUN_REASON}"
        if self.error is not None:
            return f"{self.name} could not be audited: {self.error}"
        lines = [self.result.summary()]
        est, lower = estimate_of(self.result)
        lines.append(f"now:      estimated ε {number_text(est)}, certified ε ≥ "
                     f"{bound_text(lower)}")
        if self.baseline is not None:
            b = self.baseline
            lines.append(f"baseline: estimated ε {number_text(b.get('epsilon_estimate'))}, "
                         f"certified ε ≥ {bound_text(b.get('epsilon_lower_bound'))} "
                         f"(samples {b.get('samples')}, "
                         f"seed {b.get('seed')}, event {b.get('witness_event')})")
        lines.append(self.drift_line())
        lines += self.notes
        if self.source:
            lines.append(f"source: {self.source}")
        return "\n".join(lines)



def write_junit(path: Path, outcomes: list[Outcome]) -> None:
    """--junit: one testcase per mechanism (failure: violation, drift, missing or
    inconclusive; error)."""
    failures = sum(o.error is None and bool(o.reasons) for o in outcomes)
    errors = sum(o.error is not None for o in outcomes)
    total = sum(o.seconds for o in outcomes)
    counts = {"tests": str(len(outcomes)), "failures": str(failures), "errors": str(errors),
              "skipped": str(sum(o.not_run for o in outcomes)), "time": f"{total:.3f}"}
    root = ET.Element("testsuites", name="dpverify gate", **counts)
    suite = ET.SubElement(root, "testsuite", name="dpverify gate",
                          timestamp=time.strftime("%Y-%m-%dT%H:%M:%S"), **counts)
    for o in outcomes:
        case = ET.SubElement(suite, "testcase", classname="dpverify.gate", name=o.name,
                             time=f"{o.seconds:.3f}")
        if o.source:
            case.set("file", o.source)
        if o.not_run:
            ET.SubElement(case, "skipped", message=f"not run: {NOT_RUN_REASON}")
        elif o.error is not None:
            ET.SubElement(case, "error", message=f"could not be audited: {o.error}",
                          type="error").text = o.details()
        elif o.reasons:
            ET.SubElement(case, "failure", message="; ".join(o.reasons),
                          type=o.status).text = o.details()
        else:
            ET.SubElement(case, "system-out").text = o.details()
    ET.indent(root)
    path = Path(path)
    write_output("--junit", path,
                 lambda: ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True))


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def certified_text(result) -> str:
    """The certified bound as the audit's own summary writes it: rounded down, with the digits
    that tell it from the claim (`evidence.lower_bound_text`)."""
    claim = getattr(result, "claimed_epsilon", None)
    return lower_bound_text(result.epsilon_lower_bound, math.nan if claim is None else claim)


def summary_markdown(outcomes: list[Outcome], counts: str, note: str = "") -> str:
    """The --summary Markdown: a table of the outcomes, why each failing one fails, and the
    count line `counts`."""
    lines = ["## dpverify gate", ""]
    if note:
        lines += [note, ""]
    if outcomes:
        lines += ["| mechanism | verdict | certified ε ≥ | estimate now | baseline | drift? | "
                  "seconds |", "|---|---|--:|--:|--:|---|--:|"]
        for o in outcomes:
            if o.error is not None or o.not_run:
                lines.append(f"| {_cell(o.name)} | {o.status} | | | | — | {o.seconds:.2f} |")
                continue
            est, _ = estimate_of(o.result)
            base = o.baseline.get("epsilon_estimate") if o.baseline else None
            verdict = {"pass": "pass"}.get(o.result.outcome, f"**{o.result.outcome}**")
            if getattr(o.result, "marginal", False):
                verdict += " (marginal)"
            lines.append(f"| {_cell(o.name)} | {verdict} | "
                         f"{certified_text(o.result)} | {number_text(est)} | "
                         f"{number_text(base)} | {o.drift_column()} | {o.seconds:.2f} |")
        lines.append("")
    bad = [o for o in outcomes if o.error is not None or o.reasons]
    for o in bad:
        why = (f"could not be audited: {o.error}" if o.error is not None
               else "; ".join(o.reasons))
        lines.append(f"- **{_cell(o.name)}**: {_cell(why)}")
    if bad:
        lines.append("")
    lines += [counts.strip(), "",
              "A pass means no violation was found at this budget, not a proof of privacy; each "
              "says what it covers (its resolution and leak reach).", ""]
    return "\n".join(lines)


def write_summary(path: Path, text: str) -> None:
    """Append (as $GITHUB_STEP_SUMMARY expects), creating the file (not its directory) if
    needed."""
    path = Path(path)

    def append():
        with path.open("a", encoding="utf-8") as fh:
            fh.write(text)
    write_output("--summary", path, append)


def count_line(outcomes: list[Outcome], skipped: int = 0, interrupted: bool = False) -> str:
    """Counts of what the lines above it print: passes, VIOLATION lines, INCONCLUSIVE lines,
    DRIFT lines, "not in baseline" lines, errors and, after a Ctrl-C, the mechanisms not run.
    One mechanism can be both a violation and drifted or missing, so the counts may add up to
    more than the mechanisms."""
    ran = [o for o in outcomes if not o.not_run]
    not_run = len(outcomes) - len(ran)
    stopped = sum(o.stopped_early for o in ran)
    by = {"pass": sum(o.error is None and not o.failures and not o.inconclusive
                      and not o.stopped_early for o in ran),
          "inconclusive": sum(o.inconclusive for o in ran),
          "violation": sum(o.error is None and o.result.verdict == "violation"
                           for o in ran),
          "drift": sum(o.baseline_state == "drift" for o in ran),
          "missing": sum(o.baseline_state == "missing" for o in ran),
          "error": sum(o.error is not None for o in ran)}
    line = (f"{len(outcomes)} mechanism(s): {by['pass']} pass(es), {by['violation']} "
            f"violation(s), {by['inconclusive']} inconclusive, {by['drift']} drift(s), "
            f"{by['missing']} not in baseline, {by['error']} error(s)"
            + (f", {stopped} interrupted" if stopped else "")
            + (f", {not_run} not run" if not_run else ""))
    return (line + (f"; {skipped} unchanged, not audited" if skipped else "")
            + ("  [INTERRUPTED]" if interrupted else ""))
