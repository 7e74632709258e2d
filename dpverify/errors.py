"""Typed errors. Each message says what went wrong and what to do next."""


class DpVerifyError(Exception):
    """Base class of every error dpverify raises on purpose."""


class InvalidClaimError(DpVerifyError, ValueError):
    """The (epsilon, delta, confidence, samples) asked for cannot be audited."""


class InvalidPairsError(DpVerifyError, ValueError):
    """The neighbouring pairs are missing or malformed."""


class MechanismError(DpVerifyError):
    """The mechanism under audit could not be run (it raised, or its signature is unusable)."""


class MechanismOutputError(MechanismError):
    """The mechanism returned something dpverify cannot audit (NaN, inconsistent shape or type)."""


class RandomnessError(MechanismError):
    """The mechanism does not take all its randomness from the `rng` it is handed."""


class ContractError(MechanismError):
    """A batched mechanism's `size` outputs are not independent draws (e.g. one noise value
    broadcast to the whole batch), so an audit of them could not detect anything."""


class AuditTimeoutError(DpVerifyError):
    """The audit ran past its time limit (a hanging or very slow mechanism)."""


class WorkerDiedError(DpVerifyError):
    """A worker process died while running the mechanism; the audit can be retried."""


class TargetError(DpVerifyError):
    """A CLI target does not exist or holds no decorated mechanism."""


class GateError(DpVerifyError):
    """`dpverify gate` cannot run: unreadable baseline, failing git, clashing names."""


class PrivacyViolation(DpVerifyError, AssertionError):
    """Raised by the pytest integration when a violation is certified; carries the result."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


class InconclusiveAuditWarning(UserWarning):
    """Issued by the pytest integration when an audit found no violation but its budget could
    not have caught a gross one (`AuditResult.conclusive` is False). Turn it into a failure with
    ``-W error::dpverify.InconclusiveAuditWarning``."""


def where_raised(exc: BaseException, limit: int = 3) -> str:
    """The innermost `limit` frames of `exc`'s traceback outside dpverify itself, one per line
    ("  at file.py:12 in fn: source line", innermost last), or "" when there are none: where in
    a user's mechanism an exception came from, without dpverify's own frames."""
    import os
    import traceback

    try:
        own = os.path.dirname(os.path.abspath(__file__)) + os.sep
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if not os.path.abspath(f.filename).startswith(own)]
        cwd = os.getcwd() + os.sep
    except Exception:  # never let the description of an error raise another one
        return ""
    lines = []
    for frame in frames[-limit:]:
        name = frame.filename[len(cwd):] if frame.filename.startswith(cwd) else frame.filename
        source = (frame.line or "").strip()
        lines.append(f"  at {name}:{frame.lineno} in {frame.name}"
                     + (f": {source}" if source else ""))
    return "\n".join(lines)
