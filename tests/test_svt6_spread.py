"""scripts/svt6_spread.py's exact SVT6 output law, checked against the mechanism it models: its
pattern probabilities against sampled frequencies, and its largest likelihood ratio against the
zoo's figure for the declared pairs (EPSILON_ON_PAIRS, computed on a different grid)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from svt6_spread import PATTERNS, pattern_probabilities  # noqa: E402

from mechanisms_under_test import EPSILON_ON_PAIRS, ZOO  # noqa: E402

RUNS = 1 << 18


def test_pattern_probabilities_match_the_mechanisms_frequencies():
    answers = np.array([2, 2, 2, 2, 2, 0, 0, 0, 0, 0], dtype=float)
    law = pattern_probabilities(answers)
    assert law.sum() == pytest.approx(1.0, abs=1e-5)  # a Riemann sum over ρ
    out = ZOO["svt6"](answers, np.random.default_rng(6), RUNS)
    index = out.astype(np.int64) @ (1 << np.arange(9, -1, -1))  # PATTERNS is in binary order
    counts = np.bincount(index, minlength=len(PATTERNS))
    assert np.array_equal(PATTERNS[5], [0, 0, 0, 0, 0, 0, 0, 1, 0, 1])
    # each pattern's count within 5 binomial standard errors (1024 cells: no chance failure)
    spread = np.sqrt(RUNS * law * (1 - law)) + 1.0
    assert np.all(np.abs(counts - RUNS * law) <= 5 * spread)


def test_largest_likelihood_ratio_is_the_zoos_figure_for_the_declared_pairs():
    # the zoo's figure is reached on (2⁵ 0⁵, 1¹⁰), a declared pair (the script scans them all)
    half, ones = np.array([2.0] * 5 + [0.0] * 5), np.ones(10)
    assert any(np.array_equal(np.ravel(d), half) and np.array_equal(np.ravel(d2), ones)
               for d, d2 in ZOO["svt6"].pairs)
    log_ratio = np.log(pattern_probabilities(half)) - np.log(pattern_probabilities(ones))
    assert np.max(np.abs(log_ratio)) == pytest.approx(EPSILON_ON_PAIRS["svt6"], abs=5e-4)
