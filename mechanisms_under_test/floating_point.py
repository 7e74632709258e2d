"""The floating-point pair (Mironov, "On Significance of the Least Significant Bits for
Differential Privacy", CCS 2012; theory.md §6).

Both entries declare ``floating_point=True``: their claim is about the doubles they return, bit
for bit, so the audit also looks at bit patterns. Both are batched, ``f(data, rng, size)``, take a
real number in [−10, 10] as ``data`` and are audited on the pair (0, 1) at claimed ε = 0.1.

- ``numpy_laplace``: the textbook ``x + rng.laplace(0, 1/ε)``. Its outputs from x = 0 are the
  noise values themselves, which use every bit of the mantissa; from x = 1 they are ``1 + n``
  rounded, which near zero lies on the coarser grid of numbers around 1. So, e.g., an output in
  [1/4, 1/2) with an odd mantissa comes from 0 about 1% of the time and never from 1: the true ε
  is ∞ (an exact-support witness).
- ``snapping_laplace``: Mironov's fix. Clamp the input to [−B, B], add Laplace noise, round to
  the nearest multiple of Λ (the smallest power of two ≥ the noise scale λ; the division and
  multiplication by a power of two are exact), clamp to [−B, B]. The output is a post-processing
  of the noisy value on a coarse grid that float rounding cannot shift except on the grid's
  boundaries, so it is ε-DP up to Mironov's slack 2^−49·B/λ (Theorem 1; ≈ 1.8·10^−13 here).

``FLOATING`` maps a name to its instance, ``TRUE_EPSILON_FLOATING`` gives the true ε (math.inf
allowed), ``CORRECT_FLOATING`` names the entries whose claim holds.
"""
from __future__ import annotations

import math

import numpy as np

from ._common import declare, doc

PAIRS = [(0.0, 1.0)]


def make_numpy_laplace(epsilon=0.1, name="numpy_laplace"):
    """x + rng.laplace(0, 1/ε) in doubles, the way most code writes it."""
    scale = 1.0 / epsilon

    def numpy_laplace(data, rng, size):
        return float(data) + rng.laplace(0.0, scale, size=size)

    return declare(numpy_laplace, epsilon=epsilon, pairs=PAIRS, name=name, floating_point=True,
                   doc=doc(f"Textbook floating-point Laplace: x + rng.laplace(0, {scale:g}) in "
                           "doubles. Output: float64 array (size,).", epsilon, math.inf,
                           notes="True epsilon is infinite in floating point: some outputs of "
                                 "x = 0 (e.g. in [1/4, 1/2) with an odd mantissa) are never "
                                 "produced from x = 1 (Mironov 2012)."))


def snapping_grid(scale: float) -> float:
    """Λ: the smallest power of two ≥ the noise scale λ (Mironov 2012, §5.2)."""
    return 2.0 ** math.ceil(math.log2(scale))


def make_snapping_laplace(epsilon=0.1, bound=1024.0, name="snapping_laplace"):
    """Mironov's snapping mechanism: clamp_B(round_Λ(clamp_B(x) + Laplace(λ))), λ = 1/ε."""
    scale = 1.0 / epsilon
    grid = snapping_grid(scale)

    def snapping_laplace(data, rng, size):
        x = min(max(float(data), -bound), bound)
        noisy = x + rng.laplace(0.0, scale, size=size)
        snapped = np.round(noisy / grid) * grid  # exact: grid is a power of two
        return np.clip(snapped, -bound, bound)

    slack = 2.0 ** -49 * bound / scale
    return declare(snapping_laplace, epsilon=epsilon, pairs=PAIRS, name=name,
                   floating_point=True,
                   doc=doc(f"Snapping Laplace (Mironov 2012): noise scale {scale:g}, outputs "
                           f"rounded to multiples of {grid:g} and clamped to ±{bound:g}. Output: "
                           "float64 array (size,).", epsilon, epsilon,
                           notes=f"True epsilon at most epsilon + {slack:.2g} (Mironov, Theorem "
                                 "1); the slack is far below what any sample can resolve."))


numpy_laplace = make_numpy_laplace()
snapping_laplace = make_snapping_laplace()

FLOATING = {"numpy_laplace": numpy_laplace, "snapping_laplace": snapping_laplace}
TRUE_EPSILON_FLOATING = {"numpy_laplace": math.inf, "snapping_laplace": 0.1}
CORRECT_FLOATING = {"snapping_laplace"}

__all__ = ["FLOATING", "TRUE_EPSILON_FLOATING", "CORRECT_FLOATING", *FLOATING,
           "make_numpy_laplace", "make_snapping_laplace", "snapping_grid"]
