"""Certify: counts on a fresh sample → a certified lower bound on ε (docs/method.md,
"How a violation is certified").

- `pilot`: a small sample drawn apart, which chooses each event's certificate.
- `counting`: the certifying sample's counts of the chosen events and of the tracked grids.
- `certificates`: the three certificates, and a counted event turned into a `Witness`.
- `curves`: the witness's trade-off boxes, certified δ(ε) and p-values.

The statistics themselves are pure functions in `dpverify.stats`; this package applies them to
what the pipeline chose and counted.
"""
from .certificates import (Certificate, betting_witness, event_bound, predicted_resolution,
                           resolution, witness_of)
from .counting import PairPlan, StageCounts, certifying_counts, curve_counts
from .curves import privacy_curves_of
from .pilot import PilotRates, choose_coupling, pilot

__all__ = ["Certificate", "betting_witness", "PilotRates", "StageCounts", "certifying_counts", "choose_coupling",
           "event_bound", "curve_counts", "PairPlan", "pilot", "privacy_curves_of",
           "predicted_resolution", "resolution", "witness_of"]
