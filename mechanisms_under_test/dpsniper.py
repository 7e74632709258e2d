"""The DP-Sniper benchmark mechanisms the rest of the zoo does not cover (Bichsel et al., "DP-Sniper",
IEEE S&P 2021): TruncatedGeometric, RAPPOR, OneTimeRAPPOR, LaplaceParallel, SVT34Parallel, PrefixSum
and NumericalSVT. Every instance claims epsilon = 0.1 with the benchmark's parameters.

All entries are batched, ``f(data, rng, size)``, vectorised with numpy and draw all randomness
from ``rng``. Output encodings:

- ``truncated_geometric``  int64 array (size,), values in {0, ..., n}; data = a count in {0..n}.
- ``rappor``, ``one_time_rappor``  int8 array (size, 20) of reported bits; data = an int value.
- ``laplace_parallel``  float array (size, 20); data = a real number.
- ``svt34_parallel``  masked float array (size, 20): columns 0-9 SVT3's released values (masked at
  ⊥ and after its abort), columns 10-19 SVT4's ⊤/⊥ as 1.0/0.0 (masked after its abort).
- ``prefix_sum``  float array (size, 10) of running sums; data = 10 query answers.
- ``numerical_svt``  masked float array (size, 10): released values, masked at ⊥ and after abort.

``DPSNIPER`` maps a name to its instance, ``TRUE_EPSILON_DPSNIPER`` gives the true ε of each under
its declared neighbour relation (math.inf allowed), ``CORRECT_DPSNIPER`` names the entries whose
claim holds.
"""
from __future__ import annotations

import hashlib
import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

from dpverify.pairs import all_differ

from ._common import declare, doc, fmt
from .svt import ABORTED, TOP, _query_vector, _sparse_vector


# --------------------------------------------------------------------------------------------
# Truncated geometric (Balcer & Vadhan, "Differential Privacy on Finite Computers", GeoSample)
# --------------------------------------------------------------------------------------------

def geosample_k(epsilon):
    """k = ⌈ln(2/ε)⌉ as in the DP-Sniper benchmark (natural log, theory.md §4)."""
    return math.ceil(math.log(2.0 / float(epsilon)))


def truncated_geometric_cdf(n, k):
    """Exact integer CDF table of GeoSample: (F, d) with P(Y ≤ y | c) = F[c, y] / d.

    The output law is the two-sided geometric clamped to {0, ..., n}: Y = min(max(c + Z, 0), n)
    with P(Z = z) = (1 − α)/(1 + α)·α^{|z|} and α = 2^k/(2^k + 1), i.e. e^{ε'} = 1 + 2^{−k}.
    Hence P(Y ≤ y) = α^{c−y}/(1 + α) for y < c and 1 − α^{y−c+1}/(1 + α) for c ≤ y < n.
    Every probability is a rational with denominator d = (2^{k+1} + 1)(2^k + 1)^{n−1}.
    """
    K = 2 ** int(k)
    alpha = Fraction(K, K + 1)
    cdf = [[Fraction(1)] * (n + 1) for _ in range(n + 1)]
    for c in range(n + 1):
        for y in range(n):
            if y < c:
                cdf[c][y] = alpha ** (c - y) / (1 + alpha)
            else:
                cdf[c][y] = 1 - alpha ** (y - c + 1) / (1 + alpha)
    d = math.lcm(*(f.denominator for row in cdf for f in row))
    table = np.array([[int(f * d) for f in row] for row in cdf], dtype=np.int64)
    return table, d


def truncated_geometric_probabilities(n, k):
    """Exact probability table P[c][y] as Fractions (rows: input count c, columns: output y)."""
    table, d = truncated_geometric_cdf(n, k)
    rows = []
    for c in range(n + 1):
        prev = 0
        row = []
        for y in range(n + 1):
            row.append(Fraction(int(table[c, y]) - prev, d))
            prev = int(table[c, y])
        rows.append(row)
    return rows


def truncated_geometric_true_epsilon(n, k):
    """max over neighbours (c, c+1) and outputs y of |ln P(y|c)/P(y|c+1)|, from the exact table."""
    probs = truncated_geometric_probabilities(n, k)
    worst = max(max(probs[c][y] / probs[c + 1][y], probs[c + 1][y] / probs[c][y])
                for c in range(n) for y in range(n + 1))
    return math.log(worst)


