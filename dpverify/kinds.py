"""The kinds of claim an audit tests, which are also the kinds of its result (`result.kind`, the
"kind" of its JSON entry): (ε, δ)-DP, ρ-zCDP, (α, ρ)-RDP, or a whole curve (μ-GDP, f-DP, a
privacy profile). `dpverify.auditing.claim_kind` says which a call audits."""
from __future__ import annotations

EPSILON_DELTA = "epsilon_delta"
ZCDP = "zcdp"
RDP = "rdp"
CURVE = "curve"
KINDS = (EPSILON_DELTA, ZCDP, RDP, CURVE)
