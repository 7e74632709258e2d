"""What every scripts/_census_<library>.py gives scripts/libraries.py, and what they share.

`cases()` returns (name, configuration, build, samples) per case: `build()` makes the
dpverify Mechanism with the library's adapter (dpverify.libraries.<library>: claim read from
the library object, neighbouring pairs from its domain and metric, corners included), and
`samples` is the per-input sample size that keeps the library's whole census (every case
audited at its claim and at half of it) to about five or six minutes on a 2-core machine.
`HALF_CLAIM_NOTES` says why a case can pass at half its claim (a claim looser than the
mechanism, not a weak audit); `FINDINGS_CHECKED` what was checked with direct library calls
before calling a failure of the library's own claim the library's fault; `SKIPPED` what the
census leaves out, and why.
"""
from __future__ import annotations

from functools import partial

S10, S11, S12, S13, S14, S15, S16 = (1 << n for n in range(10, 17))  # samples per input


def config(params: dict) -> str:
    """Keyword arguments as the configuration column shows them: "epsilon=1.0, lower=0.0"."""
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def measured(adapter, rows) -> list:
    """Census cases from rows (name, configuration, make, samples[, options]) whose `make()`
    returns a library measurement: `build()` is `adapter(make(), **options)`."""
    return [(name, configuration, partial(_build, adapter, make, *options), samples)
            for name, configuration, make, samples, *options in rows]


def _build(adapter, make, options=None):
    return adapter(make(), **(options or {}))
