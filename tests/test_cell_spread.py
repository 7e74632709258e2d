"""scripts/cell_spread.py: the share of pairs of runs that fail the seeds table's 10% check."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import cell_spread  # noqa: E402


def test_a_pair_fails_only_when_the_slowed_run_loses_more_than_the_bar():
    # committed 0.32 and 0.25 against slowed 0.28 (-12.5%, +12%) and 0.30 (-6.3%, +20%)
    assert cell_spread.share_losing([0.32, 0.25], [0.28, 0.30]) == pytest.approx(0.25)
    assert cell_spread.share_losing([0.32], [0.30]) == 0.0
    assert cell_spread.share_losing([0.32], [0.25]) == 1.0


def test_a_cell_is_name_and_seed_and_a_typo_says_the_form():
    assert cell_spread.parse_cell("svt3:2") == ("svt3", 2)
    with pytest.raises(Exception, match="NAME:SEED"):
        cell_spread.parse_cell("svt3-2")
