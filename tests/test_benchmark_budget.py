"""The benchmark script's fixed budgets (scripts/benchmark.py, `ROW_SAMPLES`: the same seed gives
the same table on any machine), its check that two runs agree (`differences`), and its
table-wide confidence (`row_confidence`)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from benchmark import (PUBLISHED, PUBLISHED_FLOAT, ROW_SAMPLES, differences,  # noqa: E402
                       row_confidence)

from dpverify.pipeline.schedule import plan_stages  # noqa: E402
from dpverify.stats import cp_lower  # noqa: E402


def test_every_row_has_a_fixed_budget_and_its_stages_follow_from_it_alone():
    assert sorted(ROW_SAMPLES) == sorted([*PUBLISHED, *PUBLISHED_FLOAT])
    for name, samples in ROW_SAMPLES.items():
        assert samples & (samples - 1) == 0 and 1 << 20 <= samples <= 1 << 27, name
        stages = plan_stages(samples)
        assert stages[-1] == samples and all(b == 4 * a for a, b in zip(stages, stages[1:]))


def test_two_runs_differ_where_a_bound_verdict_or_count_differs_and_nowhere_else():
    row = {"mechanism": "svt6", "epsilon_lower_bound": 0.349, "verdict": "violation",
           "samples_per_side": 100, "samples": 400, "seconds": 30.0}
    assert differences([row], [{**row, "seconds": 61.0}]) == []   # a slower machine
    assert differences([row], [{**row, "epsilon_lower_bound": 0.348}]) == [
        "svt6: epsilon_lower_bound 0.349 here, 0.348 there"]
    assert differences([row], [{**row, "samples": 401}, ])[0].startswith("svt6: samples ")
    assert differences([row], []) == ["svt6: not in the other run"]


def test_the_table_holds_together_at_its_confidence():
    """22 rows, each exactly tight (its best event's rate sits at the truth, the worst case for a
    lower bound): at the per-row level `row_confidence` gives, the chance that ANY row's lower
    bound lands above its truth must stay within 1 − 0.9, where 0.9 per row would exceed it
    on about 9 tables in 10. Simulated with Clopper–Pearson lower bounds on 22 independent
    binomials, 4000 tables; the limit is the Binomial(4000, 0.1) 99.9% upper quantile."""
    rng = np.random.default_rng(7)
    rows, tables, n, p = 22, 4000, 2000, 0.3

    def tables_with_a_bound_above_the_truth(confidence):
        k = rng.binomial(n, p, size=(tables, rows))
        return int(np.sum(np.any(cp_lower(k, n, 1 - confidence) > p, axis=1)))

    limit = tables * 0.1 + 3.1 * np.sqrt(tables * 0.1 * 0.9)
    assert tables_with_a_bound_above_the_truth(row_confidence(0.9, rows)) <= limit
    assert tables_with_a_bound_above_the_truth(0.9) > limit   # per-row 0.9 would not do


@pytest.mark.parametrize("family, rows", [(1.0, 22), (0.0, 22), (0.9, 0)])
def test_a_table_confidence_outside_its_range_is_refused(family, rows):
    with pytest.raises(ValueError):
        row_confidence(family, rows)


def test_the_report_says_whether_another_run_agreed():
    from benchmark import same_as_text
    check = {"seed": 0, "total_seconds": 1459.2, "numpy_reference_seconds": 0.4729,
             "busiest_other_share": 0.565, "differences": []}
    [line] = same_as_text(check)
    assert "identical bounds" in line and "1459 s" in line and "0.473 s" in line
    [line] = same_as_text({**check, "differences": ["svt6: epsilon_lower_bound 0.3 here"]})
    assert "**differs**" in line and "svt6" in line
    assert same_as_text(None) == []
