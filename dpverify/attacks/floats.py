"""Float bit patterns: the likelihood ratio of an output's floating-point representation.

Only for claims that cover exact float outputs (`floating_point=True`): a textbook
floating-point Laplace reaches outputs from one input that it never reaches from the
neighbouring one (Mironov, CCS 2012; docs/theory.md §6).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sampling.encoding import Encoded
from .base import ScoreModel
from .ratios import log_ratio_by_value, lookup_log_ratio

FLOAT_COORDINATES = 4  # bit patterns are learned for this many leading coordinates
_MANTISSA = np.uint64((1 << 52) - 1)


def float_bit_pattern(x: np.ndarray) -> np.ndarray:
    """Per value: (sign, biased exponent, trailing zero bits of the 52-bit mantissa) packed in an
    int64; −1 for NaN (absent). Sums rounded in floating point land on coarser grids than their
    parts (x + n lies on the grid of max(|x|, |n|)), so which patterns occur depends on the
    input: Mironov (CCS 2012), theory.md §6."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    bits = x.view(np.uint64)
    sign = bits >> np.uint64(63)
    exponent = (bits >> np.uint64(52)) & np.uint64(0x7FF)
    mantissa = bits & _MANTISSA
    with np.errstate(over="ignore"):
        lowest = mantissa & (~mantissa + np.uint64(1))
    with np.errstate(divide="ignore"):
        zeros = np.where(mantissa > 0, np.log2(lowest.astype(np.float64)), 52.0).astype(np.int64)
    key = (sign.astype(np.int64) << 20) | (exponent.astype(np.int64) << 6) | zeros
    return np.where(np.isnan(x), -1, key)


def _pattern_text(key) -> str:
    """One packed bit pattern in words: its binade and trailing zero bits, or "absent"."""
    if key < 0:
        return "absent"
    negative, exponent, zeros = key >> 20, (key >> 6) & 0x7FF, key & 63
    low = 2.0 ** (int(exponent) - 1023)
    return (f"{'−' if negative else ''}[{low:.3g}, {2 * low:.3g}) with "
            f"{int(zeros)} trailing zero bit(s)")


@dataclass
class FloatBitPattern(ScoreModel):
    """Likelihood ratio of one coordinate's float bit pattern (`float_bit_pattern`): events such
    as "output[0] lies in [1/4, 1/2) with an odd mantissa", which a textbook floating-point
    Laplace can produce from one input and never from its neighbour."""

    index: int
    keys: np.ndarray
    log_ratio: np.ndarray
    kind: str = "float bit pattern"

    def score(self, enc):
        return lookup_log_ratio(self.keys, self.log_ratio,
                                float_bit_pattern(enc.column(self.index)))

    def describe(self, sign, threshold):
        chosen = np.flatnonzero(sign * self.log_ratio >= threshold)
        shown = [_pattern_text(k) for k in
                 self.keys[chosen][np.argsort(-sign * self.log_ratio[chosen])][:3]]
        return (f"output[{self.index}]'s float bit pattern (sign, binade, trailing zero bits of "
                f"the mantissa) is one of {len(chosen)} ordered by likelihood ratio (e.g. "
                + "; ".join(shown) + ")")


def learn_float_bit_patterns(a: Encoded, b: Encoded) -> list[FloatBitPattern]:
    """A `FloatBitPattern` for each of the first FLOAT_COORDINATES coordinates on which more
    than one pattern occurs."""
    models = []
    for j in range(min(a.X.shape[1], b.X.shape[1], FLOAT_COORDINATES)):
        learned = log_ratio_by_value(float_bit_pattern(a.X[:, j]), float_bit_pattern(b.X[:, j]))
        if len(learned.values) < 2:
            continue
        models.append(FloatBitPattern(j, learned.values, learned.log_ratio))
    return models
