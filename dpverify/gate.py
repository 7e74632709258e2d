"""`dpverify gate TARGET... --baseline FILE`: audit, then compare with a committed baseline.

A CI gate fails (exit 1) when a mechanism violates its claim, when it is missing from the
baseline, or when its estimated ε DRIFTED from the baseline: a change that silently altered the
noise (a scale halved or doubled, a sensitivity dropped) fails the gate even where the claim
still holds, because the claim alone cannot see noise that got larger than it needs to be.

Estimated ε and its uncertainty
    est = the witness's plug-in estimate ln((p̂ − δ)/q̂) on the reported event
    (`result.witness.epsilon_estimate`; for a pass, the best event's point estimate), and
    u = est − epsilon_lower_bound, the gap the Clopper–Pearson bounds add (≥ 0).

Drift rule (tolerance REL, default 0.25)
    DRIFTED  ⇔  |est − est_base| > max(REL · |est_base|, 2 · (u + u_base))
    When either estimate is infinite: drifted iff they differ, i.e. exactly one is infinite
    (or they are infinities of opposite sign). An infinite u (no finite bound) never drifts.

The relative term catches real changes on precise audits; the 2·(u + u_base) term keeps audits
that stopped early (violations) or ran on few samples from drifting by sampling noise alone. The
comparison is meaningful at the same --samples (and, for a bit-identical result, the same --seed
and dpverify/numpy versions) as the baseline; the gate notes when they differ.

Exit codes (the same as `dpverify audit`'s, see cli.py): 0 every mechanism passes and none
drifted; 1 a finding: a violation, a drift or a mechanism missing from the baseline; 2 not a
finding: a bad option value, an output path (--junit, --summary, the baseline with
--update-baseline) that cannot be written (checked before any audit; missing directories are
not created), an unreadable/missing/invalid baseline, a failing git call, a mechanism that
could not be run, or an internal error (2 wins over 1). With --update-baseline the passing
mechanisms of this run are merged into the baseline (violations are still reported, are not
written, and still exit 1); drift and missing entries then do not fail.

Baseline layout (sorted keys, indent 2, infinities as "inf"/"-inf"):
    {"mechanisms": {NAME: {"epsilon_estimate", "epsilon_lower_bound", "resolution",
                           "claimed": {"epsilon", "delta"}, "confidence", "samples", "seed",
                           "witness_event", "source"}},
     "meta": {"dpverify", "python", "numpy", "updated"}}
"""
from __future__ import annotations

import inspect
import json
import math
import platform
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import __version__
from .cli import check_output_file, validate_common, write_output
from .errors import DpVerifyError, TargetError
from .loading import module_from_path, mechanisms_in, resolve_target
from .mechanism import Mechanism
from .result import AuditResult, jsonable

DEFAULT_TOLERANCE = 0.25
EXIT_PASS, EXIT_FAIL, EXIT_ERROR = 0, 1, 2
NOT_IN_BASELINE = "not in baseline: run with --update-baseline"


class GateError(DpVerifyError):
    """The gate cannot run: bad option, unreadable baseline, failing git, clashing names."""


# ------------------------------------------------------------------------------------------------
# Drift
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Drift:
    now: float
    base: float
    difference: float   # |now − base| (inf when exactly one is infinite)
    allowed: float      # max(tolerance·|base|, 2·(u + u_base)); nan when an estimate is infinite
    drifted: bool

    def describe(self) -> str:
        if not (math.isfinite(self.now) and math.isfinite(self.base)):
            rel = "differs from" if self.drifted else "equals"
            return f"estimated ε {_f(self.now)} now {rel} {_f(self.base)} in the baseline"
        op = ">" if self.drifted else "≤"
        return (f"estimated ε {_f(self.now)} now vs {_f(self.base)} in the baseline "
                f"(|Δ| {_f(self.difference)} {op} allowed {_f(self.allowed)})")


def _uncertainty(estimate: float, lower_bound: float) -> float:
    gap = estimate - lower_bound
    return max(gap, 0.0) if not math.isnan(gap) else math.inf


