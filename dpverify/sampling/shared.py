"""Inputs that several pairs share, drawn once per certifying pass and counted for each pair
(docs/method.md, "Inputs shared by several pairs").

Neighbouring pairs are often built around one input (the all-ones database of most sparse-vector
pairs, each pair also listed reversed). A pass that counts events of several such pairs draws
that input once: each pair still sees i.i.d. runs of each of its inputs, and the runs of its two
inputs are still independent, or still drawn from common seeds where the pair is coupled, so
every certificate holds as before; only the events of different pairs are counted on dependent
samples, which the union bound over events never needed to be independent.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass


@dataclass(frozen=True)
class SharedDraw:
    """One input drawn once for every (pair, side) in `uses`. It is drawn as its first use
    (`pair`, `side`: the seed and the Poisson sample size are that use's). `seed_pair`: for
    coupled draws, the pair whose seeds the whole group of coupled pairs linked by shared
    inputs draws from (None for an uncoupled draw)."""

    pair: int
    side: int
    uses: tuple
    seed_pair: int | None = None

    @property
    def coupled(self) -> bool:
        """Whether it is drawn in blocks of common random numbers."""
        return self.seed_pair is not None


def input_key(data) -> bytes | None:
    """A key equal for two inputs that are the same value: their pickle (numpy arrays, lists,
    tuples, numbers and strings pickle deterministically). None for an input that cannot be
    pickled: it is never shared."""
    try:
        return pickle.dumps(data, protocol=4)
    except Exception:  # noqa: BLE001  (whatever pickling raises, the input is not shared)
        return None


def _linked_groups(keys: dict, pairs: list) -> dict:
    """pair → the first pair of its group, where two pairs are linked when they share an input
    (union–find over `keys`: (pair, side) → input key)."""
    first: dict = {p: p for p in pairs}

    def root(p):
        while first[p] != p:
            p = first[p]
        return p

    owner: dict = {}
    for p in pairs:
        for s in (0, 1):
            k = keys[p, s]
            if k is None:
                continue
            if k in owner:
                a, b = sorted((root(owner[k]), root(p)), key=pairs.index)
                first[b] = a
            else:
                owner[k] = p
    return {p: root(p) for p in pairs}


def shared_draws(inputs, pairs, coupled=frozenset()) -> list[SharedDraw]:
    """The draws that count every input of `pairs` (inputs[pair][side]): one per distinct input
    among the uncoupled pairs and one per distinct input among the `coupled` ones (a coupled
    draw is cut into blocks, an uncoupled one has a Poisson size: the two cannot be one
    sample). All coupled draws of pairs linked by shared inputs take one `seed_pair`, so each
    coupled pair's two inputs still draw every block from one seed."""
    pairs = list(pairs)
    keys = {(p, s): input_key(inputs[p][s]) for p in pairs for s in (0, 1)}
    coupled_pairs = [p for p in pairs if p in coupled]
    seed_pairs = _linked_groups(keys, coupled_pairs)
    draws: dict = {}
    for p in pairs:
        for s in (0, 1):
            key = ((p in coupled, keys[p, s]) if keys[p, s] is not None else (p, s))
            if key in draws and p not in coupled and (p, 1 - s) in draws[key].uses:
                key = (p, s)  # an uncoupled pair's two inputs are never one sample
            if key in draws:
                d = draws[key]
                draws[key] = SharedDraw(d.pair, d.side, d.uses + ((p, s),), d.seed_pair)
            else:
                draws[key] = SharedDraw(p, s, ((p, s),), seed_pairs.get(p))
    return list(draws.values())


class EachUse:
    """The evaluator of a shared draw's chunks: each use's own evaluator (its pair's) applied to
    the same chunk, their results in the order of the draw's uses."""

    def __init__(self, evaluators: list):
        self.evaluators = evaluators

    def __call__(self, enc) -> tuple:
        return tuple(evaluate(enc) for evaluate in self.evaluators)
