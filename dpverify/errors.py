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


class AuditTimeoutError(DpVerifyError):
    """The audit ran past its time limit (a hanging or very slow mechanism)."""


class WorkerDiedError(DpVerifyError):
    """A worker process died while running the mechanism; the audit can be retried."""


class TargetError(DpVerifyError):
    """A CLI target does not exist or holds no decorated mechanism."""


class PrivacyViolation(DpVerifyError, AssertionError):
    """Raised by the pytest integration when a violation is certified; carries the result."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result
