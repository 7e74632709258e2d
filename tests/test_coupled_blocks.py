"""A smaller stage draws a prefix of a larger one's runs: coupled stages draw fixed chunks and
sum their segments into blocks (certify.counting, stats.coupled_block_size), so a block may
cross a chunk boundary and still holds exactly its runs; and the last stage draws one seed
stream however many stages came before it (pipeline.run, docs/method.md "Seed streams")."""
import numpy as np

from dpverify.attacks import Candidate, Coordinate
from dpverify.certify import certifying_counts
from dpverify.mechanism import as_mechanism
from dpverify.sampling import Sampler
from dpverify.stats import MIN_COUPLED_BLOCKS, coupled_block_size, coupled_segment

CHUNK = 4096


def uniform_shift(data, rng, size):
    return data + rng.random(size)


def at_most(t):
    """The event output ≤ t of pair 0 (sign −1: −output ≥ −t)."""
    return Candidate(0, 0, Coordinate(0), -1, -t, 0.1, (1, 2, 1, 2))


def _blocks(n, block):
    with Sampler(as_mechanism(uniform_shift), [(0.0, 0.5)], 7, n_jobs=1,
                 chunk_size=CHUNK) as sampler:
        counted = certifying_counts(sampler, 7, [at_most(0.75)], [], 3, n,
                                    coupled=frozenset({0}), block=block)
    return counted.blocks[0, 0][:, 0], counted.blocks[0, 1][:, 0], counted


def test_blocks_that_straddle_chunks_hold_the_same_runs():
    n = 3 * CHUNK
    fine_p, fine_q, _ = _blocks(n, 1024)           # four segments per chunk, none straddles
    p3, q3, counted = _blocks(n, 3072)             # blocks 1 and 2 cross a chunk boundary
    assert counted.runs[0, 0] == counted.runs[0, 1] == n
    assert list(p3) == list(fine_p.reshape(-1, 3).sum(axis=1))
    assert list(q3) == list(fine_q.reshape(-1, 3).sum(axis=1))
    p2, _, _ = _blocks(n, 2048)
    assert list(p2) == list(fine_p.reshape(-1, 2).sum(axis=1))
    # common seeds: D' = 0.5 is at most 0.75 only where D = 0 is at most 0.25, so every block
    # of D' has fewer hits, and about a third as many
    assert np.all(q3 <= p3) and abs(q3.sum() / p3.sum() - 1 / 3) < 0.05
    # a stage half as large draws the first half of the same runs
    p_half, _, _ = _blocks(n // 2, 3072)
    assert list(p_half) == list(p3[:2])


def test_coupled_blocks_keep_seven_eighths_of_their_aim_and_tile_chunks():
    chunk = 1 << 18
    for n in np.unique(np.geomspace(1 << 20, 1 << 28, 400).astype(int)):
        aim = min(chunk, n // MIN_COUPLED_BLOCKS)
        block = coupled_block_size(int(n), chunk)
        segment = coupled_segment(block, chunk)
        assert 7 / 8 * aim <= block <= aim
        assert block % segment == 0 and chunk % segment == 0
        assert block // segment <= 8 * 2   # at most ~8 segments per block, so counting is cheap


def _certifying_keys(watch, samples):
    """Stage key → the seed state of that stage's first certifying chunk of input D, in one
    measurement audit of a Laplace; and the audit's result."""
    import dpverify
    from mechanisms_under_test.basic import make_laplace
    stages = watch(7)
    result = dpverify.audit(make_laplace(1.0), samples=samples, stop_early=False, seed=7,
                            n_jobs=1)
    return stages, result


def test_the_last_stage_draws_one_stream_however_many_stages_came_before(
        certifying_chunk_seeds):
    # docs/method.md, "Seed streams": audits of 2^14 and 2^18 runs have 5 and 7 stages, yet
    # their last stages draw chunk 0 from the same seed, so the smaller one's runs are a
    # prefix of the larger one's; every stage of one audit draws under a key of its own
    from dpverify.sampling import LAST_STAGE_KEY
    small, r_small = _certifying_keys(certifying_chunk_seeds, 1 << 14)
    large, r_large = _certifying_keys(certifying_chunk_seeds, 1 << 18)
    assert len(r_small.stages) < len(r_large.stages)
    assert LAST_STAGE_KEY in small and LAST_STAGE_KEY in large
    assert small[LAST_STAGE_KEY] == large[LAST_STAGE_KEY]
    # the earlier stages' keys are their indices, distinct from the last stage's
    assert sorted(k for k in large if k != LAST_STAGE_KEY) == list(range(1, len(large)))