def compare(now_estimate, now_lower, base_estimate, base_lower, tolerance) -> Drift:
    """Apply the drift rule of the module docstring."""
    now, base = float(now_estimate), float(base_estimate)
    if not (math.isfinite(now) and math.isfinite(base)):
        differ = now != base
        return Drift(now, base, math.inf if differ else 0.0, math.nan, differ)
    u = _uncertainty(now, float(now_lower))
    u_base = _uncertainty(base, float(base_lower))
    allowed = max(tolerance * abs(base), 2.0 * (u + u_base))
    difference = abs(now - base)
    return Drift(now, base, difference, allowed, difference > allowed)


def estimate_of(result: AuditResult) -> tuple[float, float]:
    """(estimated ε, certified lower bound) of an audit; (−inf, −inf) when it found no event.
    A ρ-zCDP audit (dpverify.zcdp) drifts on the (ε, δ) audit of the claim it implies."""
    implied = getattr(result, "implied", None)
    if implied is not None:
        return estimate_of(implied)
    if result.witness is None:
        return -math.inf, -math.inf
    return float(result.witness.epsilon_estimate), float(result.witness.epsilon_lower_bound)


# ------------------------------------------------------------------------------------------------
# Baseline file
# ------------------------------------------------------------------------------------------------

def _number(value, what: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise GateError(f"{what} is {value!r}, not a number")


def load_baseline(path: Path) -> dict:
    """Return {name: entry} of a baseline file; GateError if it is unreadable or malformed."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateError(f"baseline {path} does not exist: create it with --update-baseline")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GateError(f"cannot read baseline {path}: {exc}; fix the file, or delete it and "
                        "regenerate it with --update-baseline")
    mechanisms = document.get("mechanisms") if isinstance(document, dict) else None
    if not isinstance(mechanisms, dict):
        raise GateError(f"baseline {path} has no \"mechanisms\" object; regenerate it with "
                        "--update-baseline")
    for name, entry in mechanisms.items():
        if not isinstance(entry, dict):
            raise GateError(f"baseline {path}: entry {name!r} is not an object")
        for key in ("epsilon_estimate", "epsilon_lower_bound"):
            _number(entry.get(key), f"baseline {path}: {name}.{key}")
    return mechanisms


def baseline_entry(result: AuditResult, samples: int, source: str | None) -> dict:
    est, lower = estimate_of(result)
    return jsonable({
        "epsilon_estimate": est,
        "epsilon_lower_bound": lower,
        "resolution": result.resolution,
        "claimed": {"epsilon": result.claimed_epsilon, "delta": result.claimed_delta},
        "confidence": result.confidence,
        "samples": int(samples),
        "seed": result.seed,
        "witness_event": result.witness.event if result.witness else None,
        "source": source,
    })


def write_baseline(path: Path, mechanisms: dict) -> None:
    document = {"mechanisms": mechanisms, "meta": {
        "dpverify": __version__, "python": platform.python_version(), "numpy": np.__version__,
        "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": "written by `dpverify gate --update-baseline`; compare at the same --samples"}}
    path = Path(path)
    text = json.dumps(jsonable(document), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_output("--baseline", path, lambda: path.write_text(text, encoding="utf-8"))


# ------------------------------------------------------------------------------------------------
# Targets, sources, git
# ------------------------------------------------------------------------------------------------

def source_file(mech: Mechanism) -> Path | None:
    """The file that defines the mechanism's function, resolved; None if Python cannot tell."""
    try:
        found = inspect.getsourcefile(inspect.unwrap(mech.fn))
    except TypeError:
        return None
    return Path(found).resolve() if found else None


def display_path(path: Path | None) -> str | None:
    """A path relative to the current directory when it lies below it (POSIX form)."""
    if path is None:
        return None
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _directory_mechanisms(directory: Path) -> list[Mechanism]:
    """Every mechanism in the directory's .py files (not recursive; __init__.py skipped)."""
    found = []
    for path in sorted(directory.glob("*.py")):
        if path.name != "__init__.py":
            found += mechanisms_in(module_from_path(path))
    if not found:
        raise TargetError(f"directory {directory} holds no @dpverify.mechanism in its .py files")
    return found


def resolve_targets(targets) -> list[Mechanism]:
    """Resolve gate targets (audit's forms plus a directory) to distinct mechanisms.

    The same mechanism reached twice (same name, same source file) is kept once; two different
    mechanisms with one name raise GateError, since the baseline is keyed by name.
    """
    mechanisms: list[Mechanism] = []
    where: dict[str, Path | None] = {}
    seen: set[int] = set()
    for target in targets:
        found = (_directory_mechanisms(Path(target)) if Path(target).is_dir()
                 else resolve_target(target))
        for mech in found:
            if id(mech) in seen:
                continue
            seen.add(id(mech))
            src = source_file(mech)
            if mech.name in where:
                if where[mech.name] == src:
                    continue
                raise GateError(
                    f"two mechanisms are named {mech.name!r} ({display_path(where[mech.name])} "
                    f"and {display_path(src)}); the baseline is keyed by name: give one another "
                    "name with @dpverify.mechanism(name=...)")
            where[mech.name] = src
            mechanisms.append(mech)
    return mechanisms


def _git(args: list[str], cwd) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    except OSError as exc:
        raise GateError(f"cannot run git: {exc}")
    if proc.returncode != 0:
        raise GateError(f"`git {' '.join(args)}` failed: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout


def changed_files(ref: str, cwd=None) -> set[Path]:
    """Files changed since `ref` (committed, staged or not) plus untracked ones, resolved."""
    top = Path(_git(["rev-parse", "--show-toplevel"], cwd).strip())
    names = _git(["diff", "--name-only", "-z", ref, "--"], top).split("\0")
    names += _git(["ls-files", "--others", "--exclude-standard", "-z"], top).split("\0")
    return {(top / name).resolve() for name in names if name}


# ------------------------------------------------------------------------------------------------
# Outcomes and their reports
# ------------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    name: str
    source: str | None
    seconds: float
    result: AuditResult | None = None
    error: str | None = None
    baseline: dict | None = None
    drift: Drift | None = None
    updated: bool = False
    notes: list = field(default_factory=list)

    @property
    def baseline_state(self) -> str | None:
        """How this run compares with the baseline: "updated", "drift", "no drift" or "missing"
        (None for an error). The one record that the printed baseline line (`drift_line`), the
        failures, the JUnit/Markdown reports and the summary counts are all derived from, so a
        DRIFT or "not in baseline" line is always counted, whatever the verdict beside it."""
        if self.error is not None:
            return None
        if self.updated:
            return "updated"
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
            out.append(f"violation: claimed (ε={r.claimed_epsilon:g}, δ={r.claimed_delta:g}), "
                       f"certified ε ≥ {_f(r.epsilon_lower_bound)} at confidence "
                       f"{r.confidence:g}")
        state = self.baseline_state
        if state == "drift":
            out.append("drift: " + self.drift.describe())
        elif state == "missing":
            out.append(self._missing_text())
        return out

    def _missing_text(self) -> str:
        # a violation is never written to the baseline: no hint to --update-baseline for it
        return NOT_IN_BASELINE if self.result.verdict == "pass" else "not in baseline"

    @property
    def status(self) -> str:
        if self.error is not None:
            return "error"
        if self.result.verdict == "violation":
            return "violation"
        return {"drift": "drift", "missing": "missing"}.get(self.baseline_state, "pass")

    def drift_column(self) -> str:
        return {None: "—", "updated": "baseline updated", "missing": "not in baseline",
                "drift": "**yes**", "no drift": "no"}[self.baseline_state]

    def drift_line(self) -> str:
        state = self.baseline_state
        if state == "updated":
            was = (f"; was {_f(self.drift.base)}, now {_f(self.drift.now)}"
                   if self.drift is not None else "")
            return "baseline updated" + was
        if state == "missing":
            return self._missing_text()
        return ("DRIFT: " if state == "drift" else "no drift: ") + self.drift.describe()

    def details(self) -> str:
        if self.error is not None:
            return f"{self.name} could not be audited: {self.error}"
        lines = [self.result.summary()]
        est, lower = estimate_of(self.result)
        lines.append(f"now:      estimated ε {_f(est)}, certified ε ≥ {_f(lower)}")
        if self.baseline is not None:
            b = self.baseline
            lines.append(f"baseline: estimated ε {_f(b.get('epsilon_estimate'))}, certified ε ≥ "
                         f"{_f(b.get('epsilon_lower_bound'))} (samples {b.get('samples')}, "
                         f"seed {b.get('seed')}, event {b.get('witness_event')})")
        lines.append(self.drift_line())
        lines += self.notes
        if self.source:
            lines.append(f"source: {self.source}")
        return "\n".join(lines)


def _f(value) -> str:
    if value is None:
        return "—"
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:.4g}"


def write_junit(path: Path, outcomes: list[Outcome]) -> None:
    failures = sum(o.error is None and bool(o.failures) for o in outcomes)
    errors = sum(o.error is not None for o in outcomes)
    total = sum(o.seconds for o in outcomes)
    counts = {"tests": str(len(outcomes)), "failures": str(failures), "errors": str(errors),
              "skipped": "0", "time": f"{total:.3f}"}
    root = ET.Element("testsuites", name="dpverify gate", **counts)
    suite = ET.SubElement(root, "testsuite", name="dpverify gate",
                          timestamp=time.strftime("%Y-%m-%dT%H:%M:%S"), **counts)
    for o in outcomes:
        case = ET.SubElement(suite, "testcase", classname="dpverify.gate", name=o.name,
                             time=f"{o.seconds:.3f}")
        if o.source:
            case.set("file", o.source)
        if o.error is not None:
            ET.SubElement(case, "error", message=f"could not be audited: {o.error}",
                          type="error").text = o.details()
        elif o.failures:
            ET.SubElement(case, "failure", message="; ".join(o.failures),
                          type=o.status).text = o.details()
        else:
            ET.SubElement(case, "system-out").text = o.details()
    ET.indent(root)
    path = Path(path)
    write_output("--junit", path,
                 lambda: ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True))


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def summary_markdown(outcomes: list[Outcome], count_line: str, note: str = "") -> str:
    lines = ["## dpverify gate", ""]
    if note:
        lines += [note, ""]
    if outcomes:
        lines += ["| mechanism | verdict | certified ε ≥ | estimate now | baseline | drift? | "
                  "seconds |", "|---|---|--:|--:|--:|---|--:|"]
        for o in outcomes:
            if o.error is not None:
                lines.append(f"| {_cell(o.name)} | error | | | | — | {o.seconds:.2f} |")
                continue
            est, _ = estimate_of(o.result)
            base = o.baseline.get("epsilon_estimate") if o.baseline else None
            verdict = "**violation**" if o.result.verdict == "violation" else "pass"
            lines.append(f"| {_cell(o.name)} | {verdict} | {_f(o.result.epsilon_lower_bound)} | "
                         f"{_f(est)} | {_f(base)} | {o.drift_column()} | {o.seconds:.2f} |")
        lines.append("")
    bad = [o for o in outcomes if o.error is not None or o.failures]
    for o in bad:
        why = (f"could not be audited: {o.error}" if o.error is not None
               else "; ".join(o.failures))
        lines.append(f"- **{_cell(o.name)}**: {_cell(why)}")
    if bad:
        lines.append("")
    lines += [count_line.strip(), "",
              "A pass means no violation was found at this budget, not a proof of privacy.", ""]
    return "\n".join(lines)


