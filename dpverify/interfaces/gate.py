"""`dpverify gate TARGET... --baseline FILE`: audit, then compare with a committed baseline.

A CI gate fails (exit 1) when a mechanism violates its claim, when it is missing from the
baseline, or when its estimated ε DRIFTED from the baseline: a change that silently altered the
noise fails the gate even where the claim still holds. The drift rule and the baseline file are
in `drift.py`, the targets (directories, --changed-since) in `gate_targets.py`, the printed
lines, JUnit XML and Markdown summary in `gate_report.py`.

Exit codes (the same as `dpverify audit`'s, see exit_codes.py): 0 every mechanism passes and none
drifted; 1 a finding: a violation, a drift or a mechanism missing from the baseline; 3 no
finding, but an audit was inconclusive (its budget could not have caught a gross violation; it
is never written to the baseline); 2 not a finding: a bad option value, an output path
(--junit, --summary, the baseline with --update-baseline) that cannot be written (checked
before any audit; missing directories are not created), an unreadable/missing/invalid
baseline, a failing git call, a mechanism that could not be run, or an internal error (2 wins
over 1, 1 over 3). With --update-baseline the passing mechanisms of this run are merged into
the baseline (violations are still reported, are not written, and still exit 1); drift and
missing entries then do not fail.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from ..errors import DpVerifyError, GateError, TargetError
from ..options import GATE_FLAGS, check_parsed, confirm_requested, default_samples
from ..auditing import is_ed_claim
from ..result import AuditResult
from .exit_codes import EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_INTERRUPTED, EXIT_PASS
from .drift import (baseline_entry, compare, estimate_of, load_baseline, number,
                    write_baseline)
from .outputs import ctrl_c_held
from .gate_report import Outcome, count_line, summary_markdown, write_junit, write_summary
from .gate_targets import changed_files, display_path, resolve_targets, source_file
from .outputs import check_output_file

EXIT_FAIL = 1  # a finding: a violation, a drift or a mechanism missing from the baseline
INDENT = "           "  # under the summary's first line, after its verdict column

__all__ = ["run_gate", "compare", "GateError", "Outcome"]


def check_gate_usage(args) -> None:
    """Option values and output paths, before any audit (or git call) runs."""
    check_parsed(args, GATE_FLAGS)
    if args.junit:
        check_output_file(args.junit, "--junit")
    if args.summary:
        check_output_file(args.summary, "--summary")
    if args.update_baseline:
        check_output_file(args.baseline, "--baseline")


def notes(entry: dict, result: AuditResult, samples: int) -> list[str]:
    """How this run differs from the one that made the baseline entry (samples, seed,
    confidence, claim): the reasons two estimates may differ other than a change of code."""
    out = []
    for key, now in (("samples", samples), ("seed", result.seed),
                     ("confidence", result.confidence)):
        if key in entry and entry[key] != now:
            out.append(f"note: baseline made with {key} {entry[key]}, this run {now}: "
                       "estimates differ by sampling noise")
    claimed = entry.get("claimed") if isinstance(entry.get("claimed"), dict) else {}
    if (claimed.get("epsilon") != result.claimed_epsilon
            or claimed.get("delta", 0.0) != result.claimed_delta):
        out.append(f"note: the claim changed since the baseline ({claimed.get('epsilon')}, "
                   f"{claimed.get('delta')}) → ({result.claimed_epsilon:g}, "
                   f"{result.claimed_delta:g})")
    return out


def changed_only(args, mechanisms: list) -> tuple[list, int]:
    """With --changed-since: the mechanisms whose source changed (or cannot be told), and how
    many were left out."""
    if not args.changed_since:
        return mechanisms, 0
    # each mechanism's file is looked up in the repository that holds it, so the gate runs
    # from any directory; git is asked once per directory
    changed: dict = {}

    def is_changed(src: Path) -> bool:
        if src.parent not in changed:
            changed[src.parent] = changed_files(args.changed_since, src.parent)
        return src in changed[src.parent]
    kept = [m for m in mechanisms if source_file(m) is None or is_changed(source_file(m))]
    return kept, len(mechanisms) - len(kept)


def nothing_changed(args, skipped: int) -> int:
    """Nothing to audit: say so, in the reports too."""
    message = f"no mechanism changed since {args.changed_since}"
    print(message)
    if args.junit:
        write_junit(Path(args.junit), [])
    if args.summary:
        write_summary(Path(args.summary), summary_markdown([], count_line([], skipped), message))
    return EXIT_PASS


def audit_one(args, mech, baseline: dict) -> Outcome:
    """Audit one mechanism, compare it with its baseline entry (updating the entry when asked
    and it passes) and print its lines."""
    import dpverify

    source = display_path(source_file(mech))
    started = time.perf_counter()
    try:
        result = dpverify.audit(mech, epsilon=args.epsilon, delta=args.delta,
                                confidence=args.confidence, samples=args.samples,
                                seed=args.seed, n_jobs=args.jobs,
                                confirm=(confirm_requested(args.confirm, "gate")
                                         and is_ed_claim(mech, args.epsilon)))
    except DpVerifyError as exc:
        outcome = Outcome(mech.name, source, time.perf_counter() - started, error=str(exc))
        print(f"ERROR      {mech.name}: {exc}", file=sys.stderr, flush=True)
        return outcome
    samples = args.samples or default_samples(mech)
    outcome = Outcome(mech.name, source, result.seconds, result=result,
                      baseline=baseline.get(mech.name))
    if outcome.baseline is not None:
        b = outcome.baseline
        est, lower = estimate_of(result)
        outcome.drift = compare(est, lower, number(b["epsilon_estimate"], "estimate"),
                                number(b["epsilon_lower_bound"], "bound"), args.tolerance)
        outcome.notes = notes(b, result, samples)
    if args.update_baseline and result.outcome == "pass" and not result.interrupted:
        baseline[mech.name] = baseline_entry(result, samples, source)
        outcome.updated = True
    outcome.withheld = args.update_baseline and result.outcome == "inconclusive"
    print(result.summary())
    print(INDENT + outcome.drift_line(), flush=True)
    for note in outcome.notes:
        print(INDENT + note)
    return outcome


def audit_all(args, mechanisms: list, baseline: dict) -> tuple[list, bool]:
    """Each mechanism's outcome, in order, and whether a Ctrl-C stopped the run: an audit it
    interrupts keeps what it certified until then (and never updates the baseline), and the
    mechanisms after it are marked not run."""
    outcomes = []
    for i, mech in enumerate(mechanisms):
        try:
            outcomes.append(audit_one(args, mech, baseline))
        except KeyboardInterrupt:   # before the audit had a result, or while printing it
            rest = mechanisms[i:]
        else:
            if outcomes[-1].result is None or not outcomes[-1].result.interrupted:
                continue
            rest = mechanisms[i + 1:]
        outcomes += [Outcome.never_run(m.name, display_path(source_file(m))) for m in rest]
        print(f"interrupted: {len(rest)} mechanism(s) not audited", file=sys.stderr)
        return outcomes, True
    return outcomes, False


def finish(args, baseline_path: Path, baseline: dict, outcomes: list, skipped: int,
           interrupted: bool = False) -> int:
    """Write the baseline and the reports, print the counts; the exit code (130 after a
    Ctrl-C, whatever was found before it)."""
    if args.update_baseline:
        write_baseline(baseline_path, baseline)
    counts = count_line(outcomes, skipped, interrupted)
    if args.junit:
        write_junit(Path(args.junit), outcomes)
    if args.summary:
        note = (f"Only mechanisms changed since `{args.changed_since}`." if args.changed_since
                else "")
        write_summary(Path(args.summary), summary_markdown(outcomes, counts, note))
    print("\n" + counts)
    if args.update_baseline:
        print(f"baseline written: {baseline_path} ({sum(o.updated for o in outcomes)} "
              f"mechanism(s) updated, {len(baseline)} in the file)")
    if interrupted:
        return EXIT_INTERRUPTED
    if any(o.error is not None for o in outcomes):
        return EXIT_ERROR
    if any(o.failures for o in outcomes):
        return EXIT_FAIL
    return EXIT_INCONCLUSIVE if any(o.inconclusive for o in outcomes) else EXIT_PASS


def run_gate(args) -> int:
    """Run `dpverify gate` on parsed arguments; return the exit code."""
    check_gate_usage(args)
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
    mechanisms, skipped = changed_only(args, mechanisms)
    if args.changed_since and not mechanisms:
        return nothing_changed(args, skipped)
    outcomes, interrupted = audit_all(args, mechanisms, baseline)
    with ctrl_c_held() as pressed:  # the baseline, reports and count line say what was done
        code = finish(args, baseline_path, baseline, outcomes, skipped, interrupted)
    if pressed:
        print("dpverify: Ctrl-C after the audits had finished: every file was written, "
              "nothing was lost", file=sys.stderr)
    return code
