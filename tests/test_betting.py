"""The anytime-valid test by betting (docs/theory.md §2.12, dpverify/certify/betting.py,
dpverify/pipeline/betting.py): its arithmetic, its false-alarm rate under stopping rules that
try to exploit it, its allocation of runs, and its detection figures against an oracle."""
import math

import numpy as np
import pytest

import dpverify
from dpverify.attacks.bets import Offer
from dpverify.attacks.events import Candidate
from dpverify.certify import betting
from dpverify.pipeline.betting import BettingTest, Stream
from dpverify.sampling.encoding import encode


def test_wealth_factor_is_the_product_of_per_round_payoffs():
    rng = np.random.default_rng(0)
    x, y = rng.random(500) < 0.3, rng.random(500) < 0.2
    eps, delta, lam = 0.4, 0.01, 0.3
    direct = np.sum(np.log1p(lam * (x - math.exp(eps) * y - delta)))
    counts = betting.joint_counts(x, y)
    assert counts.sum() == 500
    assert betting.log_wealth_factor(counts, lam, eps, delta) == pytest.approx(direct)


def test_planned_bet_is_zero_where_the_claim_holds_and_positive_where_it_fails():
    # P(S) = 0.3, Q(S) = 0.1 on 10,000 independent rounds: ln 3 ≈ 1.10
    rates = betting.outcome_rates(3000, 1000, None, 10_000)
    bet_low, growth_low = betting.planned_bets(rates, 10_000, 0.5, 0.0, 2.0)
    bet_high, growth_high = betting.planned_bets(rates, 10_000, 1.5, 0.0, 2.0)
    assert bet_low > 0 and growth_low > 0
    assert bet_low <= betting.largest_bet(0.5, 0.0)
    assert bet_high == 0 and growth_high == 0


def test_step_down_bound_needs_every_claim_below_it_rejected():
    grid = np.array([0.1, 0.2, 0.3, 0.4])
    assert betting.step_down_bound(grid, [True, True, False, True]) == 0.2
    assert betting.step_down_bound(grid, [False, True, True, True]) == -math.inf
    assert betting.step_down_bound(grid, [True] * 4) == 0.4


class _Threshold:
    """A score model of a scalar output: the output itself."""
    kind = "half-line"

    def score(self, enc):
        return enc.X[:, 0]

    def fast_hits(self, enc, sign, threshold):
        return None

    def describe(self, sign, threshold):
        return f"output {'≥' if sign > 0 else '≤'} {threshold:g}"


def _offer(threshold, rates, rounds=2000):
    event = Candidate(0, 0, _Threshold(), 1, threshold, float("nan"), (0, 1, 0, 1))
    return Offer(event, np.asarray(rates, float), rounds, 0.01)


def _laplace_rows(rng, n, eps):
    """n rounds of Laplace(0, 1/ε) on D = 0 and on D' = 1, on shared noise (tight at ε)."""
    noise = rng.laplace(0, 1 / eps, n)
    return encode(noise, n)[0], encode(noise + 1, n)[0]


def _tight_tail_offer(rng, eps, believed):
    """A bet on {y ≥ t} with P = M(D′ = 1), Q = M(D = 0), t ≥ 1: exactly tight at e^ε for
    Laplace(1/ε) noise, planned as if its ratio were e^believed (an over-optimistic bettor)."""
    rates = betting.outcome_rates(0.3 * 2000, 0.3 * 2000 / math.exp(believed), None, 2000)
    event = Candidate(0, 1, _Threshold(), 1, 1.0 + rng.random(), float("nan"), (0, 1, 0, 1))
    return Offer(event, rates, 2000, 1.0)


