"""scripts/proportional_loss.py: the sizes it audits at, and how its table reads a change."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import proportional_loss as pl  # noqa: E402


def test_a_row_is_a_name_with_an_optional_size_and_a_typo_says_the_form():
    assert pl.parse_row("svt3") == ("svt3", None)
    assert pl.parse_row("svt6:24") == ("svt6", 24)
    for bad in ("svt6:", "svt6:2^24", ":24"):
        with pytest.raises(Exception, match="NAME or NAME:LOG2"):
            pl.parse_row(bad)


def test_the_size_is_the_nearest_power_of_two_on_a_log_scale():
    # RNM4's committed last stages (94.5M, 96.7M, 91.7M): 2^26.49, nearer 2^26 than 2^27
    assert pl.nearest_power_of_two(94_496_357) == 26
    assert pl.nearest_power_of_two(96_672_320) == 27
    assert pl.nearest_power_of_two(2 ** 20) == 20
    with pytest.raises(ValueError):
        pl.nearest_power_of_two(0)


def _run_dir(tmp_path, name, seed, slowdown, confidence, last_stages):
    d = tmp_path / name
    d.mkdir()
    rows = [{"mechanism": m, "stage_sizes": [1024, n]} for m, n in last_stages.items()]
    meta = {"seed": seed, "slowdown": slowdown, "row_confidence": confidence}
    (d / "benchmark.json").write_text(json.dumps({"rows": rows, "meta": meta}))
    return d


def test_committed_runs_give_each_rows_last_stages_and_one_confidence(tmp_path):
    a = _run_dir(tmp_path, "a", 0, 1.0, 0.995, {"svt3": 30_000_000, "rnm4": 90_000_000})
    b = _run_dir(tmp_path, "b", 1, 1.0, 0.995, {"svt3": 40_000_000})
    sizes, confidence = pl.committed_last_stages([a, b])
    assert sizes == {"svt3": [30_000_000, 40_000_000], "rnm4": [90_000_000]}
    assert confidence == 0.995
    slowed = _run_dir(tmp_path, "s", 0, 1.5, 0.995, {"svt3": 20_000_000})
    with pytest.raises(SystemExit, match="slowdown"):
        pl.committed_last_stages([a, slowed])
    other = _run_dir(tmp_path, "o", 2, 1.0, 0.9, {"svt3": 20_000_000})
    with pytest.raises(SystemExit, match="different confidences"):
        pl.committed_last_stages([a, other])


def _cell(seed, full, fewer):
    return {"seed": seed, "full": {"bound": full}, "fewer": {"bound": fewer}}


def test_the_table_gives_each_seeds_change_and_their_mean():
    row = {"mechanism": "svt3", "log2": 25,
           "cells": [_cell(0, 0.32, 0.304), _cell(1, 0.25, 0.30)]}
    assert pl.mean_change(row["cells"]) == pytest.approx((-0.05 + 0.2) / 2)
    meta = {"command": "c", "total_seconds": 1.0, "cpu_model": "cpu",
            "numpy_reference_seconds": 0.4, "factor": 1.5, "confidence": 0.995,
            "seeds": [0, 1]}
    text = pl.markdown([row], meta)
    assert ("| svt3 | 2^25 | 0.3200 → 0.3040 (-5.0%) | 0.2500 → 0.3000 (+20.0%) | +7.5% |"
            in text)
