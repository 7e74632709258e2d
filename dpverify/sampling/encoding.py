"""Outputs → arrays the attacks can score.

Every batch of mechanism outputs becomes an `Encoded` batch:
- `keys`   int64 hash of the whole output (exact: two outputs share a key only if equal, up to a
           2^-64 hash collision — which merely merges two outputs into one event, still sound);
- `struct` int64 hash of the output's discrete skeleton: lengths, None (⊥) positions, bools,
           strings, and which atoms are numbers;
- `X`      float matrix of the output's numeric atoms in order (NaN where an output has fewer).

Any deterministic function of the output defines valid events, so the encoding never affects
soundness, only which violations are visible. But events compare encodings, so two outputs
that are the same value must encode alike: numbers are real values (−0.0 is 0.0, a Python or
scalar-output int is the float of its value) unless the claim covers exact floats
(`exact_floats`, from `floating_point=True`), where bit patterns stay apart. Hashes are stable across processes (no Python
`hash`), so search and certify chunks agree on keys.

Cost: numeric arrays are encoded without a Python loop. Other outputs (strings, None, tuples)
are encoded once per DISTINCT output and the results gathered for every sample: a numpy string
array is grouped by its rows' bytes, a list of strings, None, numbers or bools (or of
tuples/lists of those) through a dict keyed by the outputs themselves, for types whose Python
equality matches their encoding (numbers are real values, so 1 == 1.0 and 0.0 == -0.0 encode
alike; never numbers with bools: 1 == True; with `exact_floats` no floats). Outputs of
DP mechanisms take few distinct values, so this is the numeric path's cost plus one dict lookup
per output; the keys are those of encoding every output on its own. Anything else (floats
inside objects, nested containers, arrays in a list) is encoded output by output.
Memory: a masked batch's keys are hashed from `X` when first asked for, with no copy of the
outputs kept for them; replacing `X` (the engine stores search samples as float32) fixes the
keys first.
"""
from __future__ import annotations

import hashlib
import sys
from itertools import chain
from dataclasses import dataclass

import numpy as np

from ..errors import MechanismOutputError

# `row_hash`'s splitmix64-style mixing step for each 64-bit word w of a row, all mod 2^64,
# starting from h = the row's padded width in bytes:
#   h ← (h ^ w)·HASH_MULT;  h ← h ^ (h >> HASH_SHIFT_1);
#   h ← h·HASH_MIX;         h ← h ^ (h >> HASH_SHIFT_2)
HASH_MULT = np.uint64(0x9E3779B97F4A7C15)
HASH_MIX = np.uint64(0xBF58476D1CE4E5B9)
HASH_SHIFT_1, HASH_SHIFT_2 = np.uint64(31), np.uint64(29)


@dataclass(frozen=True)
class Schema:
    """What a batch looked like: 'array' (with dtype class and trailing shape) or 'objects'."""

    form: str
    dtype: str = ""
    shape: tuple = ()

    def describe(self) -> str:
        if self.form == "array":
            return f"{self.dtype} array with per-sample shape {self.shape}"
        return "Python objects (scalars, None, tuples/lists)"