def write_summary(path: Path, text: str) -> None:
    """Append (as $GITHUB_STEP_SUMMARY expects), creating the file (not its directory) if
    needed."""
    path = Path(path)

    def append():
        with path.open("a", encoding="utf-8") as fh:
            fh.write(text)
    write_output("--summary", path, append)


# ------------------------------------------------------------------------------------------------
# The command
# ------------------------------------------------------------------------------------------------

def _validate(args) -> None:
    """Option values and output paths, before any audit (or git call) runs."""
    validate_common(args)
    if not (math.isfinite(args.tolerance) and args.tolerance >= 0):
        raise GateError(f"--tolerance must be a finite number ≥ 0 (relative, e.g. 0.25), got "
                        f"{args.tolerance}")
    if args.junit:
        check_output_file(args.junit, "--junit")
    if args.summary:
        check_output_file(args.summary, "--summary")
    if args.update_baseline:
        check_output_file(args.baseline, "--baseline")


def _count_line(outcomes: list[Outcome], skipped: int = 0) -> str:
    """Counts of what the lines above it print: passes, VIOLATION lines, DRIFT lines, "not in
    baseline" lines and errors. One mechanism can be both a violation and drifted or missing,
    so the counts may add up to more than the mechanisms."""
    by = {"pass": sum(o.error is None and not o.failures for o in outcomes),
          "violation": sum(o.error is None and o.result.verdict == "violation"
                           for o in outcomes),
          "drift": sum(o.baseline_state == "drift" for o in outcomes),
          "missing": sum(o.baseline_state == "missing" for o in outcomes),
          "error": sum(o.error is not None for o in outcomes)}
    line = (f"{len(outcomes)} mechanism(s): {by['pass']} pass(es), {by['violation']} "
            f"violation(s), {by['drift']} drift(s), {by['missing']} not in baseline, "
            f"{by['error']} error(s)")
    return line + (f"; {skipped} unchanged, not audited" if skipped else "")


