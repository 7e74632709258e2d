"""dpverify.libraries.diffprivlib: claims and pairs read from diffprivlib objects, seeding from
the engine's rng (reproducible, same distribution), and end-to-end audits of a correct Laplace
and of tools.mean at their claims and at half of them."""
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("diffprivlib")

from diffprivlib import mechanisms as M  # noqa: E402
from diffprivlib import models, tools  # noqa: E402
from diffprivlib.mechanisms.transforms import RoundedInteger  # noqa: E402

import dpverify  # noqa: E402
from dpverify.errors import DpVerifyError, InvalidPairsError  # noqa: E402
from dpverify.libraries import diffprivlib as dpl  # noqa: E402


def without_seconds(result):
    d = result.as_dict()
    d.pop("seconds", None)
    return d


# ------------------------------------------------------------------------- claims ---

@pytest.mark.parametrize("inst, claim", [
    (M.Laplace(epsilon=0.7, sensitivity=2.0), (0.7, 0.0)),
    (M.Laplace(epsilon=0.7, delta=0.01, sensitivity=1.0), (0.7, 0.01)),
    (M.GaussianAnalytic(epsilon=1.5, delta=1e-3, sensitivity=1.0), (1.5, 1e-3)),
    (M.GaussianDiscrete(epsilon=0.5, delta=1e-4), (0.5, 1e-4)),
    (M.LaplaceBoundedNoise(epsilon=1.0, delta=0.1, sensitivity=1.0), (1.0, 0.1)),
    (M.Geometric(epsilon=0.3), (0.3, 0.0)),
    (M.Uniform(delta=0.25, sensitivity=1.0), (dpl.UNIFORM_EPSILON, 0.25)),
])
def test_claim_is_read_from_the_instance(inst, claim):
    m = dpl.from_mechanism(inst)
    assert (m.epsilon, m.delta) == pytest.approx(claim)
    assert not m.batched and m.randomness == "rng"


def test_tool_claim_is_the_epsilon_passed():
    m = dpl.from_tool(tools.mean, np.array([0.0, 1.0]), 0.8, bounds=(0.0, 1.0))
    assert (m.epsilon, m.delta) == (0.8, 0.0)


# -------------------------------------------------------------------------- pairs ---

def test_bounded_pairs_are_at_the_sensitivity_inside_the_bounds():
    m = dpl.from_mechanism(M.LaplaceBoundedDomain(epsilon=1, sensitivity=1.5, lower=-2, upper=6))
    for a, b in m.pairs:
        assert abs(a - b) == pytest.approx(1.5)
        assert -2 <= min(a, b) and max(a, b) <= 6
    touched = {v for pair in m.pairs for v in pair}
    assert -2 in touched and 6 in touched  # one pair against each bound
    assert any(-2 < min(p) and max(p) < 6 for p in m.pairs)  # and one in the middle


def test_integer_and_narrow_bounds():
    geo = dpl.from_mechanism(M.GeometricTruncated(epsilon=1, sensitivity=2, lower=0, upper=9))
    assert all(isinstance(v, int) and 0 <= v <= 9 for p in geo.pairs for v in p)
    assert all(abs(a - b) == 2 for a, b in geo.pairs)
    narrow = dpl.from_mechanism(M.LaplaceTruncated(epsilon=1, sensitivity=5, lower=0, upper=2))
    assert narrow.pairs == [(0.0, 2.0)]
    assert dpl.from_mechanism(M.Laplace(epsilon=1, sensitivity=3)).pairs == [(0.0, 3.0)]


def test_exponential_pairs_move_each_candidate_by_at_most_the_sensitivity():
    m = dpl.from_mechanism(M.Exponential(epsilon=1, sensitivity=2, utility=[0, 1, 5]))
    gaps = [np.abs(np.subtract(a, b)) for a, b in m.pairs]
    assert all(g.max() <= 2 + 1e-12 for g in gaps) and any(g.max() == 2 for g in gaps)
    mono = dpl.from_mechanism(M.Exponential(epsilon=1, sensitivity=1, utility=[0, 1, 2],
                                            monotonic=True))
    for a, b in mono.pairs:  # a monotonic utility moves all candidates the same way
        d = np.subtract(b, a)
        assert (d >= 0).all() or (d <= 0).all()


def test_utility_drives_the_exponential_output():
    fn = dpl.from_mechanism(M.Exponential(epsilon=1, sensitivity=1, utility=[0, 0])).fn
    rng = np.random.default_rng(0)
    assert {int(fn((0.0, 100.0), rng)) for _ in range(50)} == {1}
    assert {int(fn((100.0, 0.0), rng)) for _ in range(50)} == {0}