class Encoded:
    """An encoded batch. `keys` may be given lazily: as the rows to hash (`key_rows`), or, for a
    masked batch (`masked_keys`), derived from X itself (`_masked_keys`). Certifying chunks whose
    events do not look at exact outputs then never pay for hashing. X may be lazy too (X=None,
    `x_rows`: an integer or bool batch, converted to float64 when X is first read): its float64
    copy is 8× an int8 batch, and events on keys alone never need it. `real_keys`: lazy keys
    hash float values as real numbers (float64, −0.0 as 0.0), done when they are first read,
    so that a chunk whose events never read keys pays nothing for it."""

    def __init__(self, keys, struct, X, key_rows=None, masked_keys=False, x_rows=None,
                 real_keys=False):
        self._keys = keys
        self._key_rows = key_rows
        self._masked_keys = masked_keys and keys is None
        self._real_keys = real_keys
        self.struct = struct
        self._X = X
        self._x_rows = x_rows if X is None else None

    # The getters never clear what they read (a batch may be read from two threads at once);
    # the setter, which the engine calls on search chunks it keeps, frees it.
    @property
    def X(self) -> np.ndarray:
        if self._X is None:
            self._X = self._x_rows.astype(np.float64)
        return self._X

    @X.setter
    def X(self, value):
        # lazy keys read the original X (masked) or the outputs (key_rows, often X itself):
        # hash them now, so the new X (e.g. float32) changes no key and frees the old one
        self.keys
        self._X, self._x_rows, self._key_rows, self._masked_keys = value, None, None, False

    @property
    def keys(self) -> np.ndarray:
        if self._keys is None:
            if self._masked_keys:
                self._keys = _masked_keys(self._X, self._real_keys)
            else:
                rows = self._key_rows
                if self._real_keys and rows.dtype.kind == "f":
                    rows = _real(rows.astype(np.float64, copy=False))
                self._keys = row_hash(rows)
        return self._keys

    def __len__(self):
        return len(self.struct)

    def column(self, j: int) -> np.ndarray:
        """Numeric coordinate j, NaN where an output has no such coordinate."""
        if j < self.X.shape[1]:
            return self.X[:, j]
        return np.full(len(self), np.nan)

    @staticmethod
    def concat(parts: list["Encoded"]) -> "Encoded":
        if len(parts) == 1:
            return parts[0]
        d = max(p.X.shape[1] for p in parts)
        lazy = all(p._keys is None for p in parts)
        if (lazy and all(p._masked_keys for p in parts)
                and all(p.X.shape[1] == d for p in parts)):  # keys stay derivable from X
            return Encoded(None, np.concatenate([p.struct for p in parts]),
                           np.concatenate([p.X for p in parts]), masked_keys=True,
                           real_keys=parts[0]._real_keys)
        keys = (None if lazy and not any(p._masked_keys for p in parts)
                else np.concatenate([p.keys for p in parts]))  # hashed before X is padded
        Xs = [np.pad(p.X, ((0, 0), (0, d - p.X.shape[1])), constant_values=np.nan)
              if p.X.shape[1] < d else p.X for p in parts]
        struct = np.concatenate([p.struct for p in parts])
        if keys is None:  # same schema: key rows share one width
            return Encoded(None, struct, np.concatenate(Xs),
                           key_rows=np.concatenate([p._key_rows for p in parts]),
                           real_keys=parts[0]._real_keys)
        return Encoded(keys, struct, np.concatenate(Xs))

    def take(self, idx) -> "Encoded":
        """The rows idx, as lazy as this batch (its keys and X are made when first read)."""
        keys = None if self._keys is None else self._keys[idx]
        key_rows = (self._key_rows[idx] if keys is None and self._key_rows is not None
                    else None)
        X = None if self._X is None else self._X[idx]
        x_rows = self._x_rows[idx] if X is None else None
        return Encoded(keys, self.struct[idx], X, key_rows=key_rows,
                       masked_keys=self._masked_keys, x_rows=x_rows, real_keys=self._real_keys)


def row_hash(rows: np.ndarray) -> np.ndarray:
    """Vectorised 64-bit hash of each row's bytes (splitmix-style mixing; loop over words only).

    The row's bytes are read as little-endian 64-bit words, the last one zero-padded, and each
    word is mixed into the running hash in place (the step is spelled out above HASH_MULT). The
    values are those of the plain "pad every row to a multiple of 8 bytes and mix its words"
    definition (`row_words_padded`); reading the words through a structured view instead of
    padding a copy makes a 10-byte row (SVT's ⊤/⊥ vector) about 4× cheaper to hash, which
    certifying chunks pay on every output.
    """
    n = rows.shape[0]
    b = np.ascontiguousarray(rows).view(np.uint8).reshape(n, -1)
    full, rem = divmod(b.shape[1], 8)
    words = (_row_words(b, full, rem) if rem and sys.byteorder == "little"
             else row_words_padded(b))
    return _mix_words(words, n, (full + (rem > 0)) * 8)