def make_truncated_geometric(epsilon=0.1, n=5, name="truncated_geometric"):
    """Truncated geometric mechanism "GeoSample" (Balcer & Vadhan, ITCS 2018, Alg. 4.8).

    ``data`` is a count c in {0, ..., n}; the output Y in {0, ..., n} is an int64 array of shape
    (size,). The law is the two-sided geometric clamped to {0..n} with α = 2^k/(2^k + 1),
    k = ⌈ln(2/ε)⌉ (see ``truncated_geometric_cdf``). It is sampled exactly by inverse CDF on the
    integer table: U uniform on {1, ..., d}, Y = the smallest y with F[c, y] ≥ U.
    Neighbours: (c, c + 1) for c in 0..n−1. True ε = ln(1 + 2^{−k}), computed from the exact
    table (0.117783 at ε = 0.1, where k = 3), above the claim ε.
    """
    k = geosample_k(epsilon)
    table, d = truncated_geometric_cdf(n, k)
    true_eps = truncated_geometric_true_epsilon(n, k)
    assert abs(true_eps - math.log1p(2.0 ** -k)) < 1e-12

    def truncated_geometric(data, rng, size):
        c = int(data)
        if not 0 <= c <= n or c != data:
            raise ValueError(f"truncated geometric data must be an int in 0..{n}, got {data!r}")
        u = rng.integers(1, d + 1, size=size)
        return np.searchsorted(table[c], u, side="left").astype(np.int64)

    return declare(truncated_geometric, epsilon=epsilon, pairs=[(c, c + 1) for c in range(n)],
                   name=name,
                   doc=doc(f"Truncated geometric 'GeoSample' (Balcer and Vadhan 2018), n = {n}, "
                           f"k = ceil(ln(2/eps)) = {k}, alpha = {2 ** k}/{2 ** k + 1}. "
                           "Output: int64 array (size,) in {0..n}.", epsilon, true_eps,
                           notes=f"True epsilon is ln(1 + 2^-k) = {fmt(true_eps)}: the max of "
                                 "|ln P(y|c)/P(y|c+1)| over the exact probability table (the "
                                 "clamped geometric's ratios are all alpha^(+-1)). The benchmark "
                                 "takes k with a natural log, so 2^-k = 1/8 > eps/2."))


# --------------------------------------------------------------------------------------------
# RAPPOR (Erlingsson, Pihur, Korolova, CCS 2014)
# --------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _bloom_tuple(value, n_bits, n_hashes):
    bits = [0] * n_bits
    for i in range(n_hashes):
        digest = hashlib.sha256(f"{i}:{value}".encode()).digest()
        bits[int.from_bytes(digest, "big") % n_bits] = 1
    return tuple(bits)


def bloom_filter(value, n_bits=20, n_hashes=4):
    """Bloom filter of ``value``: bit sha256(f"{i}:{value}") mod n_bits set for i < n_hashes."""
    return np.array(_bloom_tuple(int(value), int(n_bits), int(n_hashes)), dtype=np.int8)


def rappor_bit_probabilities(f, p=None, q=None):
    """(P(report 1 | true bit 1), P(report 1 | true bit 0)) of one RAPPOR bit.

    Permanent RR keeps the bit w.p. 1 − f, else sets it to 1 or 0 w.p. f/2 each; the instantaneous
    RR then reports 1 w.p. q if the permanent bit is 1 and w.p. p if 0 (p = q = None: no IRR).
    """
    on, off = 1 - f / 2, f / 2  # P(permanent bit = 1 | true bit 1 / 0)
    if p is None:
        return on, off
    return q * on + p * (1 - on), q * off + p * (1 - off)


def rappor_epsilon(value_a, value_b, f, p=None, q=None, n_bits=20, n_hashes=4):
    """Exact ε between two values: the bits are independent, so the largest log-ratio of one
    report is the sum over the bits where the two filters differ of the per-bit maximum
    max(ln(q*/p*), ln((1 − p*)/(1 − q*)))."""
    hi, lo = rappor_bit_probabilities(f, p, q)
    per_bit = max(math.log(hi / lo), math.log((1 - lo) / (1 - hi)))
    differ = int(np.count_nonzero(bloom_filter(value_a, n_bits, n_hashes)
                                  != bloom_filter(value_b, n_bits, n_hashes)))
    return differ * per_bit


