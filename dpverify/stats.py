"""Pure statistics of a sound lower bound on epsilon (theory.md §2). No IO, no sampling.

Notation: an event S is counted k_p times in n_p draws of M(D) and k_q times in n_q draws of M(D').
p = P[M(D) ∈ S], q = P[M(D') ∈ S]. Any such event proves ε ≥ ln((p − δ)/q) (theory.md §1).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.special import betaincinv
from scipy.stats import norm, t as student_t


def cp_lower(k, n, level):
    """One-sided Clopper–Pearson lower bound: BetaInv(level; k, n − k + 1), 0 when k = 0.

    P[p < cp_lower] ≤ level. Accepts arrays; k may be fractional (for expected-count planning).
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(all="ignore"):
        out = betaincinv(np.where(k > 0, k, 1.0), n - k + 1.0, level)
    return np.where(k > 0, out, 0.0)


def cp_upper(k, n, level):
    """One-sided Clopper–Pearson upper bound: BetaInv(1 − level; k + 1, n − k), 1 when k = n."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(all="ignore"):
        out = betaincinv(k + 1.0, np.where(k < n, n - k, 1.0), 1.0 - level)
    return np.where(k < n, out, 1.0)


def epsilon_bound(p_low, q_high, delta=0.0):
    """ε_LB = ln((p_L − δ)/q_U); −inf when p_L ≤ δ, +inf when q_U = 0 (theory.md §2)."""
    p_low = np.asarray(p_low, dtype=float)
    q_high = np.asarray(q_high, dtype=float)
    num = p_low - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(num) - np.log(q_high)
    out = np.where(num <= 0, -np.inf, out)
    return out


def delta_bound(p_low, q_high, epsilon):
    """δ_LB(ε) = p_L − e^ε q_U (theory.md §2)."""
    return np.asarray(p_low, dtype=float) - math.exp(epsilon) * np.asarray(q_high, dtype=float)


def certified_epsilon(k_p, n_p, k_q, n_q, delta, level):
    """Certified lower bound for ONE pre-chosen event: each side's bound at `level` (union bound).

    With level = α/2 the returned bound exceeds the true ε with probability at most α.
    """
    return epsilon_bound(cp_lower(k_p, n_p, level), cp_upper(k_q, n_q, level), delta)


def ratio_epsilon_bound(k_p, k_q, level):
    """Certified ε ≥ ln(π_L/(1 − π_L)) from ONE Clopper–Pearson bound, for δ = 0 and Poisson
    sample sizes with equal means (sampling.poisson_sample_size).

    Then k_p ~ Poisson(λp) and k_q ~ Poisson(λq) are independent, so given s = k_p + k_q,
    k_p ~ Binomial(s, π) with π = p/(p + q) exactly (the conditional test for two Poisson
    rates; Przyborowski & Wileński 1940, Lehmann & Romano §4.6), and p/q = π/(1 − π). One
    bound at `level` instead of two: the false-alarm rate is ≤ level, where `certified_epsilon`
    needs level/2 per side. The width scales as √(1/k_p + 1/k_q) rather than the sum of the two
    sides' widths, which for rare events is about a third narrower at the same counts.
    """
    pi_low = cp_lower(k_p, np.asarray(k_p, dtype=float) + k_q, level)
    with np.errstate(divide="ignore"):
        return np.log(pi_low) - np.log1p(-pi_low)


# The coupled bound's t-quantile is taken at this fraction of its level. In 100,000 simulated
# audits per setting (64 or 256 blocks of 50 or 200 hits, every hit a disagreement, the hardest
# case the engine allows) the unshaded bound exceeded the true ratio 9.9-10.2% of the time at
# level 10%, the shaded one 9.4-9.7%: the normal approximation is off by up to ~0.2 points,
# which the shade covers at the cost of a ~2% wider bound.
COUPLED_LEVEL_SHADE = 0.95


def coupled_epsilon_bound(blocks_p, blocks_q, block_size, delta, level):
    """Certified ε ≥ ln(r_L) from B blocks drawn with common random numbers (δ-adjusted).

    Block b runs M(D) and M(D') `block_size` times each on the SAME random numbers (both
    inputs draw each chunk from one seed, different chunks from independent seeds), so the pairs
    (P_b, Q_b) of per-block hit rates are i.i.d. across blocks: for a block of a whole chunk
    however the two inputs' runs depend on each other inside it, for blocks sharing a chunk when
    its runs are independent pairs (docs/method.md, "Coupled blocks").
    E[P_b − δ − r·Q_b] = p − δ − r·q, so the one-sided t-test of "p − δ ≤ r·q" on the B
    differences rejects the true ratio with probability ≤ `level` (Student t with B − 1
    degrees of freedom; each block mean is a sum of thousands of runs, so it is near-normal —
    the batch-means method, Law & Kelton §9.5; the quantile is shaded by COUPLED_LEVEL_SHADE
    for what remains of the approximation). The bound r_L is the smallest root of Fieller's
    quadratic (Fieller 1954): every r below it is rejected. When the same noise usually puts
    both inputs' runs in or out of S together, P_b and Q_b move together and the bound is far
    tighter than any bound from independent samples of the same size (for Laplace's half-line
    about 13× fewer runs, for SVT events 50–300×). Returns −inf when P is not significantly
    above δ, and −inf (no claim) when Q is not significantly above 0 — the normal
    approximation cannot bound a ratio over nothing.
    Blocks run along the last axis; leading axes are independent replications.
    """
    P = np.asarray(blocks_p, dtype=float) / block_size - delta
    Q = np.asarray(blocks_q, dtype=float) / block_size
    B = P.shape[-1]
    if B < 2:
        return np.full(P.shape[:-1], -np.inf) if P.ndim > 1 else -math.inf
    t = float(student_t.isf(COUPLED_LEVEL_SHADE * level, B - 1))
    mp, mq = P.mean(axis=-1), Q.mean(axis=-1)
    dp, dq = P - mp[..., None], Q - mq[..., None]
    scale = t * t / (B * (B - 1))  # t² × (sample covariance of the block means)
    a = mq * mq - scale * (dq * dq).sum(axis=-1)
    b = -2.0 * (mp * mq - scale * (dp * dq).sum(axis=-1))
    c = mp * mp - scale * (dp * dp).sum(axis=-1)
    ok = (mp > 0) & (c > 0) & (a > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r_low = (-b - np.sqrt(np.maximum(b * b - 4 * a * c, 0.0))) / (2 * a)
        out = np.where(ok & (r_low > 0), np.log(np.where(ok & (r_low > 0), r_low, 1.0)), -np.inf)
    return float(out) if out.ndim == 0 else out


def expected_coupled_epsilon(p, q, row_variance, n_certify, blocks, delta, level):
    """The bound `coupled_epsilon_bound` is expected to give on n_certify runs per input in
    `blocks` blocks, for an event seen at rates p, q on a coupled pilot whose per-run
    variance of (1_S(M(D)) − δ)/(p − δ) − 1_S(M(D'))/q is `row_variance` (the delta method:
    Var ln(P̄/Q̄) ≈ row_variance/n). Used only to choose a certificate before certifying."""
    p = np.asarray(p, dtype=float) - delta
    q = np.asarray(q, dtype=float)
    t = float(student_t.isf(COUPLED_LEVEL_SHADE * level, max(blocks - 1, 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.log(p) - np.log(q)
        out = est - t * np.sqrt(np.asarray(row_variance, dtype=float) / n_certify)
    return np.where((p > 0) & (q > 0), out, -np.inf)


def wilson_bounds(k, n, z):
    """Wilson score interval (closed form) — a fast stand-in for Clopper–Pearson when PLANNING.

    Used only to rank candidate events on search data; certification always uses cp_lower and
    cp_upper. Returns (low, high).
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    z2 = z * z
    centre = (k + z2 / 2) / (n + z2)
    half = z * np.sqrt(np.maximum(k * (n - k) / n, 0.0) + z2 / 4) / (n + z2)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def expected_certified_epsilon(k_p, m_p, k_q, m_q, n_certify, delta, level, shrink_z=2.0):
    """The bound a fresh sample of size n_certify is expected to certify for an event seen
    k_p/m_p and k_q/m_q times on the search sample.

    The search rates are first shrunk `shrink_z` standard errors towards the unfavourable side,
    so that among thousands of candidate events the ones resting on a handful of lucky search
    hits are not preferred (the winner's curse). Then the certifying bound at `level` is
    approximated with Wilson intervals. Used only to choose events on search data.
    """
    p = wilson_bounds(k_p, m_p, shrink_z)[0]
    q = wilson_bounds(k_q, m_q, shrink_z)[1]
    z = _normal_quantile(float(level))
    p_low = wilson_bounds(p * n_certify, n_certify, z)[0]
    q_high = wilson_bounds(q * n_certify, n_certify, z)[1]
    return epsilon_bound(p_low, q_high, delta)


def expected_ratio_epsilon(k_p, m_p, k_q, m_q, n_certify, level, shrink_z=2.0):
    """Like `expected_certified_epsilon` for `ratio_epsilon_bound` at `level` (the event's whole
    share, not half): search rates shrunk as there, then a Wilson bound on π = p/(p + q) from
    the n_certify·(p + q) hits a certifying sample is expected to give."""
    p = wilson_bounds(k_p, m_p, shrink_z)[0]
    q = wilson_bounds(k_q, m_q, shrink_z)[1]
    seen = p + q > 0
    hits = np.where(seen, n_certify * (p + q), 1.0)  # 1: a placeholder where nothing is seen
    pi = p / np.where(seen, p + q, 1.0)
    pi_low = wilson_bounds(pi * hits, hits, _normal_quantile(float(level)))[0]  # < 1 for z > 0
    with np.errstate(divide="ignore"):
        return np.where(seen, np.log(pi_low) - np.log1p(-pi_low), -np.inf)


def expected_bound_and_method(k_p, m_p, k_q, m_q, n_certify, delta, level, shrink_z=2.0):
    """The better of the two certificates for an event, chosen on search counts only: returns
    (expected bound, True where the one-bound ratio test is expected to beat two bounds).
    `level` is per bound of the two-bound certificate; the ratio test gets 2·level. The ratio
    test needs δ = 0."""
    two = expected_certified_epsilon(k_p, m_p, k_q, m_q, n_certify, delta, level, shrink_z)
    if delta > 0:
        return two, np.zeros(np.shape(two), dtype=bool)
    ratio = expected_ratio_epsilon(k_p, m_p, k_q, m_q, n_certify, 2 * level, shrink_z)
    use_ratio = ratio > two
    return np.where(use_ratio, ratio, two), use_ratio


# The coupled certificate (`coupled_epsilon_bound`) is a t-test on block means: it is used only
# with at least this many blocks, each expected to hold at least this many hits under either
# input and this many runs where the two inputs disagree on the event (the runs that carry its
# variance), so that every block mean is near-normal...
MIN_COUPLED_BLOCKS = 64
MIN_COUPLED_HITS_PER_BLOCK = 50
# The planner (`expected_paired_bound_and_method`) plans the coupled t-test only for events
# expected to clear that bar by this factor: the pilot that decides (certify/pilot.py) counts
# an event on about one block's runs, where 50 disagreements carry a Poisson error of √50 ≈ 7,
# so an event planned right at the bar would be certified coupled on half the runs only. 1.3
# is two of those errors (docs/method.md, "Planning a threshold").
COUPLED_PLANNING_MARGIN = 1.3
# ...and blocks of at least this many runs: a chunk costs ~0.3 ms to dispatch, encode and count
# whatever its size, as much as drawing 10^4 Laplace values (smaller stages keep independent
# samples, which are cheap there anyway)
MIN_COUPLED_BLOCK_RUNS = 1 << 14


# A coupled stage draws fixed chunks (so a smaller stage draws a prefix of a larger one's runs)
# and counts them in segments; a block is a whole number of segments and may cross a chunk
# boundary. The block is rounded down to a whole number of grains (`_block_grain`), each at
# most 1/GRAINS_PER_BLOCK of the runs it aims for, so it keeps at least 7/8 of them.
GRAINS_PER_BLOCK = 8


def coupled_block_size(n: int, chunk_size: int, least: int = MIN_COUPLED_BLOCK_RUNS) -> int:
    """Runs per block of a coupled stage of n runs per input: a chunk, or less so that there
    are at least MIN_COUPLED_BLOCKS blocks, rounded down to a multiple of `_block_grain` (0: too
    small to couple, below `least` runs, or a chunk if that is less; samples that only tune
    thresholds pass a smaller `least`). docs/method.md, "Coupled blocks"."""
    aim = min(chunk_size, n // MIN_COUPLED_BLOCKS)
    if aim < min(least, chunk_size):
        return 0
    grain = _block_grain(aim, chunk_size)
    return aim // grain * grain


def _block_grain(aim: int, chunk_size: int) -> int:
    """The largest chunk_size/2^k at most aim/GRAINS_PER_BLOCK (1 where halving runs out of
    even numbers first)."""
    grain = chunk_size
    while grain > 1 and grain * GRAINS_PER_BLOCK > aim:
        grain = grain // 2 if grain % 2 == 0 else 1
    return grain


def coupled_segment(block: int, chunk_size: int) -> int:
    """Runs a coupled chunk is counted in: gcd(block, chunk), so that every chunk and every
    block is a whole number of segments (at least the block's grain, as both are multiples of
    it; a block of chunk_size/2^k runs is one segment)."""
    return math.gcd(block, chunk_size)


def paired_log_ratio_variance(k_p, k_q, k_both):
    """Var ln(k_p/k_q) when the two samples are paired run for run on common random numbers
    (row i of M(D) and of M(D') drawn from one seed): (d_p + d_q)/(k_p·k_q) by the delta method,
    where d_p = k_p − k_both and d_q = k_q − k_both count the rows in S under one input only and
    k_both those in S under both. Independent samples give (k_p + k_q)/(k_p·k_q) = 1/k_p + 1/k_q;
    when the same noise usually puts both runs in or out of S, d_p + d_q ≪ k_p + k_q. The
    disagreeing rows are counted one Poisson standard error (+1) high, so a threshold resting on
    a handful of them is not planned as if they were known exactly."""
    k_p, k_q, k_both = (np.asarray(x, dtype=float) for x in (k_p, k_q, k_both))
    d = np.maximum(k_p + k_q - 2 * k_both, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (d + np.sqrt(d) + 1.0) / (k_p * k_q)


def paired_variance_from_blocks(blocks_p, blocks_q):
    """Var ln(K_p/K_q) per threshold from B paired blocks (rows: blocks of equal size drawn by
    both inputs from one seed each; columns: thresholds), K = the counts summed over blocks.
    Blocks are i.i.d., so by the delta method Var ≈ B·Var_b(K_p,b/K_p − K_q,b/K_q) (batch
    means, with the sample variance over blocks; Law & Kelton §9.5). It is raised by one
    standard error of that sample variance (√(2/(B − 1)) of it) and by 1/(K_p·K_q), the
    `paired_log_ratio_variance` floor, so a threshold whose blocks happen to agree is not
    planned as if its ratio were exact; inf where an input has no hit."""
    bp, bq = (np.asarray(x, dtype=float) for x in (blocks_p, blocks_q))
    B = bp.shape[0]
    kp, kq = bp.sum(axis=0), bq.sum(axis=0)
    ok = (kp > 0) & (kq > 0) & (B > 2)
    if not np.any(ok):
        return np.full(kp.shape, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = bp / np.where(ok, kp, 1.0) - bq / np.where(ok, kq, 1.0)
        var = B * share.var(axis=0, ddof=1) * (1 + math.sqrt(2 / max(B - 1, 1)))
        return np.where(ok, var + 1.0 / (np.where(ok, kp, 1.0) * np.where(ok, kq, 1.0)),
                        np.inf)


def expected_paired_bound_and_method(k_p, k_q, m, n_certify, delta, level, shrink_z, variance,
                                     block=0, unpaired_shrink_z=None):
    """`expected_bound_and_method` for an event counted on m PAIRED runs per input (common random
    numbers) whose log-ratio estimate ln(k_p/k_q) has variance `variance`
    (`paired_log_ratio_variance` from joint counts, `paired_variance_from_blocks` from block
    counts): the estimate is shrunk `shrink_z` paired standard errors (not independent ones: on
    a paired sample a rare event's ratio is known far better than its two rates are), then the
    certificate is planned at n_certify as the better of the independent ones (from the shrunk
    rates) and, where a coupled certifying sample of `block` runs per block would hold
    MIN_COUPLED_HITS_PER_BLOCK hits and disagreements per block with COUPLED_PLANNING_MARGIN
    to spare (the pilot that decides measures them on few runs), the coupled t-test
    (`expected_coupled_epsilon`; the disagreements are read off the variance, which is
    (d_p + d_q)/(k_p·k_q) for d disagreeing runs). With δ > 0, or where an input has no hit,
    the independent plan is returned as it is, its rates shrunk `unpaired_shrink_z` standard
    errors (default `shrink_z`): a threshold without a paired estimate takes the independent
    shrink. Used only to choose events on search data."""
    independent_z = shrink_z if unpaired_shrink_z is None else unpaired_shrink_z
    k_p, k_q, variance = (np.asarray(x, dtype=float) for x in (k_p, k_q, variance))
    ok = (k_p > 0) & (k_q > 0) & np.isfinite(variance)
    if delta > 0 or not np.any(ok):
        return expected_bound_and_method(k_p, m, k_q, m, n_certify, delta, level, independent_z)
    kp, kq = np.where(ok, k_p, 1.0), np.where(ok, k_q, 1.0)
    se = np.sqrt(np.where(ok, variance, 0.0))
    p_s, q_s = kp / m * np.exp(-shrink_z * se / 2), kq / m * np.exp(shrink_z * se / 2)
    planned, ratio_paired = expected_bound_and_method(p_s * m, m, q_s * m, m, n_certify, 0.0,
                                                      level, 0.0)
    if block > 0:
        disagree = se * se * kp * kq
        per_block = np.minimum(np.minimum(kp, kq), disagree) * block / m
        n_blocks = -(-int(n_certify) // block)
        coupled = expected_coupled_epsilon(p_s, q_s, se * se * m, n_certify, n_blocks, 0.0,
                                           2 * level)
        clears = per_block >= MIN_COUPLED_HITS_PER_BLOCK * COUPLED_PLANNING_MARGIN
        planned = np.where(clears, np.maximum(planned, coupled), planned)
    if np.all(ok):
        return planned, ratio_paired
    # thresholds an input never hit: the independent plan (Wilson bounds handle a zero count)
    independent, ratio = expected_bound_and_method(k_p, m, k_q, m, n_certify, delta, level,
                                                   independent_z)
    return np.where(ok, planned, independent), np.where(ok, ratio_paired, ratio)


@lru_cache(maxsize=64)
def _normal_quantile(level: float) -> float:
    """z with P[N(0,1) > z] = level; cached because scipy's scalar call costs ~0.3 ms and the
    planner asks for the same few levels thousands of times."""
    return float(norm.isf(level))


def final_stage_alphas(alpha: float, n_stages: int) -> list[float]:
    """α-spending for a measurement run that certifies at its last stage only: earlier stages
    spend nothing (their fresh samples only choose and tune the last stage's events), the last
    spends all of α. Σ α_j = α, so the false-alarm rate is still ≤ α, but the one certificate
    that counts is as tight as a single pre-chosen event's (theory.md §2: split or Bonferroni)."""
    return [0.0] * (n_stages - 1) + [alpha]


def plug_in_epsilon(k_p, n_p, k_q, n_q, delta=0.0) -> float:
    """The point estimate ln((p̂ − δ)/q̂) of an event (not a bound)."""
    p = k_p / n_p if n_p else 0.0
    q = k_q / n_q if n_q else 0.0
    if p <= delta:
        return -math.inf
    if q == 0:
        return math.inf
    return math.log(p - delta) - math.log(q)


# How far above the claim `detectable_epsilon` looks before calling an event's mass too small to
# show any violation: e^-60 of the event's mass is below one expected hit for any sample size.
DETECTABLE_EPSILON_SPAN = 60.0


def detectable_epsilon(mass, n_p, n_q, claim, delta, level) -> float:
    """The smallest true ε that an event of probability `mass` under D (and (mass − δ)·e^{−ε}
    under D') would certify above `claim` with two Clopper–Pearson bounds at `level`, counted
    on n_p and n_q runs, were its counts to land on their expected values: roughly the
    violation such an event catches half the time (theory.md §2.11). ∞ when no ε would, i.e.
    when even an event never seen under D' could not be certified above the claim."""
    if not mass > delta or n_p <= 0 or n_q <= 0:
        return math.inf

    def margin(eps: float) -> float:
        expected_q = (mass - delta) * math.exp(-eps) * n_q
        return float(certified_epsilon(mass * n_p, n_p, expected_q, n_q, delta, level)) - claim

    top = claim + DETECTABLE_EPSILON_SPAN
    if margin(top) <= 0.0:
        return math.inf
    return float(brentq(margin, claim, top, xtol=1e-6))


def delta_lower_curve(k_p, k_q, n_p, n_q, epsilons, level):
    """Certified δ(ε) ≥ max over events S_t of p_L(S_t) − e^ε q_U(S_t) (theory.md §2), for every ε
    of the grid at once: if the CP bounds of all events hold, every point holds. `level` is per
    bound; with T events use α/(2T) for a joint confidence of 1 − α."""
    p_low = cp_lower(np.asarray(k_p), n_p, level)
    q_high = cp_upper(np.asarray(k_q), n_q, level)
    eps = np.asarray(epsilons, dtype=float)
    return np.max(p_low[None, :] - np.exp(eps)[:, None] * q_high[None, :], axis=1)


def epsilon_pvalue(k_p, n_p, k_q, n_q, epsilon, delta=0.0, fraction=0.5, ratio_test=False):
    """p-value of H0 "P(S) ≤ e^ε Q(S) + δ" on one event counted on fresh samples (StatDP's
    question, answered with the certified bound): the smallest α at which the Clopper–Pearson
    bound ε_LB, each side at fraction·α, exceeds ε (fraction = ½ for one pre-chosen event; an
    audit's witness uses its stage's share). With `ratio_test` the bound is
    `ratio_epsilon_bound` at 2·fraction·α. Found by bisection on log α; 1 when never."""
    def bound(a):
        if ratio_test:
            return float(ratio_epsilon_bound(k_p, k_q, min(2 * a * fraction, 0.5)))
        return float(certified_epsilon(k_p, n_p, k_q, n_q, delta, min(a * fraction, 0.5)))
    if bound(1.0 - 1e-12) <= epsilon:
        return 1.0
    lo, hi = -40.0, 0.0  # log10 α
    if bound(10 ** lo) > epsilon:
        return 10 ** lo
    for _ in range(60):
        mid = (lo + hi) / 2
        if bound(10 ** mid) > epsilon:
            hi = mid
        else:
            lo = mid
    return 10 ** hi