def _mix_words(words, n: int, width: int) -> np.ndarray:
    """`row_hash`'s mixing of each row's 64-bit words (an iterable of n-vectors, in order) into a
    hash seeded with the padded row width in bytes."""
    h = np.full(n, np.uint64(width), dtype=np.uint64)
    spare = np.empty(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for word in words:
            np.bitwise_xor(h, word, out=h)
            np.multiply(h, HASH_MULT, out=h)
            np.bitwise_xor(h, np.right_shift(h, HASH_SHIFT_1, out=spare), out=h)
            np.multiply(h, HASH_MIX, out=h)
            np.bitwise_xor(h, np.right_shift(h, HASH_SHIFT_2, out=spare), out=h)
    return h.view(np.int64)


def _masked_keys(X: np.ndarray, real: bool = False) -> np.ndarray:
    """The keys of a masked batch from its X (float64, NaN exactly where masked): the
    `row_hash` of the row [values with 0 where masked (−0.0 as 0.0 if `real`), then the mask
    as 0.0/1.0], built one column at a time instead of as an (n, 2d) float64 copy."""
    n, d = X.shape
    absent = np.isnan(X)

    def words():
        for j in range(d):
            column = np.where(absent[:, j], 0.0, X[:, j])
            if real:
                column += 0.0  # −0.0 + 0.0 is 0.0; every other value is unchanged
            yield column.view(np.uint64)
        for j in range(d):
            yield absent[:, j].astype(np.float64).view(np.uint64)
    return _mix_words(words(), n, 16 * d)


def _row_words(b: np.ndarray, full: int, rem: int) -> list[np.ndarray]:
    """The 64-bit words of each row of the byte matrix b, whose width is not a multiple of 8
    (rem > 0; little-endian machines): `full` whole words, then the `rem` trailing bytes as one
    zero-padded word, assembled from 4-, 2- and 1-byte fields of a structured view (no
    per-byte copies)."""
    n = b.shape[0]
    names = [f"w{j}" for j in range(full)]
    formats, offsets = ["<u8"] * full, [8 * j for j in range(full)]
    pieces, at = [], 0
    for size in (4, 2, 1):
        if rem - at >= size:
            names.append(f"t{at}")
            formats.append(f"<u{size}")
            offsets.append(8 * full + at)
            pieces.append((f"t{at}", at))
            at += size
    rec = b.reshape(-1).view(np.dtype({"names": names, "formats": formats, "offsets": offsets,
                                       "itemsize": b.shape[1]}))
    tail = np.zeros(n, dtype=np.uint64)
    for name, at in pieces:
        tail |= rec[name].astype(np.uint64) << np.uint64(8 * at)
    return [rec[f"w{j}"] for j in range(full)] + [tail]


def row_words_padded(b: np.ndarray) -> list[np.ndarray]:
    """The defining form of the row words that `row_hash` mixes: zero-pad each row of the byte
    matrix b to a multiple of 8 bytes (a copy only when its width is not one already) and read
    it as native 64-bit words, one n-vector per word position."""
    width = -(-b.shape[1] // 8) * 8
    if width != b.shape[1]:
        b = np.pad(b, ((0, 0), (0, width - b.shape[1])))
    return list(b.view(np.uint64).T)


def _stable_hash(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


def _flatten(o, skeleton: list, numbers: list, exact_floats: bool):
    """Append o's skeleton tokens and numeric atoms. A number is a real value ("n", −0.0 as
    0.0) unless `exact_floats`: then ints ("i") and floats ("f", sign of zero kept) differ."""
    if o is None:
        skeleton.append("N")
    elif isinstance(o, (bool, np.bool_)):
        skeleton.append("T" if o else "F")
    elif isinstance(o, (int, np.integer)):
        skeleton.append("i" if exact_floats else "n")
        numbers.append(float(o))
    elif isinstance(o, (float, np.floating)):
        skeleton.append("f" if exact_floats else "n")
        numbers.append(float(o) if exact_floats else float(o) + 0.0)
    elif isinstance(o, str):
        skeleton.append("s" + repr(o))
    elif isinstance(o, np.ndarray):
        skeleton.append(f"a{o.shape}(")
        for x in o.ravel().tolist():
            _flatten(x, skeleton, numbers, exact_floats)
        skeleton.append(")")
    elif isinstance(o, (tuple, list)):
        skeleton.append("(")
        for x in o:
            _flatten(x, skeleton, numbers, exact_floats)
        skeleton.append(")")
    else:
        raise TypeError(type(o).__name__)


def encode_one(o, i: int, start: int, exact_floats: bool = False) -> tuple[int, int, np.ndarray]:
    """(struct, key, numbers) of one output, sample `start + i`: the defining encoding of an
    object output. `encode` gives every object output exactly these values, however it groups
    equal outputs to encode them once; `i` and `start` only name the sample in an error.
    Numbers are real values unless `exact_floats` (`_flatten`)."""
    skeleton: list = []
    numbers: list = []
    try:
        _flatten(o, skeleton, numbers, exact_floats)
    except TypeError as exc:
        raise MechanismOutputError(
            f"sample {start + i} is of unsupported type {exc}: outputs may be numbers, bools, "
            "None (⊥), strings, or tuples/lists/arrays of those") from None
    sk = "".join(skeleton).encode()
    num = np.asarray(numbers, dtype=np.float64)
    return _stable_hash(sk), _stable_hash(sk + b"|" + num.tobytes()), num


def numeric_row(o, exact_floats: bool = False) -> np.ndarray | None:
    """The row a scalar-form output is keyed by when its chunk is all numbers and is stacked
    into one array (`_stack_scalar_outputs`, `_encode_numeric`), or None if it is not such an
    output: a bool; a number, as a float64 real value (an int too, unless `exact_floats`:
    then int64); a numeric numpy array, flat, its floats as float64 real values unless
    `exact_floats`."""
    if isinstance(o, _BOOLS):
        return np.array([o], dtype=bool)
    if isinstance(o, (int, np.integer)) and exact_floats:
        return np.array([o], dtype=np.int64)
    if isinstance(o, (int, float, np.integer, np.floating)):
        row = np.array([o], dtype=np.float64)
        return row if exact_floats else _real(row)
    if isinstance(o, np.ndarray) and o.dtype.kind in "fiub" and o.size:
        row = o.ravel()
        if row.dtype.kind == "f" and not exact_floats:
            row = _real(row.astype(np.float64))
        return row
    return None


def _numeric_codes(outputs, firsts, exact_floats: bool) -> dict:
    """{u: (key, numbers)} for the distinct outputs (u-th first sample firsts[u]) that
    `numeric_row` keys, with the keys the stacked chunk would give them (struct 0): rows of one
    dtype and width are hashed together."""
    by_layout: dict = {}
    for u, i in enumerate(firsts):
        row = numeric_row(outputs[i], exact_floats)
        if row is not None:
            by_layout.setdefault((row.dtype.str, row.size), []).append((u, row))
    codes = {}
    for entries in by_layout.values():
        rows = np.stack([row for _, row in entries])
        for (u, row), key in zip(entries, row_hash(rows)):
            codes[u] = key, row.astype(np.float64)
    return codes


def _encode_objects(outputs, start: int, groups, exact_floats: bool,
                    scalar_form: bool = False) -> Encoded:
    """Encode each distinct output once. `groups` = (ids, firsts): sample i is distinct output
    ids[i], whose first sample is firsts[ids[i]] (firsts ascending), or None to encode every
    sample on its own. Errors name the first bad sample, as encoding every one would. In the
    `scalar_form`, an output a chunk of numbers would have stacked (`numeric_row`) gets the
    struct (0) and key it would have had there, so that chunks with and without a ⊥, a string
    or another rare output encode it alike."""
    n = len(outputs)
    ids, firsts = groups if groups is not None else (None, range(n))
    m = len(firsts)
    keys = np.empty(m, dtype=np.int64)
    struct = np.empty(m, dtype=np.int64)
    numeric = _numeric_codes(outputs, firsts, exact_floats) if scalar_form else {}
    rows = []
    for u, i in enumerate(firsts):
        if u in numeric:
            struct[u] = 0
            keys[u], num = numeric[u]
        else:
            struct[u], keys[u], num = encode_one(outputs[i], int(i), start, exact_floats)
        rows.append(num)
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=m)
    d = int(lengths.max(initial=0))
    X = np.full((m, d), np.nan)
    present = np.arange(d)[None, :] < lengths[:, None]
    if d:
        X[present] = np.concatenate(rows)
    if ids is not None:
        keys, struct, X, present = keys[ids], struct[ids], X[ids], present[ids]
    _raise_on_nan(np.isnan(X) & present, start)
    return Encoded(keys, struct, X)


_STRINGS = (str, np.str_)
_BOOLS = (bool, np.bool_)


def _exact_atoms(types: set, exact_floats: bool) -> bool:
    """Whether Python equality between values of these types implies equal encodings: None,
    strings (str or numpy str, not both: their reprs differ), and either bools or numbers
    (never both: True == 1, encoded T vs a number). Numbers are integers and floats as real
    values (1 == 1.0 and 0.0 == −0.0, encoded alike); with `exact_floats` integers only
    (encoded apart from floats, and −0.0 apart from 0.0)."""
    strings = bools = numbers = 0
    for t in types:
        if t in _STRINGS:
            strings += 1
        elif t in _BOOLS:
            bools = 1
        elif t is int or issubclass(t, np.integer):
            numbers = 1
        elif not exact_floats and (t is float or issubclass(t, np.floating)):
            numbers = 1
        elif t is not type(None):
            return False
    return strings <= 1 and bools + numbers <= 1


def _distinct_outputs(outputs: list, exact_floats: bool):
    """(ids, firsts) grouping a list of outputs into distinct ones through a dict, when every
    output is an atom `_exact_atoms` accepts or a tuple/list of such atoms (a list and a tuple
    of equal items encode alike); None otherwise."""
    types = set(map(type, outputs))
    containers = types & {tuple, list}  # exactly these: a subclass may redefine equality
    atoms = types - containers
    if containers:
        items = (outputs if not atoms else (o for o in outputs if type(o) in containers))
        atoms |= set(map(type, chain.from_iterable(items)))
    if not _exact_atoms(atoms, exact_floats):
        return None
    if list in containers:
        outputs = [tuple(o) if type(o) is list else o for o in outputs]
    table: dict = {}
    setdefault = table.setdefault
    ids = np.fromiter((setdefault(o, len(table)) for o in outputs), dtype=np.int64,
                      count=len(outputs))
    return ids, np.unique(ids, return_index=True)[1]


def _distinct_rows(arr: np.ndarray):
    """(ids, firsts) grouping a numpy string array's samples by their bytes (exact: equal bytes,
    equal strings), found by hashing the rows and checking every row against its group's
    first; None if two distinct rows ever shared a hash."""
    n = arr.shape[0]
    b = np.ascontiguousarray(arr).view(np.uint8).reshape(n, -1)
    _, firsts, ids = np.unique(row_hash(b), return_index=True, return_inverse=True)
    ids = ids.reshape(-1)
    order = np.argsort(firsts, kind="stable")  # number the groups by first occurrence
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    ids, firsts = rank[ids], firsts[order]
    if not np.array_equal(b, b[firsts[ids]]):
        return None
    return ids, firsts


def _raise_on_nan(nan_mask: np.ndarray, start: int):
    bad_rows = nan_mask.reshape(len(nan_mask), -1).any(axis=1)
    if bad_rows.any():
        i = int(np.argmax(bad_rows))
        raise MechanismOutputError(
            f"sample {start + i} is NaN: a mechanism must return numbers; check for 0/0, "
            "log(0) or an unset value")


def _array_schema(arr: np.ndarray, prefix: str = "") -> Schema:
    kind = {"f": "float", "i": "int", "u": "int", "b": "bool"}.get(arr.dtype.kind)
    return Schema("array", prefix + kind, tuple(arr.shape[1:]))


def _real(values: np.ndarray) -> np.ndarray:
    """Float values as real numbers: −0.0 becomes 0.0 (a copy only where a zero occurs)."""
    return values + 0.0 if np.any(values == 0) else values


def _encode_masked(arr: np.ma.MaskedArray, start: int, exact_floats: bool) -> Encoded:
    """A masked array is the vectorised form of outputs with ⊥/None entries: masked = absent.

    The mask pattern is the skeleton; the unmasked values are the numeric coordinates, kept at
    their positions (NaN where masked), as real values unless `exact_floats`.
    """
    n = arr.shape[0]
    data = np.asarray(arr.data, dtype=np.float64).reshape(n, -1)
    mask = np.ma.getmaskarray(arr).reshape(n, -1)
    _raise_on_nan(np.isnan(data) & ~mask, start)
    X = np.where(mask, np.nan, data)
    struct = row_hash(mask)
    # keys: the hash of [data with 0 where masked, mask as floats], derived from X on demand
    return Encoded(None, struct, X, masked_keys=True, real_keys=not exact_floats)


def encode(outputs, size: int, start: int = 0, batched: bool = True,
           exact_floats: bool = False) -> tuple[Encoded, Schema]:
    """Encode one chunk of `size` outputs whose first sample has global index `start`.

    Numbers are compared as real values: −0.0 is 0.0, an int is the float of its value (in
    Python objects and scalar outputs; a numeric array keeps its dtype, which must be the same
    in every run), a float32 is its value. With `exact_floats` (a floating-point claim) float
    bit patterns stay distinct, and ints differ from floats. A NaN output raises.

    Raises MechanismOutputError for a wrong count, NaN, or an unsupported type.
    """
    if not batched:
        return _encode_scalar_form(outputs, size, start, exact_floats)
    if isinstance(outputs, np.ndarray) and outputs.ndim == 0:
        raise MechanismOutputError(
            f"the batched mechanism returned a single value for size={size}: return `size` "
            "outputs with the sample on the first axis, or drop the `size` parameter")
    try:
        n = len(outputs)
    except TypeError:
        raise MechanismOutputError(
            f"the batched mechanism returned {type(outputs).__name__}, not a sequence of {size} "
            "outputs") from None
    if n != size:
        raise MechanismOutputError(
            f"asked for size={size} outputs, the mechanism returned {n}; a batched mechanism "
            "must return exactly `size` outputs (first axis = sample)")
    if isinstance(outputs, np.ma.MaskedArray) and outputs.dtype.kind in "fiub":
        return _encode_masked(outputs, start, exact_floats), _array_schema(outputs, "masked ")
    if isinstance(outputs, np.ndarray) and outputs.dtype.kind in "fiub":
        return _encode_numeric(outputs, n, start, exact_floats), _array_schema(outputs)
    if (isinstance(outputs, np.ndarray) and not isinstance(outputs, np.ma.MaskedArray)
            and outputs.dtype.kind in "US" and outputs.dtype.itemsize and n):
        # numpy strings: grouped without a Python loop
        return (_encode_objects(outputs, start, _distinct_rows(outputs), exact_floats),
                Schema("objects"))
    objs = list(outputs)
    return (_encode_objects(objs, start, _distinct_outputs(objs, exact_floats), exact_floats),
            Schema("objects"))


def _encode_scalar_form(outputs: list, size: int, start: int,
                        exact_floats: bool) -> tuple[Encoded, Schema]:
    """A chunk of a scalar-form mechanism's outputs (one call per run): all numbers, or arrays
    of one shape, are stacked and encoded as one array; any other mix output by output, each
    number or array keyed as a stacked chunk keys it (`_encode_objects`). Chunks may differ in
    which of the two they are, so every chunk has the schema "objects"."""
    stacked = _stack_scalar_outputs(outputs, exact_floats)
    if isinstance(stacked, np.ndarray):
        return _encode_numeric(stacked, size, start, exact_floats), Schema("objects")
    objs = list(outputs)
    return (_encode_objects(objs, start, _distinct_outputs(objs, exact_floats), exact_floats,
                            scalar_form=True), Schema("objects"))


def _encode_numeric(arr: np.ndarray, n: int, start: int, exact_floats: bool) -> Encoded:
    """A numeric array's outputs: one skeleton, keys hashed from each row's bytes. Float rows
    are keyed as real values (float64, −0.0 as 0.0) unless `exact_floats`; integer and bool
    rows by their own bytes (cheap: SVT's int8 rows), X converted when first read. Keys are
    hashed only when first read (`Encoded.keys`)."""
    if arr.dtype.kind == "f":
        _raise_on_nan(np.isnan(arr), start)
    flat = arr.reshape(n, -1)
    struct = np.broadcast_to(np.int64(0), (n,))  # one skeleton: a read-only view, no copy
    real = not exact_floats
    if flat.dtype == np.float64:
        return Encoded(None, struct, flat, key_rows=flat, real_keys=real)
    return Encoded(None, struct, None, key_rows=flat, x_rows=flat, real_keys=real)


def _is_number(o) -> bool:
    return isinstance(o, (bool, int, float, np.bool_, np.integer, np.floating))


def _stack_scalar_outputs(outputs: list, exact_floats: bool = False):
    """Scalar-form outputs: numbers become one array (float64 of their values where any is not
    a bool, unless `exact_floats`, so that 1 and 1.0 are one output; with `exact_floats` ints
    and floats together stay objects, keyed apart); anything else stays a list of objects."""
    if outputs and all(_is_number(o) for o in outputs):
        arr = np.asarray(outputs)
        if arr.dtype.kind in "iu" and not exact_floats:
            arr = arr.astype(np.float64)
        mixed = exact_floats and arr.dtype.kind == "f" and not all(
            isinstance(o, (float, np.floating)) for o in outputs)  # ints stay apart from floats
        if arr.dtype.kind in "fiub" and not mixed:
            return arr
    if outputs and all(isinstance(o, np.ndarray) and o.dtype.kind in "fiub" for o in outputs):
        shapes = {o.shape for o in outputs}
        if len(shapes) == 1:
            return np.stack(outputs)
    return outputs