def _rappor_doc(title, epsilon, true_eps, f, p, q, n_bits, n_hashes, values, anchor):
    hi, lo = rappor_bit_probabilities(f, p, q)
    per_bit = max(math.log(hi / lo), math.log((1 - lo) / (1 - hi)))
    differ = int(np.count_nonzero(bloom_filter(values[0], n_bits, n_hashes)
                                  != bloom_filter(values[1], n_bits, n_hashes)))
    return doc(f"{title} ({n_bits}-bit Bloom filter, {n_hashes} sha256 hashes, f = {f:g}"
               + ("" if p is None else f", p = {p:g}, q = {q:g}") + "). data = an int value. "
               f"Output: int8 array (size, {n_bits}) of reported bits.", epsilon, true_eps,
               notes=f"Per bit P(1 | bit 1) = {hi:.6g}, P(1 | bit 0) = {lo:.6g}, per-bit epsilon "
                     f"{per_bit:.6g}. The filters of the declared pair {values} differ in "
                     f"{differ} bits (hash collisions), so the true epsilon on it is "
                     f"{differ} x {per_bit:.6g} = {fmt(true_eps)} (DP-Sniper reports ~{anchor}, "
                     f"the value for 2*{n_hashes} differing bits).")


#: Two values whose 4-hash, 20-bit filters are disjoint (8 differing bits), as DP-Sniper assumes.
RAPPOR_VALUES = (1, 3)


def make_rappor(epsilon=0.1, f=0.75, p=0.45, q=0.55, n_bits=20, n_hashes=4, values=RAPPOR_VALUES,
                name="rappor"):
    """RAPPOR: Bloom filter, permanent randomized response (f), instantaneous RR (p, q).

    Each bit of the filter B becomes B' = 1 w.p. f/2, 0 w.p. f/2, B w.p. 1 − f; the report is
    S = 1 w.p. q if B' = 1 and w.p. p if B' = 0. One report per sample, both steps fresh.
    Neighbours: the pair ``values``. True ε: exact on that pair (``rappor_epsilon``).
    """
    true_eps = rappor_epsilon(*values, f, p, q, n_bits, n_hashes)

    def rappor(data, rng, size):
        bits = bloom_filter(data, n_bits, n_hashes)
        u = rng.random((size, n_bits))
        permanent = np.where(u < f / 2, 1, np.where(u < f, 0, bits))
        report = rng.random((size, n_bits)) < np.where(permanent == 1, q, p)
        return report.astype(np.int8)

    return declare(rappor, epsilon=epsilon, pairs=[tuple(values)], name=name,
                   doc=_rappor_doc("RAPPOR (Erlingsson, Pihur, Korolova 2014)", epsilon,
                                   true_eps, f, p, q, n_bits, n_hashes, tuple(values), "0.40"))


def make_one_time_rappor(epsilon=0.1, f=0.95, n_bits=20, n_hashes=4, values=RAPPOR_VALUES,
                         name="one_time_rappor"):
    """One-time RAPPOR: the permanent randomized response only (no instantaneous step).

    Each bit B of the filter is reported as 1 w.p. f/2, 0 w.p. f/2, B w.p. 1 − f.
    """
    true_eps = rappor_epsilon(*values, f, None, None, n_bits, n_hashes)

    def one_time_rappor(data, rng, size):
        bits = bloom_filter(data, n_bits, n_hashes)
        u = rng.random((size, n_bits))
        return np.where(u < f / 2, 1, np.where(u < f, 0, bits)).astype(np.int8)

    return declare(one_time_rappor, epsilon=epsilon, pairs=[tuple(values)], name=name,
                   doc=_rappor_doc("One-time RAPPOR (permanent randomized response only)",
                                   epsilon, true_eps, f, None, None, n_bits, n_hashes,
                                   tuple(values), "0.80"))


# --------------------------------------------------------------------------------------------
# LaplaceParallel
# --------------------------------------------------------------------------------------------

