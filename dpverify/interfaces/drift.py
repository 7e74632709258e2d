"""The gate's drift rule and its baseline file.

A change that silently altered the noise (a scale halved or doubled, a sensitivity dropped)
fails the gate even where the claim still holds, because the claim alone cannot see noise that
got larger than it needs to be: the gate compares each mechanism's estimated ε with the one in
a committed baseline.

Estimated ε and its uncertainty
    est = the witness's plug-in estimate ln((p̂ − δ)/q̂) on the reported event
    (`result.witness.epsilon_estimate`; for a pass, the best event's point estimate), and
    u = est − epsilon_lower_bound, the gap the Clopper–Pearson bounds add (≥ 0).

Drift rule (tolerance REL, default 0.25)
    DRIFTED  ⇔  |est − est_base| > max(REL · |est_base|, 2 · (u + u_base))
    When either estimate is infinite: drifted iff they differ, i.e. exactly one is infinite
    (or they are infinities of opposite sign). An infinite u (no finite bound) never drifts.

The relative term catches real changes on precise audits; the 2·(u + u_base) term keeps audits
that stopped early (violations) or ran on few samples from drifting by sampling noise alone. The
comparison is meaningful at the same --samples (and, for a bit-identical result, the same --seed
and dpverify/numpy versions) as the baseline; the gate notes when they differ.

Baseline layout (sorted keys, indent 2, infinities as "inf"/"-inf"):
    {"mechanisms": {NAME: {"epsilon_estimate", "epsilon_lower_bound", "resolution",
                           "claimed": {"epsilon", "delta"}, "confidence", "samples", "seed",
                           "witness_event", "source"}},
     "meta": {"dpverify", "python", "numpy", "updated"}}
"""
from __future__ import annotations

import json
import math
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import __version__
from ..errors import GateError
from ..result import AuditResult, jsonable
from .outputs import write_output


def bound_text(value) -> str:
    """A certified lower bound as the gate prints it: rounded down to 4 significant digits (a
    lower bound stays one), ±∞, — for none."""
    if value is None:
        return "—"
    from ..evidence import floor_to
    return number_text(floor_to(float(value), 4))


def number_text(value) -> str:
    """A number as the gate prints it: 4 significant digits, ±∞, — for none."""
    if value is None:
        return "—"
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:.4g}"


# ------------------------------------------------------------------------------------------------
# Drift
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Drift:
    """How an estimated ε compares with the baseline's under the drift rule."""

    now: float
    base: float
    difference: float   # |now − base| (inf when exactly one is infinite)
    allowed: float      # max(tolerance·|base|, 2·(u + u_base)); nan when an estimate is infinite
    drifted: bool

    def describe(self) -> str:
        now, base = number_text(self.now), number_text(self.base)
        if not (math.isfinite(self.now) and math.isfinite(self.base)):
            rel = "differs from" if self.drifted else "equals"
            return f"estimated ε {now} now {rel} {base} in the baseline"
        op = ">" if self.drifted else "≤"
        return (f"estimated ε {now} now vs {base} in the baseline "
                f"(|Δ| {number_text(self.difference)} {op} allowed {number_text(self.allowed)})")


def _uncertainty(estimate: float, lower_bound: float) -> float:
    gap = estimate - lower_bound
    return max(gap, 0.0) if not math.isnan(gap) else math.inf


def compare(now_estimate, now_lower, base_estimate, base_lower, tolerance) -> Drift:
    """Apply the drift rule of the module docstring."""
    now, base = float(now_estimate), float(base_estimate)
    if not (math.isfinite(now) and math.isfinite(base)):
        differ = now != base
        return Drift(now, base, math.inf if differ else 0.0, math.nan, differ)
    u = _uncertainty(now, float(now_lower))
    u_base = _uncertainty(base, float(base_lower))
    allowed = max(tolerance * abs(base), 2.0 * (u + u_base))
    difference = abs(now - base)
    return Drift(now, base, difference, allowed, difference > allowed)


def estimate_of(result: AuditResult) -> tuple[float, float]:
    """(estimated ε, certified lower bound) of an audit; (−inf, −inf) when it found no event.
    A ρ-zCDP audit (dpverify.zcdp) drifts on the (ε, δ) audit of the claim it implies."""
    if result.kind == "zcdp":
        return estimate_of(result.implied)
    if result.witness is None:
        return -math.inf, -math.inf
    return float(result.witness.epsilon_estimate), float(result.witness.epsilon_lower_bound)


# ------------------------------------------------------------------------------------------------
# Baseline file
# ------------------------------------------------------------------------------------------------

def number(value, what: str) -> float:
    """`value` as a float; GateError naming `what` when it is not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise GateError(f"{what} is {value!r}, not a number")


def load_baseline(path: Path) -> dict:
    """Return {name: entry} of a baseline file; GateError if it is unreadable or malformed."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateError(f"baseline {path} does not exist: create it with --update-baseline")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GateError(f"cannot read baseline {path}: {exc}; fix the file, or delete it and "
                        "regenerate it with --update-baseline")
    mechanisms = document.get("mechanisms") if isinstance(document, dict) else None
    if not isinstance(mechanisms, dict):
        raise GateError(f"baseline {path} has no \"mechanisms\" object; regenerate it with "
                        "--update-baseline")
    for name, entry in mechanisms.items():
        if not isinstance(entry, dict):
            raise GateError(f"baseline {path}: entry {name!r} is not an object")
        for key in ("epsilon_estimate", "epsilon_lower_bound"):
            number(entry.get(key), f"baseline {path}: {name}.{key}")
    return mechanisms


def baseline_entry(result: AuditResult, samples: int, source: str | None) -> dict:
    """The baseline's record of one passing audit (layout in the module docstring)."""
    est, lower = estimate_of(result)
    return jsonable({
        "epsilon_estimate": est,
        "epsilon_lower_bound": lower,
        "resolution": result.resolution,
        "claimed": {"epsilon": result.claimed_epsilon, "delta": result.claimed_delta},
        "confidence": result.confidence,
        "samples": int(samples),
        "seed": result.seed,
        "witness_event": result.witness.event if result.witness else None,
        "source": source,
    })


def write_baseline(path: Path, mechanisms: dict) -> None:
    """Write the baseline file: `mechanisms` ({name: baseline_entry}) and how it was made."""
    document = {"mechanisms": mechanisms, "meta": {
        "dpverify": __version__, "python": platform.python_version(), "numpy": np.__version__,
        "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": "written by `dpverify gate --update-baseline`; compare at the same --samples"}}
    path = Path(path)
    text = json.dumps(jsonable(document), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_output("--baseline", path, lambda: path.write_text(text, encoding="utf-8"))