def test_label_and_categorical_pairs():
    assert dpl.from_mechanism(M.Binary(epsilon=1, value0="a", value1="b")).pairs == [("a", "b")]
    cat = dpl.from_mechanism(M.ExponentialCategorical(
        epsilon=1, utility_list=[("a", "b", 1), ("a", "c", 2), ("b", "c", 1)]))
    assert cat.pairs[0] == ("a", "c")  # the farthest values first
    assert {frozenset(p) for p in cat.pairs} == {frozenset("ab"), frozenset("ac"),
                                                 frozenset("bc")}


def test_tool_pairs_replace_one_record_by_a_bound():
    data = np.array([0.2, 0.5, 1.0])
    m = dpl.from_tool(tools.mean, data, 1.0, bounds=(0.0, 1.0))
    assert len(m.pairs) == 2
    for d, d2 in m.pairs:
        assert len(d2) == len(d) and np.count_nonzero(d != d2) == 1
        assert set(d2[d != d2]) <= {0.0, 1.0}
    hist = dpl.from_tool(tools.histogram, data, 1.0, bounds=(0.0, 1.0), bins=4)
    assert all(abs(len(d) - len(d2)) == 1 for d, d2 in hist.pairs)  # add / remove one
    assert any(len(d) == 0 and list(d2) == [1.0] for d, d2 in hist.pairs)  # the empty corner


def test_model_pairs_change_one_row_and_one_gets_a_label_no_other_row_has():
    X, y = np.array([[0.0], [0.0], [1.0], [1.0]]), np.array([0, 0, 1, 1])
    m = dpl.from_tool(models.GaussianNB, (X, y), 1.0, bounds=(0.0, 1.0))
    for (a, b), (a2, b2) in m.pairs:
        assert np.count_nonzero((a != a2).any(axis=1) | (b != b2)) == 1
    classes = [set(np.unique(b2)) for (_, _), (_, b2) in m.pairs]
    assert classes.count({0, 1}) == len(m.pairs) - 1
    assert {0, 1} < classes[-1]  # the corner: a class of one row, which no other row has


def test_gaussian_nb_releases_its_class_set_on_the_unseen_label_corner():
    """diffprivlib's GaussianNB reads its classes from y, so relabelling one row with a label no
    other row has changes how many classes it releases: ε is infinite on that pair (and the
    model is fitted for real, which a scikit-learn too new for diffprivlib would break)."""
    X, y = np.array([[0.0], [0.0], [1.0], [1.0]]), np.array([0, 0, 1, 1])
    m = dpl.from_tool(models.GaussianNB, (X, y), 1.0, bounds=(0.0, 1.0))
    corner = dpverify.audit(m, pairs=[m.pairs[-1]], samples=1 << 8, seed=0, n_jobs=1)
    assert corner.verdict == "violation" and corner.witness.support_mismatch
    assert len(corner.witness.D[1]) == len(corner.witness.D_prime[1])  # one row relabelled


@pytest.mark.parametrize("make", [
    lambda: dpl.from_mechanism(M.Vector(epsilon=1, function_sensitivity=1, dimension=2)),
    lambda: dpl.from_mechanism(M.Laplace(epsilon=1, sensitivity=0)),
    lambda: dpl.from_mechanism(RoundedInteger(M.Laplace(epsilon=1, sensitivity=1))),
    lambda: dpl.from_tool(tools.mean, np.array([0.0, 1.0]), 1.0),  # no bounds
    lambda: dpl.from_tool(models.LogisticRegression, (np.zeros((2, 1)), np.array([0, 1])), 1.0),
])
def test_mechanisms_without_honest_pairs_ask_for_them(make):
    with pytest.raises(InvalidPairsError, match="pairs="):
        make()


def test_not_a_diffprivlib_mechanism():
    with pytest.raises(DpVerifyError, match="from_tool"):
        dpl.from_mechanism(object())


# ------------------------------------------------------------------------ seeding ---

def test_same_rng_same_outputs_and_the_instance_is_untouched():
    inst = M.Snapping(epsilon=1, sensitivity=1, lower=0, upper=4)  # draws getrandbits
    m = dpl.from_mechanism(inst)
    fn = pickle.loads(pickle.dumps(m.fn))  # what loky workers receive
    a = [fn(1.0, rng) for rng in [np.random.default_rng(7)] for _ in range(20)]
    b = [fn(1.0, rng) for rng in [np.random.default_rng(7)] for _ in range(20)]
    assert a == b and len(set(a)) > 1
    assert dpl.generator_kind(inst) == "system"  # still the library's secure generator


