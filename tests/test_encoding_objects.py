"""Encoding of string and other object outputs (grouped by distinct value), of masked outputs
(keys derived from X) and of integer arrays (X made on first read): the keys, skeletons and
numbers must be exactly those of encoding every output on its own, which is what the engine's
events and seeded results rest on; likewise the row hash's fast path must give its padded
definition's values. Speed is measured in scripts/memory.py, never here."""
import numpy as np
import pytest

from dpverify.sampling.encoding import (HASH_MIX, HASH_MULT, HASH_SHIFT_1, HASH_SHIFT_2, Encoded, encode,
                               encode_one, row_hash, row_words_padded)
from dpverify.errors import MechanismOutputError


def _one_by_one(outputs, exact_floats=False):
    """The defining encoding: every output encoded on its own (keys, struct, numbers)."""
    parts = [encode_one(o, i, 0, exact_floats) for i, o in enumerate(outputs)]
    return (np.array([p[1] for p in parts], dtype=np.int64),
            np.array([p[0] for p in parts], dtype=np.int64), [p[2] for p in parts])


def _assert_as_one_by_one(outputs, reference=None, exact_floats=False):
    n = len(outputs)
    enc, schema = encode(outputs, n, exact_floats=exact_floats)
    keys, struct, numbers = _one_by_one(list(outputs) if reference is None else reference,
                                        exact_floats)
    np.testing.assert_array_equal(enc.keys, keys)
    np.testing.assert_array_equal(enc.struct, struct)
    for i, num in enumerate(numbers):
        row = enc.X[i]
        np.testing.assert_array_equal(row[:len(num)], num)
        assert np.isnan(row[len(num):]).all()
    assert schema.form == "objects"
    return enc


def _ternary(n, seed=0):
    return np.random.default_rng(seed).random((n, 6)) > 0.5


def test_string_keys_are_exactly_the_one_by_one_keys():
    above = _ternary(400)
    cases = {
        "list of str": ["yes" if a else "no" for a in above[:, 0]],
        "numpy str 1-d": np.where(above[:, 0], "yes", "no"),
        "numpy str 2-d": np.where(above, "⊤", "⊥"),
        "numpy str 3-d": np.where(above, "ab", "c").reshape(400, 3, 2),
        "tuples of str": [tuple("⊤" if a else "⊥" for a in r) for r in above],
        "lists of str": [["⊤" if a else "⊥" for a in r] for r in above],
        "None or str": [None if a else "s" for a in above[:, 1]],
        "variable-length tuples": [(None,) * int(k) + ("x",) for k in above.sum(axis=1)],
        "ints and None": [int(k) if k else None for k in above.sum(axis=1)],
        "numpy ints in tuples": [(np.int64(k), None, int(k)) for k in above.sum(axis=1)],
        "object array": np.array(["yes" if a else "no" for a in above[:, 0]], dtype=object),
    }
    for name, outputs in cases.items():
        enc = _assert_as_one_by_one(outputs)
        # identical outputs share a key, distinct ones do not
        as_text = [repr(o.tolist() if isinstance(o, np.ndarray) else o) for o in outputs]
        assert len(np.unique(enc.keys)) == len(set(as_text)), name
        first = {}
        for k, t in zip(enc.keys.tolist(), as_text):
            assert first.setdefault(t, k) == k, name


def test_keys_of_python_objects_are_unchanged():
    """Values computed with the one-by-one encoding before outputs were grouped, with exact
    floats (a floating-point claim): a change here changes every seeded audit of a string or
    tuple output. Outputs without numbers encode the same as real values."""
    outputs = ["yes", "no", None, ("⊤", "⊥"), ("⊥", None, 2), (True, 1, 1.0)]
    assert encode(outputs, 6)[0].keys[:4].tolist() == encode(
        outputs, 6, exact_floats=True)[0].keys[:4].tolist()
    enc, _ = encode(outputs, 6, exact_floats=True)
    assert enc.keys.tolist() == [5922014229249829881, -8017733504283111031, 795947077872124424,
                                 -8714408286599932519, -1671819719388651522,
                                 -2894728771269429183]
    assert enc.struct.tolist() == [1849105998633062961, 4981010052180227644,
                                   -1508413682226225710, 5387640959532597914,
                                   1652911204786832082, -3031196332243617671]
    # a list encodes as the tuple of its items, alone or grouped with tuples
    mixed = [["⊤", "⊥"], ("⊤", "⊥")] * 3
    assert encode(mixed, 6)[0].keys.tolist() == [-8714408286599932519] * 6


@pytest.mark.parametrize("outputs", [
    [1, True] * 5,                     # 1 == True, encoded apart
    [1, 1.0] * 5,                      # 1 == 1.0
    [0.0, -0.0, None] * 5,             # 0.0 == -0.0, different bytes
    ["a", np.str_("a")] * 5,           # equal, different reprs (numpy 2)
    [(1, "a"), (True, "a"), (1.0, "a")] * 5,
    [("a",), (("a",),), [np.array([1, 2])]] * 5,   # nested: encoded one by one
])
@pytest.mark.parametrize("exact_floats", [False, True])
def test_grouping_equal_python_values_encodes_them_as_one_by_one(outputs, exact_floats):
    enc = _assert_as_one_by_one(outputs, exact_floats=exact_floats)
    keys = _one_by_one(outputs, exact_floats)[0]
    assert len(np.unique(enc.keys)) == len(np.unique(keys))


