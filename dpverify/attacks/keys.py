"""Per-output likelihood ratios of discrete outputs, whole or in part.

- `KeyLikelihoodRatio`: discrete outputs (indices, ⊤/⊥ vectors, tuples) ordered by their
  smoothed plug-in ratio (n_D(o) + ½)/(n_D'(o) + ½);
- `DiscretePartRatio`: the same ratio over the few-valued coordinates of a mixed output (⊤/⊥
  flags beside released values), whose whole outputs never repeat;
- `PartsLikelihoodRatio`: that ratio plus the ratio of which other coordinates are present
  (exact for independent parts).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..sampling.encoding import Encoded, row_hash
from .base import MAX_COORDINATES, ScoreModel
from .ratios import bin_index, log_ratio_by_value, lookup_log_ratio

FEW_KEYS = 8  # a discrete event listing at most this many outputs is counted by key equalities
FEW_COLUMN_VALUES = 16  # a coordinate with at most this many values is part of the discrete part
MAX_EXAMPLES = 4096  # describe events by example outputs only when there are at most this many


@dataclass
class KeyLikelihoodRatio(ScoreModel):
    """s(o) = the smoothed ln n_D(o)/n_D'(o) of o's key, 0 for a key not seen while learning."""

    keys: np.ndarray          # sorted int64 output keys seen while learning
    log_ratio: np.ndarray     # smoothed ln n_D(o)/n_D'(o) per key
    examples: dict = field(default_factory=dict)  # key → a readable example output
    counts: tuple = ()        # (n_D(o), n_D'(o)) per key on the learning half, for the loss view
    kind: str = "discrete likelihood ratio"
    subject = "output"        # what the keys are of, for `describe`

    def privacy_loss(self, sign: int) -> dict:
        """Plug-in privacy-loss distribution L = ln p(o)/q(o) under the favoured input (sign +1:
        D), from the learning half of the search sample: an estimate, not a bound. "of" names
        what o is: the whole output, or for `DiscretePartRatio` its discrete part, whose loss
        is that of a post-processing and so a lower view of the output's."""
        c_p, c_q = self.counts if sign > 0 else self.counts[::-1]
        seen = c_p > 0
        with np.errstate(divide="ignore"):
            loss = np.log(c_p[seen] / c_p.sum()) - np.log(c_q[seen] / max(c_q.sum(), 1))
        order = np.argsort(loss)
        probability = (c_p[seen] / c_p.sum())[order]
        return {"loss": loss[order].tolist(), "probability": probability.tolist(),
                "of": self.subject}

    def keys_of(self, enc: Encoded) -> np.ndarray:
        """The key each output is ordered by: here the whole output's."""
        return enc.keys

    def score(self, enc):
        return lookup_log_ratio(self.keys, self.log_ratio, self.keys_of(enc))

    def fast_hits(self, enc: Encoded, sign: int, threshold: float):
        """The event {sign·s ≥ t} as key equalities instead of a key search per output: the same
        event, several times cheaper when it holds (or leaves out) at most FEW_KEYS outputs, as
        the best events of few-valued outputs do (SVT, noisy max). None otherwise."""
        with np.errstate(invalid="ignore"):
            chosen = sign * self.log_ratio >= threshold
        unseen_in = sign * 0.0 >= threshold   # a key not seen while learning scores 0
        listed = self.keys[~chosen] if unseen_in else self.keys[chosen]
        if len(listed) > FEW_KEYS:
            return None
        keys = self.keys_of(enc)
        hit = np.zeros(len(enc), dtype=bool)
        for k in listed:
            hit |= keys == k
        return ~hit if unseen_in else hit

    def describe(self, sign, threshold):
        chosen = sign * self.log_ratio >= threshold
        n = int(chosen.sum())
        strongest_first = self.keys[chosen][np.argsort(-sign * self.log_ratio[chosen])]
        shown = [self.examples[k] for k in strongest_first[:5] if k in self.examples]
        if n == 1 and shown:
            text = f"{self.subject} is {shown[0]}"
        else:
            text = f"{self.subject} is one of {n} discrete values, ordered by likelihood ratio"
            if shown:
                text += " (e.g. " + "; ".join(shown) + (" …" if n > len(shown) else "") + ")"
        if sign * 0.0 >= threshold:
            text += ", or a value never seen while searching"
        return text


