"""dpverify: empirical differential-privacy verification of black-box mechanisms.

A pass means "no violation found at this budget", never "proven private": samples only prove
lower bounds on epsilon. A pass states what the budget covers (its resolution and its leak
reach); an audit whose resolution is above a gross violation of the claim is inconclusive
(`AuditResult.conclusive`), never a pass.
"""
from . import pairs
from .errors import (AuditTimeoutError, ContractError, DpVerifyError, InconclusiveAuditWarning,
                     InvalidClaimError, InvalidPairsError, MechanismError, MechanismOutputError,
                     PrivacyViolation, RandomnessError, TargetError, WorkerDiedError)
from .mechanism import Mechanism, mechanism

__version__ = "0.1.0"


def __getattr__(name):
    # audit() pulls in scipy and joblib; load it on first use so `import dpverify` stays light.
    if name in ("audit", "AuditResult", "Witness"):
        from . import auditing, result
        return {"audit": auditing.audit, "AuditResult": result.AuditResult,
                "Witness": result.Witness}[name]
    if name == "save_report":  # matplotlib too
        from .interfaces.report import save_report
        return save_report
    raise AttributeError(name)


__all__ = ["audit", "save_report", "mechanism", "pairs", "Mechanism", "AuditResult", "Witness", "DpVerifyError",
           "InvalidClaimError", "InvalidPairsError", "MechanismError", "MechanismOutputError",
           "RandomnessError", "ContractError", "TargetError", "PrivacyViolation", "AuditTimeoutError",
           "WorkerDiedError", "InconclusiveAuditWarning"]
