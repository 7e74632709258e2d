"""Exit codes, the same for `dpverify audit` and `dpverify gate`:
  0    no finding: every mechanism was audited and none violates its claim (gate: and none
       drifted from the baseline or is missing from it).
  1    a finding, and only a finding: a violation (gate: also a drift or a mechanism missing
       from the baseline).
  3    INCONCLUSIVE: no violation was found, but for at least one mechanism the budget could
       not have caught a gross one (`AuditResult.conclusive`, docs/method.md): a CI job
       fails rather than turning green on an audit that tested nothing. 1 and 2 win over 3.
  2    not a finding: dpverify could not do what was asked. A bad option value (--jobs 0, a
       negative --samples, --confidence outside (0, 1), ...), an output path that cannot be
       written (--json/--report/--junit/--summary/--update-baseline; checked before any audit
       runs, and a missing parent directory is an error, never created), an unreadable or
       invalid baseline, a target that cannot be loaded, a mechanism that cannot be run or has
       an invalid declaration, or an internal error. stderr says what went wrong and what to
       do in a line starting `dpverify: error:` (or `ERROR      <mechanism>:` for one
       mechanism), without a Python traceback unless --debug is given. 2 wins over 1: the
       other mechanisms are still audited and reported.
  130  interrupted by Ctrl-C (what was certified until then is still printed and written to
       --json).
"""
from __future__ import annotations

EXIT_PASS, EXIT_VIOLATION, EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
# Which exit code wins when mechanisms end differently: an error, then a finding, then an
# inconclusive audit, then a pass.
EXIT_PRECEDENCE = (EXIT_PASS, EXIT_INCONCLUSIVE, EXIT_VIOLATION, EXIT_ERROR)


def worse_exit(code: int, other: int) -> int:
    """The exit code of two outcomes together (`EXIT_PRECEDENCE`)."""
    return max(code, other, key=EXIT_PRECEDENCE.index)


def exit_code_of(result) -> int:
    """One result's exit code: 1 violation, 3 inconclusive, 0 pass."""
    return {"violation": EXIT_VIOLATION, "inconclusive": EXIT_INCONCLUSIVE}.get(
        result.outcome, EXIT_PASS)


EXIT_CODES = """exit codes (audit and gate alike):
  0    no violation found (gate: and no drift, none missing from the baseline)
  1    a finding: a violation (gate: also a drift or a mechanism missing from the baseline)
  2    not a finding: bad option value, unwritable output path (checked before any audit),
       unreadable baseline, target that cannot be loaded, mechanism that cannot be run or
       has an invalid declaration, internal error (--debug shows the traceback); 2 wins over 1
  3    inconclusive: no violation found, but the budget could not have caught a gross one
       (raise --samples); 1 and 2 win over 3
  130  interrupted (Ctrl-C)"""
