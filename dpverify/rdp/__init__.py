"""(α, ρ)-Rényi-DP claims (Mironov 2017): a certified lower bound on D_α(M(D) ‖ M(D′)) from
one two-cell partition chosen on a search sample and counted on a fresh one (docs/theory.md
§8; docs/zcdp.md). The maths is in `dpverify.renyi`."""
from .audit import audit_rdp
from .result import RenyiAuditResult

__all__ = ["audit_rdp", "RenyiAuditResult"]
