"""Which score models to fit for a pair, and the split of the search sample they are fitted on.

The search sample of each input is split in two: models are learned on the even-indexed outputs
and score the odd-indexed ones (the selection half), on which `planning` chooses thresholds.
The certifying sample is never seen here (docs/theory.md §2).
"""
from __future__ import annotations

import numpy as np

from ..sampling.encoding import Encoded
from .atoms import learn_atom_ratio
from .base import ScoreModel
from .binned import learn_binned_ratio
from .coordinate_sums import learn_coordinate_sums
from .events import Candidate
from .floats import learn_float_bit_patterns
from .keys import learn_discrete_part_ratio, learn_key_ratio, learn_parts_ratio, outputs_repeat
from .linear import learn_coordinates, learn_linear_score
from .planning import ScoredModel, pair_events, score_selection

FEW_OUTPUTS = 64  # outputs with at most this many values get the discrete models only


def _discrete_part_models(a: Encoded, b: Encoded) -> list[ScoreModel]:
    """For a mixed output whose whole outputs do not repeat: the ratio of its discrete part, and
    of the discrete part plus the other coordinates' absent pattern, where they exist."""
    part = learn_discrete_part_ratio(a, b)
    if part is None:
        return []
    parts = learn_parts_ratio(a, b, part)
    return [part] if parts is None else [part, parts]


def learn_models(a: Encoded, b: Encoded, floating_point: bool = False) -> list[ScoreModel]:
    """All score models worth trying for this pair, learned on (a ~ M(D), b ~ M(D')).
    `floating_point`: also the float-bit-pattern models (the claim covers exact float outputs).

    Outputs that take at most FEW_OUTPUTS values on the learning sample (SVT's ⊤/⊥ vectors,
    noisy max's index) get the per-output likelihood ratio, the half-lines and the linear score
    only: the binned ratio and the coordinate sums smooth continuous or many-valued coordinates,
    and on a handful of outputs, each seen often, they only re-order what the per-output ratio
    already orders (Neyman–Pearson), while taking most of the search time on such outputs.
    """
    models: list[ScoreModel] = []
    if floating_point and a.X.dtype == np.float64:
        models += learn_float_bit_patterns(a, b)
    few = False
    if outputs_repeat(a, b):
        key_ratio = learn_key_ratio(a, b)
        models.append(key_ratio)
        few = len(key_ratio.keys) <= FEW_OUTPUTS
    else:
        models += _discrete_part_models(a, b)
    models += learn_coordinates(a, b)
    binned = None if few else learn_binned_ratio(a, b)
    if binned is not None:
        models.append(binned)
    linear = learn_linear_score(a, b)
    if linear is not None:
        models.append(linear)
    if not few:
        models += learn_coordinate_sums(a, b)
        atoms = learn_atom_ratio(a, b)
        if atoms is not None:
            models.append(atoms)
    return models


def learn_pair(search_a: Encoded, search_b: Encoded, floating_point: bool = False,
               paired: bool = False) -> list[ScoredModel]:
    """Learn on even-indexed search samples and score the odd-indexed ones (the selection half,
    on which thresholds are chosen). `paired`: row i of both samples shares its random numbers
    (the engine's search draws them so), which the selection's joint counts then use."""
    learn_a, sel_a = search_a.take(slice(0, None, 2)), search_a.take(slice(1, None, 2))
    learn_b, sel_b = search_b.take(slice(0, None, 2)), search_b.take(slice(1, None, 2))
    return [score_selection(model, sel_a, sel_b, paired)
            for model in learn_models(learn_a, learn_b, floating_point)]


def search_pair(pair: int, search_a: Encoded, search_b: Encoded, n_certify: int, delta: float,
                level: float, n_final: int | None = None,
                floating_point: bool = False) -> list[Candidate]:
    """Candidate events of one pair: `learn_pair`, then `pair_events`."""
    return pair_events(pair, learn_pair(search_a, search_b, floating_point), n_certify, delta,
                       level, n_final)