def test_engine_system_random_getrandbits():
    r = dpl.EngineSystemRandom(np.random.default_rng(1))
    bits = [r.getrandbits(k) for k in (1, 7, 52, 64, 100) for _ in range(200)]
    assert all(0 <= v for v in bits)
    assert max(r.getrandbits(3) for _ in range(200)) == 7
    assert r.getrandbits(0) == 0


@pytest.mark.parametrize("inst, dist", [
    (M.Laplace(epsilon=0.5, sensitivity=1.0), stats.laplace(scale=2.0)),
    (M.Gaussian(epsilon=1.0, delta=0.01, sensitivity=1.0),
     stats.norm(scale=np.sqrt(2 * np.log(1.25 / 0.01)))),
    (M.Staircase(epsilon=1.0, sensitivity=1.0), None),
])
def test_seeded_outputs_follow_the_library_distribution(inst, dist):
    fn = dpl.from_mechanism(inst).fn
    rng = np.random.default_rng(11)
    seeded = np.array([fn(0.0, rng) for _ in range(20000)])
    if dist is not None:  # the analytic law the instance documents
        assert stats.kstest(seeded, dist.cdf).pvalue > 1e-3
    else:  # the library's own generator, seeded independently
        own = M.Staircase(epsilon=1.0, sensitivity=1.0, random_state=5)
        shipped = np.array([own.randomise(0.0) for _ in range(20000)])
        assert stats.ks_2samp(seeded, shipped).pvalue > 1e-3


def test_threads_keep_their_own_copies():
    fn = dpl.from_mechanism(M.Laplace(epsilon=1, sensitivity=1)).fn

    def draw(seed, out):
        rng = np.random.default_rng(seed)
        out[seed] = [fn(0.0, rng) for _ in range(3000)]

    together = {}
    threads = [threading.Thread(target=draw, args=(s, together)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    alone = {}
    draw(1, alone), draw(2, alone)
    assert together == alone


# ---------------------------------------------------------------------- end to end ---

def test_audit_is_reproducible_and_depends_on_the_seed():
    m = dpl.from_mechanism(M.Laplace(epsilon=1, sensitivity=1))
    first = dpverify.audit(m, samples=1 << 13, seed=3)
    again = dpverify.audit(m, samples=1 << 13, seed=3)
    assert without_seconds(first) == without_seconds(again)
    threaded = dpverify.audit(m, samples=1 << 13, seed=3, backend="threading")
    assert without_seconds(threaded) == without_seconds(first)
    other = dpverify.audit(m, samples=1 << 13, seed=4)
    w1, w2 = first.witness.as_dict(), other.witness.as_dict()
    assert (w1["count_D"], w1["count_D_prime"]) != (w2["count_D"], w2["count_D_prime"])


def test_laplace_passes_at_its_claim_and_is_flagged_at_half():
    m = dpl.from_mechanism(M.Laplace(epsilon=1, sensitivity=1))
    assert dpverify.audit(m, samples=1 << 14, seed=0).verdict == "pass"
    half = dpverify.audit(m, samples=1 << 14, seed=0, epsilon=0.5)
    assert half.verdict == "violation"
    assert 0.5 < half.epsilon_lower_bound <= 1.0


def test_tools_mean_passes_at_its_claim_and_is_flagged_at_half():
    m = dpl.from_tool(tools.mean, np.array([0.0, 0.0, 0.0, 1.0]), 1.0, bounds=(0.0, 1.0))
    assert dpverify.audit(m, samples=1 << 12, seed=0).verdict == "pass"
    half = dpverify.audit(m, samples=1 << 12, seed=0, epsilon=0.5)
    assert half.verdict == "violation"
    assert 0.5 < half.epsilon_lower_bound <= 1.0


# ------------------------------------------------------------------------ packaging ---

def test_import_does_not_load_diffprivlib():
    code = ("import sys, dpverify.libraries.diffprivlib; "
            "assert 'diffprivlib' not in sys.modules and 'sklearn' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_diffprivlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "diffprivlib", None)  # `import diffprivlib` now fails
    with pytest.raises(DpVerifyError, match=r"pip install 'dpverify\[libraries\]'"):
        dpl.from_mechanism(object())
