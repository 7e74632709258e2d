"""Evidence in the mechanism's own terms (docs/method.md, "Evidence in the mechanism's terms")."""
import math

import numpy as np
import pytest

import dpverify
from dpverify.evidence import lower_bound_text, pair_text
from mechanisms_under_test.basic import make_randomized_response


def test_a_long_pair_is_abbreviated_without_hiding_where_it_differs():
    D = [1] * 100
    D_prime = list(D)
    D_prime[3], D_prime[97] = 0, 2
    text = pair_text(np.array(D, float), np.array(D_prime, float))
    assert len(text) < 200 and "(100 values)" in text
    assert "[3]=1" in text and "[97]=1" in text and "[3]=0" in text and "[97]=2" in text
    assert "array(" not in text


def test_a_short_pair_is_shown_whole():
    assert pair_text(np.array([0.0, 1.0]), [1, 1]) == "D=[0, 1]  D'=[1, 1]"


@pytest.mark.parametrize("bound, claim, shown", [(1.00003, 1.0, "1.00003"), (1.379, 1.0, "1.379"),
                                                 (0.99997, 1.0, "0.9999"),
                                                 (0.10549, 0.1, "0.1054")])
def test_a_certified_bound_is_rounded_down_and_told_apart_from_the_claim(bound, claim, shown):
    assert lower_bound_text(bound, claim) == shown


def test_a_lower_bound_is_never_written_above_itself():
    rng = np.random.default_rng(0)
    for bound in rng.uniform(0, 5, 2000):
        claim = float(np.round(bound, int(rng.integers(0, 4))))
        text = lower_bound_text(float(bound), claim)
        assert float(text) <= bound and (float(text) > claim) == (bound > claim)


def test_examples_give_each_outputs_frequency_under_both_inputs():
    """Binary randomized response at ε = 1: output 0 has probability e/(1 + e) = 0.731 on D = 0
    and 0.269 on D' = 1; the illustrative sample (2^17 runs) must show that, not a capped share."""
    result = dpverify.audit(make_randomized_response(1.0), samples=1 << 16, seed=0)
    w = result.witness
    top = w.examples[0]
    keep = math.e / (1 + math.e)
    assert 0 < w.examples_runs <= result.samples_per_side
    within = 4 * math.sqrt(keep * (1 - keep) / w.examples_runs)
    assert top["count_D"] / w.examples_runs == pytest.approx(keep, abs=within)
    assert top["count_D_prime"] / w.examples_runs == pytest.approx(1 - keep, abs=within)
    assert "% of runs on D vs" in result.summary()


@dpverify.mechanism(epsilon=0.5, pairs=[(0, 1)])
def yes_no(data, rng, size):
    """Randomized response on strings, over-claimed (true ε = 2)."""
    keep = rng.random(size) < math.exp(2) / (1 + math.exp(2))
    return np.where(keep == (data == 1), "yes", "no")


def test_string_outputs_are_shown_as_the_strings_they_are():
    result = dpverify.audit(yes_no, samples=1 << 14, seed=0)
    assert result.verdict == "violation"
    shown = [e["output"] for e in result.witness.examples]
    assert shown and set(shown) <= {"'yes'", "'no'"}
    assert "e.g. ()" not in result.witness.event


def test_continuous_outputs_are_grouped_by_shape_with_concrete_values():
    @dpverify.mechanism(epsilon=0.1, pairs=[(0.0, 1.0)])
    def loose_laplace(data, rng, size):
        return data + rng.laplace(0, 1, size)        # true ε = 1
    w = dpverify.audit(loose_laplace, samples=1 << 14, seed=0).witness
    text = w.examples[0]["output"]
    assert text.startswith("a number in ") and len(w.examples[0]["e.g."]) == 3
    low, high = map(float, text.removeprefix("a number in ").split("…"))
    assert all(low <= float(v) <= high for v in w.examples[0]["e.g."])   # typical, so inside


def _encoded(keys, struct):
    from types import SimpleNamespace
    return SimpleNamespace(keys=np.asarray(keys), struct=np.asarray(struct))


def test_outputs_that_favour_the_events_side_are_listed_first():
    """An event {0, 1, 2} seen 450 times on D and 310 on D′: output 1 (300 vs 100) and 2 (50 vs
    10) are evidence for D, output 0 (100 vs 200) for D′, so 0 comes last though frequent."""
    from dpverify.sampling.illustration import event_examples
    D = np.repeat([0, 1, 2, 9], [100, 300, 50, 550])
    Q = np.repeat([0, 1, 2, 9], [200, 100, 10, 690])
    examples = event_examples(D, _encoded(D, np.zeros_like(D)), D != 9,
                              _encoded(Q, np.zeros_like(Q)), Q != 9, outputs_D_prime=Q)
    assert [(e["output"], e["count_D"], e["count_D_prime"]) for e in examples] == [
        ("1", 300, 100), ("2", 50, 10), ("0", 100, 200)]


def test_patterns_with_released_values_are_grouped_into_ranges_with_counts_on_both_inputs():
    """SVT-like outputs (⊤/⊥ pattern, released value): groups are the patterns, the value a
    range that holds its middle 90%, the counts those of the pattern on each input, and the
    examples typical (near the median), not the first drawn."""
    from dpverify.sampling.illustration import event_examples
    rng = np.random.default_rng(0)

    def draw(n_first, n_second, n_out):
        outs = ([(True, float(v)) for v in rng.normal(3.0, 0.5, n_first)]
                + [(False, float(v)) for v in rng.normal(-1.0, 0.5, n_second)]
                + [(False, None)] * n_out)
        keys = np.arange(len(outs))               # every value distinct: no frequencies
        struct = np.array([0 if o[1] is not None else 1 for o in outs])
        hits = struct == 0
        return outs, _encoded(keys, struct), hits
    outs_D, enc_D, hits_D = draw(600, 200, 200)
    outs_Q, enc_Q, hits_Q = draw(100, 150, 750)
    examples = event_examples(outs_D, enc_D, hits_D, enc_Q, hits_Q, outputs_D_prime=outs_Q)
    top = examples[0]
    assert (top["count_D"], top["count_D_prime"]) == (600, 100)
    assert top["output"].startswith("(True, ")
    low, high = map(float, top["output"].removeprefix("(True, ").rstrip(")").split("…"))
    assert 1.9 < low < 2.4 and 3.6 < high < 4.1   # 3 ∓ 1.645·0.5
    assert all(abs(float(e.split(", ")[1].rstrip(")")) - 3.0) < 0.1 for e in top["e.g."])
    assert (examples[1]["count_D"], examples[1]["count_D_prime"]) == (200, 150)


def test_percentages_read_as_a_person_writes_them():
    from dpverify.evidence import percent
    assert [percent(c, 1000) for c in (0, 3, 31, 460, 996, 1000)] == [
        "0%", "0.3%", "3.1%", "46%", "99.6%", "100%"]
    assert percent(1, 0) == "n/a"