@dataclass
class DiscretePartRatio(KeyLikelihoodRatio):
    """The per-output likelihood ratio of a mixed output's DISCRETE PART: the few-valued
    coordinates (flags, ⊤/⊥ answers, counts; absent = its own value), the continuous ones
    ignored. A function of the output, so any event of it is an event of the output; for a
    product of a discrete and a continuous mechanism (SVT34Parallel: SVT4's ⊤/⊥ answers beside
    SVT3's released values) it orders the discrete mechanism's outputs exactly, where the
    whole-output key never repeats and the naive-Bayes binned ratio treats dependent ⊤/⊥
    answers as independent. Each coordinate's value is read as the nearest value seen while
    learning (midpoint edges), so float32 search data and float64 certifying data get the
    same keys."""

    columns: tuple = ()       # the few-valued coordinates
    edges: tuple = ()         # per column: midpoints between its learned values
    kind: str = "discrete-part likelihood ratio"

    @property
    def subject(self) -> str:
        return f"discrete part ({_columns_text(self.columns)}, – = absent)"

    def keys_of(self, enc: Encoded) -> np.ndarray:
        return _discrete_part_keys(enc, self.columns, self.edges)


@dataclass
class PartsLikelihoodRatio(ScoreModel):
    """A mixed output's two parts, scored apart and summed: the discrete part's per-output
    ratio (`DiscretePartRatio`) plus the ratio of the other coordinates' absent pattern (which
    of them are released: SVT3's ⊤ positions beside SVT4's answers). Exact in the two parts'
    ratios when they are independent (SVT34Parallel: separate noise), where one key over both
    rarely repeats and the binned ratio splits the discrete part into independent bins. The
    other coordinates' values are left out: binned per coordinate they add more learning noise
    than ratio at the tail thresholds these events sit at (SVT3's releases carry Lap(c/ε₂)
    noise)."""

    discrete: DiscretePartRatio
    patterns: np.ndarray       # sorted int64 hashes of the other coordinates' absent pattern
    pattern_ratio: np.ndarray  # smoothed ln ratio of each pattern
    rest_columns: tuple
    kind: str = "parts likelihood ratio"

    def score(self, enc):
        rest = lookup_log_ratio(self.patterns, self.pattern_ratio,
                                _absent_pattern(enc, self.rest_columns))
        return self.discrete.score(enc) + rest

    def describe(self, sign, threshold):
        rel = "≥" if sign > 0 else "≤"
        columns = _columns_text(self.discrete.columns)
        return (f"log-likelihood ratio of the discrete part ({columns})"
                f" + that of which other coordinates are present {rel} {sign * threshold:.4g}")


def _columns_text(columns, most: int = 12) -> str:
    """"output[10, 11, …]": the coordinates a part model reads, for `describe`."""
    more = ", …" if len(columns) > most else ""
    return f"output[{', '.join(map(str, columns[:most]))}{more}]"


def _absent_pattern(enc: Encoded, columns) -> np.ndarray:
    """A hash of which of the coordinates `columns` each output lacks (NaN)."""
    return row_hash(np.isnan(enc.X[:, list(columns)]))


def _discrete_part_keys(enc: Encoded, columns, edges) -> np.ndarray:
    """Row keys of the coded discrete part: per column the index of the nearest learned value,
    len(values) where absent (NaN), hashed as one int8 row."""
    code = np.empty((len(enc), len(columns)), dtype=np.int8)
    for i, (j, e) in enumerate(zip(columns, edges)):
        x = enc.column(j)
        code[:, i] = np.where(np.isnan(x), len(e) + 1, bin_index(e, x))
    return row_hash(code)


def _readable(enc: Encoded, i: int) -> str | None:
    """Output i's numbers, or None when it has none (a string, bool or None output, which the
    encoding keeps only as a hash: the witness's examples show those as they are)."""
    x = enc.X[i]
    x = x[~np.isnan(x)]
    if not len(x):
        return None
    return "(" + ", ".join(f"{v:.4g}" for v in x[:10]) + (", …" if len(x) > 10 else "") + ")"