def _notes(entry: dict, result: AuditResult, samples: int) -> list[str]:
    notes = []
    for key, now in (("samples", samples), ("seed", result.seed),
                     ("confidence", result.confidence)):
        if key in entry and entry[key] != now:
            notes.append(f"note: baseline made with {key} {entry[key]}, this run {now}: "
                         "estimates differ by sampling noise")
    claimed = entry.get("claimed") if isinstance(entry.get("claimed"), dict) else {}
    if (claimed.get("epsilon") != result.claimed_epsilon
            or claimed.get("delta", 0.0) != result.claimed_delta):
        notes.append(f"note: the claim changed since the baseline ({claimed.get('epsilon')}, "
                     f"{claimed.get('delta')}) → ({result.claimed_epsilon:g}, "
                     f"{result.claimed_delta:g})")
    return notes


def run_gate(args) -> int:
    """Run `dpverify gate` on parsed arguments; return the exit code."""
    from .engine import audit, default_samples

    _validate(args)
    baseline_path = Path(args.baseline)
    if args.update_baseline and not baseline_path.exists():
        baseline: dict = {}
    else:
        baseline = load_baseline(baseline_path)
    try:
        mechanisms = resolve_targets(args.targets)
    except TargetError as exc:
        print(f"dpverify: error: {exc}", file=sys.stderr)
        return EXIT_ERROR

    skipped = 0
    if args.changed_since:
        changed = changed_files(args.changed_since)
        kept = [m for m in mechanisms if source_file(m) is None or source_file(m) in changed]
        skipped = len(mechanisms) - len(kept)
        mechanisms = kept
        if not mechanisms:
            message = f"no mechanism changed since {args.changed_since}"
            print(message)
            if args.junit:
                write_junit(Path(args.junit), [])
            if args.summary:
                write_summary(Path(args.summary),
                              summary_markdown([], _count_line([], skipped), message))
            return EXIT_PASS

    outcomes: list[Outcome] = []
    for mech in mechanisms:
        source = display_path(source_file(mech))
        started = time.perf_counter()
        try:
            result = audit(mech, epsilon=args.epsilon, delta=args.delta,
                           confidence=args.confidence, samples=args.samples, seed=args.seed,
                           n_jobs=args.jobs)
        except DpVerifyError as exc:
            outcome = Outcome(mech.name, source, time.perf_counter() - started, error=str(exc))
            print(f"ERROR      {mech.name}: {exc}", file=sys.stderr, flush=True)
            outcomes.append(outcome)
            continue
        samples = args.samples or default_samples(mech)
        outcome = Outcome(mech.name, source, result.seconds, result=result,
                          baseline=baseline.get(mech.name))
        if outcome.baseline is not None:
            b = outcome.baseline
            est, lower = estimate_of(result)
            outcome.drift = compare(est, lower, _number(b["epsilon_estimate"], "estimate"),
                                    _number(b["epsilon_lower_bound"], "bound"), args.tolerance)
            outcome.notes = _notes(b, result, samples)
        if args.update_baseline and result.verdict == "pass":
            baseline[mech.name] = baseline_entry(result, samples, source)
            outcome.updated = True
        print(result.summary())
        print("           " + outcome.drift_line(), flush=True)
        for note in outcome.notes:
            print("           " + note)
        outcomes.append(outcome)

    if args.update_baseline:
        write_baseline(baseline_path, baseline)
    count_line = _count_line(outcomes, skipped)
    if args.junit:
        write_junit(Path(args.junit), outcomes)
    if args.summary:
        note = f"Only mechanisms changed since `{args.changed_since}`." if args.changed_since else ""
        write_summary(Path(args.summary), summary_markdown(outcomes, count_line, note))
    print("\n" + count_line)
    if args.update_baseline:
        print(f"baseline written: {baseline_path} ({sum(o.updated for o in outcomes)} "
              f"mechanism(s) updated, {len(baseline)} in the file)")
    if any(o.error is not None for o in outcomes):
        return EXIT_ERROR
    return EXIT_FAIL if any(o.failures for o in outcomes) else EXIT_PASS