def test_numbers_are_real_values_unless_the_claim_covers_exact_floats():
    """1, 1.0, numpy's 1 and float32 1.0 are one value, −0.0 is 0.0, True is not a number;
    with exact floats (floating_point=True) ints, floats and the sign of zero stay apart. In
    tuples, as scalar outputs, and in float arrays of any width."""
    def distinct(outputs, **how):
        return len(set(encode(outputs, len(outputs), **how)[0].keys.tolist()))
    ones = [1, 1.0, np.int8(1), np.float32(1.0), np.float64(1.0)]
    assert distinct([(x, "a") for x in ones]) == 1
    assert distinct([(x, "a") for x in ones], exact_floats=True) == 2
    assert distinct([(0.0,), (-0.0,)]) == 1 and distinct([(0.0,), (-0.0,)], exact_floats=True) == 2
    assert distinct([(1,), (True,)]) == 2
    assert distinct(ones, batched=False) == 1
    assert distinct([0.0, -0.0], batched=False) == 1
    assert distinct([0.0, -0.0], batched=False, exact_floats=True) == 2
    zeros = np.array([[0.0, 1.0], [-0.0, 1.0]])
    assert distinct(zeros) == 1 and distinct(zeros, exact_floats=True) == 2
    as32, as64 = (encode(zeros.astype(t), 2)[0].keys for t in (np.float32, np.float64))
    np.testing.assert_array_equal(as32, as64)
    masked = np.ma.masked_array(zeros, mask=[[False, True], [False, True]])
    assert distinct(masked) == 1 and distinct(masked, exact_floats=True) == 2


def test_errors_name_the_first_bad_sample_as_before():
    bad = ["a"] * 10 + [object()] + ["b"] * 5 + [object()]
    with pytest.raises(MechanismOutputError, match="sample 10 is of unsupported type object"):
        encode(bad, len(bad))
    nan = [("a", 1.0)] * 5 + [("a", float("nan"))] * 3 + [("a", 2.0)]
    with pytest.raises(MechanismOutputError, match="sample 5 is NaN"):
        encode(nan, len(nan))
    with pytest.raises(MechanismOutputError, match="sample 0 is of unsupported type bytes_"):
        encode(np.array([b"a", b"b"]), 2)


def test_scalar_form_tuples_encode_like_batched_ones():
    outputs = [tuple("⊤" if a else "⊥" for a in r) for r in _ternary(100, 3)]
    np.testing.assert_array_equal(encode(outputs, 100, batched=False)[0].keys,
                                  encode(outputs, 100)[0].keys)


def test_tuples_with_floats_keep_their_numbers():
    rng = np.random.default_rng(4)
    outputs = [(None,) * int(k) + (float(v),) for k, v in zip(rng.integers(0, 4, 300),
                                                              rng.normal(size=300))]
    enc = _assert_as_one_by_one(outputs)
    assert enc.X.shape == (300, 1)
    np.testing.assert_array_equal(enc.X[:, 0], [o[-1] for o in outputs])
    assert len(np.unique(enc.struct)) == 4


def _masked(n, seed=5):
    rng = np.random.default_rng(seed)
    m = np.ma.MaskedArray(rng.normal(size=(n, 4)), mask=rng.random((n, 4)) < 0.5)
    m[1, 1], m[2, 0] = -0.0, np.inf
    m.mask[1, 1] = m.mask[2, 0] = False
    return m


def _masked_reference_keys(m):
    """The definition of a masked batch's keys: the row hash of [values as real numbers (−0.0
    as 0.0) with 0 where masked, the mask as 0.0/1.0]."""
    data = np.asarray(m.data, dtype=np.float64) + 0.0
    mask = np.ma.getmaskarray(m)
    return row_hash(np.concatenate([np.where(mask, 0.0, data), mask.astype(np.float64)], axis=1))


