"""The audit pipeline (`dpverify.auditing.audit` dispatches on the claim): an (ε, δ) audit is
an `AuditRun`, stages of search → pilot → certifying counts → record, planned by a `Schedule`
(docs/method.md)."""
from .request import AuditRequest, build_request
from .run import AuditRun, audit_with_settings
from .schedule import Schedule, StagePlan, plan_stages
from .settings import DEFAULT_SETTINGS, Settings

__all__ = ["AuditRequest", "AuditRun", "DEFAULT_SETTINGS", "Schedule", "Settings", "StagePlan",
           "audit_with_settings", "build_request", "plan_stages"]
