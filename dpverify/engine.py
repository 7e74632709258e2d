"""Transitional: the audit now lives in `dpverify.pipeline` (and `dpverify.certify`); this module
re-exports what the user-facing shells imported from it until they move to the pipeline's
names (issue 26)."""
from .pipeline import audit, audit_rdp, default_samples, is_zcdp_claim  # noqa: F401
