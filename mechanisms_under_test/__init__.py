"""The zoo: differential-privacy mechanisms from the literature, correct and broken, each declared
with ``@dpverify.mechanism`` together with the claim its authors made and its neighbour pairs.

The zoo is the verifier's test bench: a sound verifier must never certify a lower bound above an
entry's true ε, and a powerful one should flag every broken entry. All entries are batched,
``f(data, rng, size)``, vectorised with numpy and draw all randomness from ``rng``. Parameters
follow the DP-Sniper benchmark (Bichsel et al., S&P 2021): claimed ε = 0.1 unless noted.

Modules (each also exports ``make_*`` factories for other parameters):

- ``basic``      Laplace, Gaussian (classic calibration), k-ary randomized response, two-sided
                 geometric (theory.md §3).
- ``svt``        sparse vector technique, Algorithms 1-6 of Lyu, Su, Li, PVLDB 2017 (theory.md §4).
- ``noisy_max``  Report Noisy Max 1-4 over 5 queries (theory.md §4).
- ``histogram``  NoisyHist1 (correct) and NoisyHist2 (inverted scale) over 5 bins (theory.md §4).
- ``dpsniper``   the rest of the DP-Sniper benchmark (truncated geometric, RAPPOR, LaplaceParallel,
                 SVT34Parallel, PrefixSum, NumericalSVT), kept out of ``ZOO``: see its ``DPSNIPER``.

Output encodings: Laplace/Gaussian and RNM3/4 give float arrays (size,); randomized response and
RNM1/2 give int64 arrays (size,); histograms give float arrays (size, 5); SVT1, 2, 4, 5, 6 give
int8 arrays (size, 10) with 1 = ⊤, 0 = ⊥, -1 = after the abort; SVT3 gives a masked float array
(size, 10) masked at ⊥ and after the abort (``make_svt3(output="tuples")`` gives the equivalent
list of variable-length tuples, None = ⊥).

``ZOO`` maps a name to the module-level instance; ``CORRECT`` names the entries whose claim holds;
``TRUE_EPSILON`` gives each instance's true ε under its neighbour relation at its claimed δ
(math.inf allowed). Every docstring carries "Claim: ..." and "True epsilon: X" lines.
``EPSILON_ON_PAIRS`` gives, where it is smaller, the largest ε reachable on the declared pairs.
"""
from __future__ import annotations

import math

from . import basic, histogram, noisy_max, svt
from .basic import gaussian, geometric, laplace, randomized_response
from .histogram import noisy_hist1, noisy_hist2
from .noisy_max import rnm1, rnm2, rnm3, rnm4
from .svt import svt1, svt2, svt3, svt4, svt5, svt6

ZOO = {m.name: m for m in (
    laplace, gaussian, randomized_response, geometric,
    svt1, svt2, svt3, svt4, svt5, svt6,
    rnm1, rnm2, rnm3, rnm4,
    noisy_hist1, noisy_hist2,
)}

CORRECT = frozenset({"laplace", "gaussian", "randomized_response", "geometric", "svt1", "svt2",
                     "rnm1", "rnm2", "noisy_hist1"})

TRUE_EPSILON = {
    "laplace": 0.1,
    # Smallest ε with δ(ε) ≤ 1e-5 on the exact Gaussian curve (Balle & Wang 2018); claim is 0.5.
    "gaussian": basic.gaussian_true_epsilon(basic.gaussian_sigma(0.5, 1e-5), 1e-5),
    "randomized_response": 0.5,
    "geometric": 0.5,
    "svt1": 0.1,
    "svt2": 0.1,
    "svt3": 0.5,          # ∞ as queries grow; 10 queries · ε₂ / c = 0.5 here
    "svt4": 0.175,        # (1 + 6c) ε / 4
    "svt5": math.inf,
    "svt6": 0.5,          # ∞ as queries grow; 10 queries · ε₂ = 0.5 here (0.42 on the pairs)
    "rnm1": 0.1,
    "rnm2": 0.1,
    "rnm3": 0.25,         # n ε / 2
    "rnm4": math.inf,
    "noisy_hist1": 0.1,
    "noisy_hist2": 10.0,  # 1 / ε
}

EPSILON_ON_PAIRS = dict(svt.EPSILON_ON_PAIRS)

__all__ = ["ZOO", "CORRECT", "TRUE_EPSILON", "EPSILON_ON_PAIRS", "basic", "svt", "noisy_max",
           "histogram", *ZOO]
