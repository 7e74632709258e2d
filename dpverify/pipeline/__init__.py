"""The audit pipeline: `audit()` dispatches on the claim; an (ε, δ) audit is an `AuditRun`,
stages of search → pilot → certifying counts → record, planned by a `Schedule` and, for
measurement runs with `seconds=`, sized by a `TimeBudget` (docs/method.md)."""
from .audit import audit, audit_with_settings, confirm_applies, is_zcdp_claim
from .rdp import audit_rdp
from .request import AuditRequest, build_request
from .run import AuditRun
from .schedule import Schedule, StagePlan, plan_stages
from .settings import DEFAULT_SETTINGS, Settings

__all__ = ["AuditRequest", "AuditRun", "DEFAULT_SETTINGS", "Schedule", "Settings", "StagePlan",
           "audit", "audit_rdp", "audit_with_settings", "build_request", "confirm_applies",
           "is_zcdp_claim",
           "plan_stages"]