def test_adversarial_stopping_keeps_false_alarms_under_alpha():
    """On an exactly tight Laplace (ε = 1), a bettor stakes the most it may on a tight event
    every round, planned as if its ratio were e^3, and stops at the first round its wealth
    reaches 1/α: 1000 seeded runs of 24 rounds of 64 runs. Ville's inequality promises a rate
    of at most α. The same rounds, tested the naive way (stop at the first round whose
    cumulative payoff has a z-score above 1.645, as if that round's sample had been fixed in
    advance), alarm far more often: the set-up does exploit peeking, and the test resists it."""
    eps, alpha, runs, rounds, rows = 1.0, 0.05, 1000, 24, 64
    alarms = naive = 0
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        test = BettingTest(eps, 0.0, alpha)
        offer = _tight_tail_offer(rng, eps, believed=3 * eps)
        counts = np.zeros(4)
        peeked = False
        for _ in range(rounds):
            test.place([offer])
            d, d_prime = _laplace_rows(rng, rows, eps)
            test.settle({0: (d, d_prime)})
            counts += betting.joint_counts(offer.event.hits(d_prime), offer.event.hits(d))
            z = betting.payoffs(eps + 1 / 64 * max(eps, 0.05), 0.0)  # the first grid claim
            n, mean = counts.sum(), (counts * z).sum() / counts.sum()
            sd = math.sqrt(max((counts * z * z).sum() / n - mean ** 2, 1e-12))
            peeked |= mean / (sd / math.sqrt(n)) > 1.645
            if test.violation:
                break
        alarms += test.violation
        naive += peeked
    from statsmodels.stats.proportion import proportion_confint
    low, _ = proportion_confint(alarms, runs, alpha=0.10, method="beta")  # one-sided 95%
    assert low <= alpha, (alarms, runs)
    assert naive > 2 * alpha * runs, naive


def test_step_down_bound_stays_below_the_true_epsilon():
    """Laplace with true ε = 1 claimed at 0.2: the over-optimistic bettor of the test above
    keeps betting for 40 rounds, every claim of the grid tested at once. The certified bound
    (the step-down over the grid) must exceed the true ε in at most α of 600 seeded runs (at
    most the binomial 99% quantile of α), while reaching well above the claim most of the
    time (the grid claims between 0.2 and 1 are false and get rejected)."""
    from scipy.stats import binom
    alpha, runs = 0.05, 600
    above, bounds = 0, []
    for seed in range(runs):
        rng = np.random.default_rng(10_000 + seed)
        test = BettingTest(0.2, 0.0, alpha)
        offer = _tight_tail_offer(rng, 1.0, believed=3.0)
        for _ in range(40):
            test.place([offer])
            test.settle({0: _laplace_rows(rng, 64, 1.0)})
        bounds.append(test.lower_bound())
        above += test.lower_bound() > 1.0
    assert above <= binom.ppf(0.99, runs, alpha), above
    assert np.median(bounds) > 0.6, np.median(bounds)


def test_bets_against_a_violation_reach_the_threshold():
    """The same bets against Laplace with ε = 2 claimed at 1 prove the violation."""
    rng = np.random.default_rng(1)
    test = BettingTest(1.0, 0.0, 0.05)
    offer = _tight_tail_offer(rng, 2.0, believed=2.0)
    for _ in range(40):
        test.place([offer])
        test.settle({0: _laplace_rows(rng, 64, 2.0)})
        if test.violation:
            break
    assert test.violation
    assert 1.0 < test.lower_bound() < 2.0   # certified above the claim, below the true ε


@dpverify.mechanism(epsilon=0.2, pairs=[((0, 0), (0, 1)), ((5, 0), (5, 1)), ((0, 0), (1, 0))])
def _leaks_on_one_pair(data, rng, size):
    """Laplace of scale 1/0.35 on the first entry of the input (true ε 0.35 on the pair that
    changes it, claimed 0.2); the other two pairs change only the second entry, which the
    mechanism ignores, so no bet can win on them."""
    return data[0] + rng.laplace(0, 1 / 0.35, size)