def make_laplace_parallel(epsilon=0.1, n_parallel=20, name="laplace_parallel"):
    """``n_parallel`` independent Laplace releases of one value, each ε/n_parallel-DP.

    Output D + Lap(n_parallel/ε) in every column: float array (size, n_parallel). Sensitivity 1,
    neighbours the pair (0, 1). By composition (and exactly, all columns moving together) ε-DP.
    """
    eps_each = epsilon / n_parallel
    scale = 1.0 / eps_each

    def laplace_parallel(data, rng, size):
        return float(data) + rng.laplace(0.0, scale, size=(size, n_parallel))

    return declare(laplace_parallel, epsilon=epsilon, pairs=[(0.0, 1.0)], name=name,
                   doc=doc(f"LaplaceParallel: {n_parallel} independent D + Lap({scale:g}) "
                           f"(each eps = {eps_each:g}). Output: float array (size, "
                           f"{n_parallel}).", epsilon, epsilon))


# --------------------------------------------------------------------------------------------
# SVT34Parallel
# --------------------------------------------------------------------------------------------

def make_svt34_parallel(epsilon=0.1, n_queries=10, c=2, threshold=1.0, name="svt34_parallel"):
    """SVT3 and SVT4 (theory.md §4), each at ε with cutoff c, run side by side (independent
    noise) on the same queries.

    Output: masked float array (size, 2·n_queries). Columns 0..n−1: SVT3's released values
    qᵢ + νᵢ, masked at ⊥ and after SVT3's abort; columns n..2n−1: SVT4's ⊤ = 1.0 / ⊥ = 0.0,
    masked after SVT4's abort. Both parts are one-to-one encodings of the output sequences.
    True ε: ∞ (SVT3 is not ε-DP for any ε as queries grow).
    """
    # SVT3: ε₁ = ε₂ = ε/2, ρ ~ Lap(1/ε₁), ν ~ Lap(c/ε₂). SVT4: ε₁ = ε/4, ρ ~ Lap(1/ε₁), ν ~ Lap(1/ε₂).
    e3 = epsilon / 2
    e4_1 = epsilon / 4
    e4_2 = epsilon - e4_1
    bound_10 = n_queries * (epsilon - e3) / c + (1 + 6 * c) * epsilon / 4

    def svt34_parallel(data, rng, size):
        q = _query_vector(data, n_queries)
        status3, noisy3 = _sparse_vector(q, rng, size, threshold=threshold, rho_scale=1 / e3,
                                         nu_scale=c / (epsilon - e3), cutoff=c)
        status4, _ = _sparse_vector(q, rng, size, threshold=threshold, rho_scale=1 / e4_1,
                                    nu_scale=1 / e4_2, cutoff=c)
        values = np.concatenate([noisy3, status4.astype(float)], axis=1)
        mask = np.concatenate([status3 != TOP, status4 == ABORTED], axis=1)
        return np.ma.MaskedArray(values, mask=mask)

    return declare(svt34_parallel, epsilon=epsilon, pairs=all_differ(length=n_queries),
                   name=name,
                   doc=doc(f"SVT34Parallel: SVT3 and SVT4 (each at eps = {epsilon:g}, c = {c}, "
                           f"T = {threshold:g}) side by side on {n_queries} queries. Output: "
                           f"masked float array (size, {2 * n_queries}): SVT3's released values "
                           "(masked at bottom / after abort), then SVT4's top/bottom as 1.0/0.0 "
                           "(masked after abort).", epsilon, math.inf,
                           notes="Infinite as the number of queries grows (SVT3). For exactly "
                                 f"{n_queries} queries composition of the theory.md §4 values "
                                 f"gives at most n*eps2/c + (1+6c)eps/4 = {bound_10:g}."))


# --------------------------------------------------------------------------------------------
# PrefixSum
# --------------------------------------------------------------------------------------------

