"""The audit loop's state (dpverify.pipeline.run): stage kinds and their seed keys are a function
of what each stage is, never of how often something was asked; every attribute of an audit
exists from the start; the loop says why it ended."""
import random

from dpverify.mechanism import as_mechanism
from dpverify.pipeline import Settings, run as run_module
from dpverify.pipeline.request import build_request
from dpverify.pipeline.run import AuditRun, ExitReason
from dpverify.pipeline.schedule import (StageKind, StagePlan, measurement_size, plan_stages,
                                        stage_key, stage_kind)
from dpverify.sampling import LAST_STAGE_KEY, TUNING_STAGE_KEY
from mechanisms_under_test.basic import make_laplace

KINDS = [StageKind.SEARCH, StageKind.SEARCH, StageKind.TUNE, StageKind.TUNE, StageKind.LAST]


def test_a_stage_key_follows_from_the_stage_alone_in_any_order_of_asking():
    expected = [1, 2, TUNING_STAGE_KEY, TUNING_STAGE_KEY - 1, LAST_STAGE_KEY]
    stages = list(enumerate(KINDS, start=1))
    assert [stage_key(kind, j, 3) for j, kind in stages] == expected
    for seed in range(5):
        shuffled = random.Random(seed).sample(stages, len(stages))
        asked_twice = {j: (stage_key(kind, j, 3), stage_key(kind, j, 3)) for j, kind in shuffled}
        assert [asked_twice[j] for j, _ in stages] == [(k, k) for k in expected]
    assert len(set(expected)) == len(expected)          # every stage draws fresh runs


def test_a_stage_is_searching_tuning_or_last_as_it_starts():
    plan = StagePlan(2, 1 << 12, 0.0, 0.01, last=False, measuring=True)
    last = StagePlan(3, 1 << 14, 0.05, 0.01, last=True, measuring=True)
    assert stage_kind(plan, search_frozen=False) is StageKind.SEARCH
    assert stage_kind(plan, search_frozen=True) is StageKind.TUNE
    assert stage_kind(last, search_frozen=False) is stage_kind(last, True) is StageKind.LAST


def test_an_audit_counts_each_stage_under_the_key_its_kind_gives(monkeypatch):
    """A measurement run whose search converges at stage 2 (Settings below): stages 3 and 4
    only tune and the last certifies; the keys they count under are the kinds' keys."""
    keys = []
    real = run_module.certifying_counts

    def spy(sampler, seed, events, probes, j, *args, **kwargs):
        keys.append(j)
        return real(sampler, seed, events, probes, j, *args, **kwargs)

    monkeypatch.setattr(run_module, "certifying_counts", spy)
    converges = Settings(prune_after_stage=2, search_precision=0.1)
    mech = as_mechanism(make_laplace(1.0))
    audit = AuditRun(mech, build_request(mech, samples=1 << 18, stop_early=False, seed=1,
                                         n_jobs=1), converges)
    result = audit.run()
    assert audit.first_tuning == 3 and len(result.stages) == 5
    assert keys == [1, 2, TUNING_STAGE_KEY, TUNING_STAGE_KEY - 1, LAST_STAGE_KEY]
    assert audit.exit is ExitReason.FINISHED


def test_every_attribute_of_an_audit_exists_before_it_runs():
    mech = as_mechanism(make_laplace(1.0))
    audit = AuditRun(mech, build_request(mech, epsilon=0.5, samples=1 << 14, seed=0,
                                         n_jobs=1))
    before = set(vars(audit))
    result = audit.run()
    assert set(vars(audit)) == before
    assert result.verdict == "violation" and audit.exit is ExitReason.VIOLATION


def test_ctrl_c_ends_the_loop_as_interrupted_and_the_result_says_so(monkeypatch):
    def pressed(self):
        raise KeyboardInterrupt
    monkeypatch.setattr(AuditRun, "_run_stages", pressed)
    mech = as_mechanism(make_laplace(1.0))
    audit = AuditRun(mech, build_request(mech, samples=1 << 14, seed=0, n_jobs=1))
    result = audit.run()
    assert audit.exit is ExitReason.INTERRUPTED
    assert result.interrupted and not result.budget_spent


def test_a_proved_violation_is_measured_at_the_first_stage_large_enough():
    """max(floor, multiple × the proof's runs per input, the proof's stage), taken from the
    schedule's own sizes and capped by its last (docs/method.md, "Measuring a proved
    violation")."""
    sizes = plan_stages(1 << 22)
    assert measurement_size(sizes, 1_000, 1 << 10, 1 << 18, 8) == 1 << 18     # the floor
    assert measurement_size(sizes, 100_000, 1 << 10, 1 << 18, 8) == 1 << 20   # 8 × 10^5
    assert measurement_size(sizes, 10 ** 7, 1 << 10, 1 << 18, 8) == 1 << 22   # capped
    assert measurement_size(sizes, 10, 1 << 20, 1 << 18, 8) == 1 << 20        # its own stage
    assert measurement_size(plan_stages(1 << 12), 5_000, 1 << 10, 1 << 18, 8) == 1 << 12