def test_hopeless_pairs_receive_fewer_runs_than_the_leaking_one():
    """Runs follow the bets (`BettingTest.rows_for`): on 5 seeds the violation is found, and
    each pair of equal inputs got fewer runs than the leaking pair (a fixed allocation would
    give all three the same search runs)."""
    for seed in range(5):
        r = dpverify.audit(_leaks_on_one_pair, seed=seed, n_jobs=1, progress=False,
                           proof_only=True)
        assert r.verdict == "violation" and r.witness.certificate == dpverify.result.BETTING
        hopeless_a, hopeless_b, leaking = r.runs_per_pair
        assert max(hopeless_a, hopeless_b) < leaking, r.runs_per_pair


def test_progress_shows_the_evidence_so_far():
    from dpverify.progress import Progress
    bar = Progress("m", 3, enabled=False)
    bar.show_evidence(12.25, 40.0)
    assert "evidence 12.2 of the 40 a violation needs" in bar.line()


# ---- detection against an oracle that knows the best pair and event -----------------------

def _oracle_runs(p, q, claim, alpha=0.05):
    """Runs (both inputs) an oracle needs that certifies one pre-chosen event with rates p, q
    (arrays over candidate events) at its expected counts by the conditional ratio test at
    confidence 1 − alpha, its median case: min over events of 2·n, n found for every event at
    once by bisection on log n, written out with scipy."""
    from scipy.stats import beta
    p, q = np.asarray(p, float).ravel(), np.asarray(q, float).ravel()
    can = p > q * np.exp(claim)                        # only these can ever certify
    p, q = p[can], q[can]

    def certifies(n):
        k_p, k_q = np.round(n * p), np.round(n * q)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = beta.ppf(alpha, k_p, k_q + 1)      # Clopper–Pearson lower bound on the share
            return np.nan_to_num(np.log(share / (1 - share)), nan=-np.inf) > claim

    low, high = np.full(p.shape, np.log(2.0)), np.full(p.shape, np.log(1e10))
    reachable = certifies(np.exp(high))
    for _ in range(32):
        mid = (low + high) / 2
        ok = certifies(np.exp(mid))
        high, low = np.where(ok, mid, high), np.where(ok, low, mid)
    return float(2 * np.exp(high[reachable]).min())


def _median_runs(mech, seeds=range(5)):
    results = [dpverify.audit(mech, seed=s, progress=False, proof_only=True) for s in seeds]
    assert all(r.verdict == "violation" for r in results)
    return float(np.median([r.samples for r in results]))


def test_laplace_is_caught_within_ten_times_the_oracles_runs():
    """Laplace of scale 1 (true ε = 1) claimed at 0.5 on (0, 1): the oracle bets on the best
    half-line {y ≤ t} with exact rates p = F(t), q = F(t − 1)."""
    from mechanisms_under_test.basic import make_laplace
    t = np.linspace(-6, 4, 2001)
    cdf = lambda x: np.where(x < 0, 0.5 * np.exp(x), 1 - 0.5 * np.exp(-x))  # noqa: E731
    oracle = _oracle_runs(cdf(t), cdf(t - 1), 0.5)
    assert 100 < oracle < 400   # about 170 runs: the event {y ≤ 0} at p = ½, q = ½e^{−1}
    assert _median_runs(make_laplace(1.0, claim=0.5)) <= 10 * oracle


def test_rnm3_is_caught_within_ten_times_the_oracles_runs():
    """ReportNoisyMax3 (the max of 5 answers + Lap(20), claimed 0.1, true 0.25) on its
    declared pairs: the oracle knows every pair's exact law of the max,
    P(max ≤ t) = Π_i F((t − q_i)/20), and bets on the best half-line of the best pair."""
    from mechanisms_under_test import ZOO
    mech = ZOO["rnm3"]
    t = np.linspace(-100, 150, 501)
    cdf = lambda x: np.where(x < 0, 0.5 * np.exp(x), 1 - 0.5 * np.exp(-x))  # noqa: E731
    ps, qs = [], []
    for a, b in mech.pairs:
        below_a = np.prod([cdf((t - v) / 20) for v in a], axis=0)
        below_b = np.prod([cdf((t - v) / 20) for v in b], axis=0)
        for p, q in ((below_a, below_b), (below_b, below_a),          # {max ≤ t}, both orders
                     (1 - below_a, 1 - below_b), (1 - below_b, 1 - below_a)):  # {max > t}
            ps.append(p)
            qs.append(q)
    oracle = _oracle_runs(np.concatenate(ps), np.concatenate(qs), 0.1)
    assert 5_000 < oracle < 40_000
    assert _median_runs(mech) <= 10 * oracle