def make_prefix_sum(epsilon=0.1, n_queries=10, name="prefix_sum"):
    """Running sums of ``n_queries`` queries each with fresh Lap(1/ε) noise: cumsum(q + ν).

    Output: float array (size, n_queries). Under all-differ neighbours every query may move by 1,
    so (the cumsum being a bijection of the noisy answers) the true ε is n_queries·ε.
    """
    true_eps = n_queries * epsilon

    def prefix_sum(data, rng, size):
        q = _query_vector(data, n_queries)
        return np.cumsum(q + rng.laplace(0.0, 1.0 / epsilon, size=(size, n_queries)), axis=1)

    return declare(prefix_sum, epsilon=epsilon, pairs=all_differ(length=n_queries), name=name,
                   doc=doc(f"PrefixSum: running sums of {n_queries} queries + Lap({1 / epsilon:g}) "
                           f"noise. Output: float array (size, {n_queries}).", epsilon, true_eps,
                           notes="True epsilon is n_queries * eps under all-differ neighbours."))


# --------------------------------------------------------------------------------------------
# NumericalSVT (Lyu, Su, Li PVLDB 2017)
# --------------------------------------------------------------------------------------------

def make_numerical_svt(epsilon=0.1, n_queries=10, c=1, threshold=1.0, name="numerical_svt"):
    """NumericalSVT (Lyu et al. 2017): ε₁ = ε₂ = ε₃ = ε/3, ρ ~ Lap(1/ε₁), νᵢ ~ Lap(2c/ε₂); when
    qᵢ + νᵢ ≥ T + ρ it releases qᵢ + ηᵢ with FRESH ηᵢ ~ Lap(c/ε₃); aborts after c releases.

    Output: masked float array (size, n_queries), masked at ⊥ and after the abort. ε-DP.
    """
    rho_scale = 3.0 / epsilon
    nu_scale = 6.0 * c / epsilon
    eta_scale = 3.0 * c / epsilon

    def numerical_svt(data, rng, size):
        q = _query_vector(data, n_queries)
        status, _ = _sparse_vector(q, rng, size, threshold=threshold, rho_scale=rho_scale,
                                   nu_scale=nu_scale, cutoff=c)
        released = q + rng.laplace(0.0, eta_scale, size=(size, n_queries))
        return np.ma.MaskedArray(released, mask=status != TOP)

    return declare(numerical_svt, epsilon=epsilon, pairs=all_differ(length=n_queries), name=name,
                   doc=doc(f"NumericalSVT (Lyu, Su, Li 2017): rho ~ Lap({rho_scale:g}), nu_i ~ "
                           f"Lap({nu_scale:g}), releases q_i + Lap({eta_scale:g}) (fresh) when "
                           f"above, c = {c}, T = {threshold:g}. Output: masked float array "
                           f"(size, {n_queries}), masked at bottom and after abort.",
                           epsilon, epsilon))


truncated_geometric = make_truncated_geometric()
rappor = make_rappor()
one_time_rappor = make_one_time_rappor()
laplace_parallel = make_laplace_parallel()
svt34_parallel = make_svt34_parallel()
prefix_sum = make_prefix_sum()
numerical_svt = make_numerical_svt()

DPSNIPER = {m.name: m for m in (truncated_geometric, rappor, one_time_rappor, laplace_parallel,
                                svt34_parallel, prefix_sum, numerical_svt)}

TRUE_EPSILON_DPSNIPER = {
    "truncated_geometric": truncated_geometric_true_epsilon(5, geosample_k(0.1)),  # ln(9/8)
    "rappor": rappor_epsilon(*RAPPOR_VALUES, 0.75, 0.45, 0.55),  # 8 differing bits: 0.400
    "one_time_rappor": rappor_epsilon(*RAPPOR_VALUES, 0.95),       # 8 differing bits: 0.801
    "laplace_parallel": 0.1,
    "svt34_parallel": math.inf,
    "prefix_sum": 1.0,
    "numerical_svt": 0.1,
}

CORRECT_DPSNIPER = {"laplace_parallel", "numerical_svt"}

__all__ = ["DPSNIPER", "TRUE_EPSILON_DPSNIPER", "CORRECT_DPSNIPER", *DPSNIPER,
           "make_truncated_geometric", "make_rappor", "make_one_time_rappor",
           "make_laplace_parallel", "make_svt34_parallel", "make_prefix_sum",
           "make_numerical_svt", "bloom_filter", "rappor_epsilon", "rappor_bit_probabilities",
           "truncated_geometric_cdf", "truncated_geometric_probabilities",
           "truncated_geometric_true_epsilon", "geosample_k"]