def test_masked_keys_are_unchanged_and_survive_take_concat_and_float32():
    m = _masked(500)
    enc, schema = encode(m, 500)
    assert schema.form == "array"
    reference = _masked_reference_keys(m)
    np.testing.assert_array_equal(enc.keys, reference)
    np.testing.assert_array_equal(enc.struct, row_hash(np.ma.getmaskarray(m)))
    np.testing.assert_array_equal(np.isnan(enc.X), np.ma.getmaskarray(m))

    fresh = encode(m, 500)[0]   # keys not yet hashed when split, joined and made float32
    a, b = fresh.take(slice(0, None, 2)), fresh.take(slice(1, None, 2))
    np.testing.assert_array_equal(a.keys, reference[::2])
    np.testing.assert_array_equal(b.take(np.arange(5)).keys, reference[1:11:2])
    joined = Encoded.concat([fresh.take(slice(0, 250)), fresh.take(slice(250, None))])
    joined.X = joined.X.astype(np.float32)
    np.testing.assert_array_equal(joined.keys, reference)
    assert joined.X.dtype == np.float32
    # a golden value (the batch [[1.5, ⊥], [3, -0.0]])
    small = np.ma.MaskedArray([[1.5, 2.0], [3.0, -0.0]], mask=[[False, True], [False, False]])
    assert encode(small, 2, exact_floats=True)[0].keys.tolist() == [3611950240416667993,
                                                                    6731962559599184161]
    positive = np.ma.MaskedArray([[1.5, 2.0], [3.0, 0.0]], mask=small.mask)
    assert encode(small, 2)[0].keys.tolist() == encode(positive, 2)[0].keys.tolist()


def test_integer_batches_make_X_when_read_with_the_same_values_and_keys():
    status = np.random.default_rng(6).integers(-1, 2, (300, 10)).astype(np.int8)
    enc, schema = encode(status, 300)
    assert (schema.dtype, schema.shape) == ("int", (10,))
    part = enc.take(slice(1, None, 3))
    np.testing.assert_array_equal(enc.keys, row_hash(status))
    np.testing.assert_array_equal(enc.X, status.astype(np.float64))
    assert enc.X.dtype == np.float64
    np.testing.assert_array_equal(part.X, status[1::3].astype(np.float64))
    np.testing.assert_array_equal(part.keys, row_hash(status)[1::3])
    again = encode(status, 300)[0]
    again.X = again.X.astype(np.float32)  # as the engine stores search samples
    np.testing.assert_array_equal(again.keys, row_hash(status))


def test_event_counts_of_string_outputs_match_their_integer_twin():
    """Grouped keys partition the outputs exactly as the integer coding of the same outcomes:
    every event on keys counts the same outputs."""
    codes = np.random.default_rng(7).integers(0, 5, 2000)
    words = np.array(["none", "one", "two", "three", "four"])
    for outputs in (words[codes], words[codes].tolist(),
                    [(w, None) for w in words[codes].tolist()]):
        keys = encode(outputs, 2000)[0].keys
        _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
        twin = encode(codes, 2000)[0].keys
        _, twin_inverse, twin_counts = np.unique(twin, return_inverse=True, return_counts=True)
        assert sorted(counts) == sorted(twin_counts)
        # the same partition of the samples
        assert len(set(zip(inverse.tolist(), twin_inverse.tolist()))) == len(counts)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.float64, np.bool_])
def test_row_hash_equals_its_zero_padded_definition(dtype):
    """The structured-view words of `row_hash` must give the padded definition's values for
    every row width (search and certifying chunks must agree on keys)."""
    rng = np.random.default_rng(2)
    for width in range(1, 27):
        rows = rng.integers(-3, 3, (500, width)).astype(dtype)
        b = rows.view(np.uint8).reshape(500, -1)
        h = np.full(500, np.uint64(-(-b.shape[1] // 8) * 8), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for w in row_words_padded(b):
                h = (h ^ w) * HASH_MULT
                h ^= h >> HASH_SHIFT_1
                h *= HASH_MIX
                h ^= h >> HASH_SHIFT_2
        np.testing.assert_array_equal(row_hash(rows), h.view(np.int64))
        # and distinct rows get distinct keys
        assert len(np.unique(row_hash(rows))) == len(np.unique(rows, axis=0))


def test_audits_of_one_law_spelled_two_ways_keep_the_false_alarm_promise():
    """Two 0-DP mechanisms whose outputs have the same law on both inputs, spelled differently:
    a vote in {−1, 0, 1} times (1 − 2·data) as floats (zero's sign follows the input), and a
    count returned as int under one input and float under the other inside a tuple. 40 seeded
    audits each; at most the 99% binomial quantile of the promised 5% may be false alarms (each
    was flagged on every seed when the sign of zero or int/float told the inputs apart)."""
    import dpverify
    from scipy.stats import binom

    @dpverify.mechanism(epsilon=0.5, pairs=[(0, 1)])
    def signed_vote(data, rng, size):
        return (1.0 - 2.0 * data) * rng.integers(-1, 2, size).astype(float)

    @dpverify.mechanism(epsilon=0.5, pairs=[(0, 1)])
    def spelled_count(data, rng, size):
        counts = rng.binomial(4, 0.5, size)
        return [("n", int(c) if data else float(c)) for c in counts]

    for mech in (signed_vote, spelled_count):
        alarms = sum(dpverify.audit(mech, samples=1 << 12, seed=seed, n_jobs=1,
                                    progress=False).verdict == "violation"
                     for seed in range(40))
        assert alarms <= binom.ppf(0.99, 40, 0.05), (mech.name, alarms)
        flagged = dpverify.audit(mech, samples=1 << 12, seed=0, n_jobs=1, progress=False,
                                 floating_point=True)
        assert flagged.verdict == "violation", mech.name  # exact floats: the spellings differ