def outputs_repeat(a: Encoded, b: Encoded, probe: int = 4096) -> bool:
    """Discrete enough for a per-output ratio: at most a quarter of the outputs are distinct
    (checked on a probe first, so continuous outputs are never hashed in full)."""
    head = np.concatenate([a.take(slice(0, probe)).keys, b.take(slice(0, probe)).keys])
    if len(np.unique(head)) > len(head) / 4:
        return False
    return len(np.unique(np.concatenate([a.keys, b.keys]))) <= (len(a) + len(b)) / 4


def learn_key_ratio(a: Encoded, b: Encoded) -> KeyLikelihoodRatio:
    """`KeyLikelihoodRatio` of whole outputs, learned on (a ~ M(D), b ~ M(D'))."""
    learned = log_ratio_by_value(a.keys, b.keys)
    keys = learned.values
    both = Encoded.concat([a, b])
    first = np.unique(learned.inverse, return_index=True)[1]
    examples = {}
    if both.X.shape[1] <= 16 and len(keys) <= MAX_EXAMPLES:
        examples = {int(keys[u]): _readable(both, i) for u, i in zip(range(len(keys)), first)}
        examples = {k: v for k, v in examples.items() if v is not None}
    return KeyLikelihoodRatio(keys, learned.log_ratio, examples,
                              (learned.counts_a, learned.counts_b))


def _few_valued_columns(a: Encoded, b: Encoded, probe: int):
    """The coordinates taking 1..FEW_COLUMN_VALUES values on a probe of each input's first
    `probe` outputs, each with the midpoints between its values; and how many were probed."""
    d = min(a.X.shape[1], b.X.shape[1], MAX_COORDINATES)
    head = np.concatenate([a.X[:probe, :d], b.X[:probe, :d]])
    columns, edges = [], []
    for j in range(d):
        col = head[:, j]
        values = np.unique(col[~np.isnan(col)])
        if 0 < len(values) <= FEW_COLUMN_VALUES:
            columns.append(j)
            edges.append((values[1:] + values[:-1]) / 2)
    return tuple(columns), tuple(edges), d


def learn_discrete_part_ratio(a: Encoded, b: Encoded,
                              probe: int = 4096) -> DiscretePartRatio | None:
    """`DiscretePartRatio` of a mixed output: its coordinates that take at most
    FEW_COLUMN_VALUES values on a probe of each input's first `probe` outputs, when at least
    one other coordinate takes more (outputs that are all few-valued repeat whole and get
    `learn_key_ratio`) and the coded parts repeat (at most a quarter distinct). None else."""
    columns, edges, d = _few_valued_columns(a, b, probe)
    if not columns or len(columns) == d:
        return None
    learned = log_ratio_by_value(_discrete_part_keys(a, columns, edges),
                                 _discrete_part_keys(b, columns, edges))
    keys = learned.values
    if not 2 <= len(keys) <= (len(a) + len(b)) / 4:
        return None
    examples = {}
    if len(keys) <= MAX_EXAMPLES:
        both = np.concatenate([a.X[:, list(columns)], b.X[:, list(columns)]])
        first = np.unique(learned.inverse, return_index=True)[1]
        examples = {int(keys[u]): "(" + ", ".join("–" if np.isnan(v) else f"{v:.4g}"
                                                   for v in both[i][:12]) + ")"
                    for u, i in enumerate(first)}
    return DiscretePartRatio(keys, learned.log_ratio, examples,
                             (learned.counts_a, learned.counts_b), columns=columns, edges=edges)


def learn_parts_ratio(a: Encoded, b: Encoded,
                      discrete: DiscretePartRatio) -> PartsLikelihoodRatio | None:
    """`PartsLikelihoodRatio`: `discrete` plus the smoothed ratio of the other coordinates'
    absent patterns; None when those never differ (nothing to add)."""
    rest = tuple(j for j in range(min(a.X.shape[1], b.X.shape[1])) if j not in discrete.columns)
    learned = log_ratio_by_value(_absent_pattern(a, rest), _absent_pattern(b, rest))
    if len(learned.values) < 2:
        return None
    return PartsLikelihoodRatio(discrete, learned.values, learned.log_ratio, rest)
