"""What every scripts/_census_<library>.py gives scripts/libraries.py, and what they share.

`cases()`: (name, configuration, build, samples) per case, where `build()` makes the dpverify
Mechanism with the library's adapter (dpverify.libraries.<library>) and `samples` per input
keep the library's census (each case at its claim and at half of it) to about six minutes on
2 cores. `HALF_CLAIM_NOTES`: why a case can pass at half its claim (a claim looser than the
mechanism, not a weak audit); `FINDINGS_CHECKED`: what direct library calls showed before a
failure of a case's own claim was called the library's; `SKIPPED`: what is left out, and why.
"""
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