def test_audits_stopped_at_random_points_keep_the_false_alarm_promise():
    """Ordinary audits of an exactly tight binary randomized response (ε = 1 claimed at 1),
    each stopped by a Ctrl-C at a random run count (log-uniform over 2^8–2^15, mostly during
    search): whatever was proved by then is the verdict. 200 seeded audits; at most the 99%
    binomial quantile of the promised 5% may be false alarms."""
    from dataclasses import replace
    from scipy.stats import binom
    from mechanisms_under_test.basic import make_randomized_response
    tight = make_randomized_response(1.0)
    alarms, stopped = 0, 0
    for seed in range(200):
        cap = float(np.exp(np.random.default_rng(seed).uniform(np.log(256), np.log(1 << 15))))
        state = {"runs": 0}

        def stops(data, rng, size, state=state, cap=cap):
            state["runs"] += size
            if state["runs"] > cap:
                state["runs"] = -math.inf   # one Ctrl-C, then the illustration may draw
                raise KeyboardInterrupt
            return tight.fn(data, rng, size)

        r = dpverify.audit(replace(tight, fn=stops), samples=1 << 12, seed=seed, n_jobs=1,
                           progress=False)
        stopped += r.interrupted
        alarms += r.verdict == "violation"
    assert stopped >= 100                      # most audits were cut short
    assert alarms <= binom.ppf(0.99, 200, 0.05), alarms


def test_the_wealth_picture_reads_as_the_verdict():
    """A violation the bets proved is drawn outside (red), its wealth path ending at or above
    1/α_bet; an audit cut short before any proof keeps the betting witness, drawn inside."""
    from dataclasses import replace
    from dpverify.interfaces.figures import figure_data
    from mechanisms_under_test.basic import make_laplace
    broken = dpverify.audit(make_laplace(1.0, claim=0.5), seed=0, progress=False,
                            proof_only=True)
    data = figure_data(broken)["witness"]
    assert broken.verdict == "violation" and data["outside"]
    assert data["wealth_path"][-1][1] >= data["threshold"]
    tight = make_laplace(1.0)
    state = {"runs": 0}

    def stops(data, rng, size):
        state["runs"] += size
        if state["runs"] > 3000:
            state["runs"] = -math.inf
            raise KeyboardInterrupt
        return tight.fn(data, rng, size)

    cut = dpverify.audit(replace(tight, fn=stops), seed=0, progress=False)
    assert cut.interrupted and cut.verdict == "pass"
    assert cut.witness.certificate == dpverify.result.BETTING
    assert not figure_data(cut)["witness"]["outside"]


def test_a_stream_whose_record_underflows_gets_no_share_and_rounds_still_settle():
    """A pair and order whose bets lost so much that e^(loss) underflows to 0 weighs nothing
    in the next round's shares: the round is placed without it (no division by a zero total),
    and a round that wins far past the largest float still settles to a finite log-wealth."""
    test = BettingTest(1.0, 0.0, 0.05)
    rng = np.random.default_rng(0)
    offer = _tight_tail_offer(rng, 1.0, believed=3.0)
    test.streams[(offer.event.pair, offer.event.direction)] = Stream(log_gain=-1e4)
    test.place([offer])
    assert test.placed == []
    fresh = _tight_tail_offer(rng, 1.0, believed=3.0)
    test.streams.clear()
    test.place([fresh])
    n = 4096  # every row of D' above the threshold, none of D: a gross, lucky win
    d_prime = encode(np.full(n, 10.0), n)[0]
    d = encode(np.full(n, -10.0), n)[0]
    test.settle({0: (d, d_prime)})
    assert np.isfinite(test.log_wealth[0]) and test.log_wealth[0] > 700
