"""Attacks: learn a score s(o) ≈ ln p(o)/q(o) on SEARCH samples and pick events {±s ≥ t}.

Neyman–Pearson: the most powerful test of D against D' at any level thresholds the likelihood
ratio, so every attack here estimates (a monotone transform of) it. The families, one module
each, all following `base.ScoreModel`:

- `keys`: discrete outputs ordered by their smoothed per-output ratio (`KeyLikelihoodRatio`),
  the same over the few-valued coordinates of a mixed output (`DiscretePartRatio`), and that
  plus the ratio of which other coordinates are present (`PartsLikelihoodRatio`);
- `linear`: one numeric coordinate's half-lines (`Coordinate`) and a linear discriminant over
  the numeric coordinates (`LinearScore`);
- `binned`: per output skeleton, the skeleton's ratio plus each coordinate's quantile-bin ratio
  (`BinnedLikelihoodRatio`, naive Bayes);
- `coordinate_sums`: two-bin per-coordinate ratios summed, on decorrelated coordinates when
  they are correlated (`CoordinateSum`);
- `floats`: the ratio of a coordinate's float bit pattern (`FloatBitPattern`, opt-in).

`ratios` holds the count-and-smooth recipe they share. `learn` decides which models to fit and
splits the search sample: models are learned on one half and thresholds chosen on the other
(`planning`) by the bound a certifying sample of the planned size is expected to give, so no
fixed probability floor caps the bound. `events` defines the chosen events (`Candidate`);
`dpverify.certify.evaluator` counts them on certifying chunks. The certifying sample is never
seen while searching (docs/theory.md §2).
"""
from .base import MAX_COORDINATES, ScoreModel
from .binned import MAX_SKELETONS, BinnedLikelihoodRatio, learn_binned_ratio
from .coordinate_sums import (CoordinateSum, learn_coordinate_sums, shrink_split_contrasts,
                              shrink_to_common_effect, whitening)
from .events import (TUNING_GRID_SAMPLE, Candidate, Probe, Tuning, curve_grid, pooled_tuning,
                     tuning_grid, tuning_index)
from .floats import FLOAT_COORDINATES, FloatBitPattern, float_bit_pattern, learn_float_bit_patterns
from .keys import (FEW_COLUMN_VALUES, FEW_KEYS, DiscretePartRatio, KeyLikelihoodRatio,
                   PartsLikelihoodRatio, learn_discrete_part_ratio, learn_key_ratio,
                   learn_parts_ratio, outputs_repeat)
from .learn import FEW_OUTPUTS, learn_models, learn_pair, search_pair
from .linear import Coordinate, LinearScore, learn_coordinates, learn_linear_score
from .planning import (PAIRED_EXTRA_Z, PROMISE_SHRINK_Z, SEARCH_SHRINK_Z, TUNING_MIN_HITS,
                       TUNING_SHRINK_Z, ScoredModel, best_events, candidate_thresholds,
                       count_at_least, expected_bounds, pair_events, potentials, retune,
                       score_selection, tail_rungs, tuning_log_ratio)
from .ratios import (SMOOTHING, bin_index, log_ratio_by_value, lookup_log_ratio,
                     smoothed_log_ratio)

__all__ = [
    # the protocol and the models
    "ScoreModel", "KeyLikelihoodRatio", "DiscretePartRatio", "PartsLikelihoodRatio",
    "Coordinate", "LinearScore", "BinnedLikelihoodRatio", "CoordinateSum", "FloatBitPattern",
    # learning them
    "learn_models", "learn_pair", "search_pair", "learn_key_ratio", "learn_discrete_part_ratio",
    "learn_parts_ratio", "learn_coordinates", "learn_linear_score", "learn_binned_ratio",
    "learn_coordinate_sums", "learn_float_bit_patterns", "outputs_repeat",
    "shrink_to_common_effect", "shrink_split_contrasts", "whitening", "float_bit_pattern",
    # shared counting of cells
    "smoothed_log_ratio", "log_ratio_by_value", "lookup_log_ratio", "bin_index",
    # events and their planning
    "Candidate", "Probe", "Tuning", "pooled_tuning", "ScoredModel", "score_selection",
    "best_events", "pair_events",
    "potentials", "candidate_thresholds", "count_at_least", "expected_bounds", "retune",
    "tail_rungs", "curve_grid", "tuning_grid", "tuning_index", "tuning_log_ratio",
    # constants
    "SMOOTHING", "MAX_COORDINATES", "MAX_SKELETONS", "FEW_KEYS", "FEW_COLUMN_VALUES",
    "FEW_OUTPUTS", "FLOAT_COORDINATES", "SEARCH_SHRINK_Z", "PROMISE_SHRINK_Z",
    "TUNING_SHRINK_Z", "PAIRED_EXTRA_Z", "TUNING_MIN_HITS", "TUNING_GRID_SAMPLE",
]
