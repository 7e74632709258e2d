"""The Opacus adapter (dpverify.libraries.opacus): the claim is Opacus's own get_epsilon, the
pairs add or remove one example, batched trainings have the law of single ones, and audits
pass a correct training and flag broken ones. Runs where opacus is installed (`python -m nox
-s opacus`); the core suite skips it.

Statistical checks are seeded: the two-sample tests compare fixed draws, so each either holds
or fails on every run.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")
from scipy import stats  # noqa: E402

import dpverify  # noqa: E402
from dpverify.errors import DpVerifyError, InvalidPairsError  # noqa: E402
from dpverify.libraries.opacus import (as_examples, corners, from_training,  # noqa: E402
                                       train_once)
from dpverify.libraries.opacus.copies import train_copies  # noqa: E402

RNG = np.random.default_rng(7)
X = RNG.normal(size=(38, 2)).astype(np.float32)
Y = RNG.normal(size=(38, 1)).astype(np.float32)


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))


def sgd(params):
    return torch.optim.SGD(params, lr=0.5)


def direct_epsilon(accountant, delta, noise=1.0, batch=4, epochs=1, **private):
    """ε from a training written against Opacus directly, as its tutorials do."""
    from torch.utils.data import DataLoader, TensorDataset
    model = mlp()
    engine = opacus.PrivacyEngine(accountant=accountant)
    loader = DataLoader(TensorDataset(torch.tensor(X), torch.tensor(Y)), batch_size=batch)
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=sgd(model.parameters()), data_loader=loader,
        noise_multiplier=noise, max_grad_norm=1.0, **private)
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    return engine.get_epsilon(delta)


@pytest.mark.parametrize("accountant, epochs", [("prv", 1), ("rdp", 3)])
def test_the_claim_is_what_opacus_get_epsilon_reports(accountant, epochs):
    mech = from_training(mlp, sgd, torch.nn.MSELoss(), X, Y, batch_size=4, noise_multiplier=1.0,
                         epochs=epochs, accountant=accountant, delta=1e-5)
    assert mech.epsilon == pytest.approx(direct_epsilon(accountant, 1e-5, epochs=epochs),
                                         rel=1e-9)
    assert mech.delta == 1e-5


def test_make_private_with_epsilon_is_read_through_opacus():
    mech = from_training(mlp, sgd, torch.nn.MSELoss(), X, Y, batch_size=4, epochs=2,
                         target_epsilon=2.0, target_delta=1e-5, accountant="rdp")
    sigma = opacus.accountants.utils.get_noise_multiplier(
        target_epsilon=2.0, target_delta=1e-5, sample_rate=1 / 10, epochs=2, accountant="rdp")
    assert mech.epsilon == pytest.approx(direct_epsilon("rdp", 1e-5, noise=sigma, epochs=2),
                                         rel=1e-9)
    assert mech.epsilon <= 2.0
    # the runs train through make_private at the σ make_private_with_epsilon chose
    sampled = mech.fn.sampled[mech.pairs[0][0]]
    assert sampled.target_epsilon is None and sampled.noise_multiplier == pytest.approx(sigma)


def test_every_corner_adds_or_removes_exactly_one_example():
    found = corners(mlp, sgd, torch.nn.MSELoss(), X, Y, batch_size=4, noise_multiplier=1.0)
    assert set(found) == {"user", "batches", "normalisation", "tiny"}
    for mech in found.values():
        for a, b in mech.pairs:
            big, small = (a, b) if len(a) > len(b) else (b, a)
            assert len(big) == len(small) + 1
            # the smaller dataset is the larger one with one example taken out
            rows = [tuple(r) + tuple(t) for r, t in zip(big.inputs, big.targets)]
            kept = [tuple(r) + tuple(t) for r, t in zip(small.inputs, small.targets)]
            assert sorted(kept) == sorted(rows[:len(kept)]) or all(k in rows for k in kept)
            assert any(r not in kept for r in rows)
    sizes = {c: sorted(len(d) for d in found[c].pairs[0]) for c in found}
    assert sizes["batches"] == [36, 37]            # 9 batches of 4, then 10
    assert sizes["normalisation"] == [35, 36]      # int(35/9) = 3 against int(36/9) = 4
    assert sizes["tiny"] == [1, 2]


def test_the_default_canary_is_clipped_to_the_bound():
    mech = from_training(lambda: torch.nn.Linear(2, 1), sgd, torch.nn.MSELoss(), X, Y,
                         batch_size=4, noise_multiplier=1.0)
    with_canary = mech.pairs[0][0]
    canary = with_canary.inputs[-1]
    assert np.linalg.norm(canary) >= 10 * np.linalg.norm(X, axis=1).max() * 0.999
    model = torch.nn.Linear(2, 1)
    loss = torch.nn.functional.mse_loss(model(torch.tensor(canary[None])),
                                        torch.tensor(with_canary.targets[-1:]))
    grads = torch.autograd.grad(loss, list(model.parameters()))
    assert torch.sqrt(sum((g ** 2).sum() for g in grads)) > 1.0   # larger than the clip norm


def linear():
    return torch.nn.Linear(2, 1)


def law_gap(training_args, data_size=None, output="last", batched_runs=2000, single_runs=600):
    """(runner, dataset, divisor, single trainings, batched trainings) of one configuration."""
    x, y = (X, Y) if data_size is None else (X[:data_size], Y[:data_size])
    optimizer = training_args.pop("optimizer", sgd)
    model = training_args.pop("model", linear)
    mech = from_training(model, optimizer, torch.nn.MSELoss(**training_args.pop("criterion", {})),
                         x, y, output=output, **training_args)
    runner, data = mech.fn, mech.pairs[0][0]
    assert runner.batched
    divisor = runner.readings[data].expected_batch_size
    rng = np.random.default_rng(0)
    single = np.stack([train_once(runner.training, runner.state, data, rng)
                       for _ in range(single_runs)])
    batched = runner(data, np.random.default_rng(1), batched_runs)
    return runner, data, divisor, single, batched


def law_p_values(single, batched) -> list[float]:
    """Per output coordinate, a two-sample KS test (the distribution's shape and location) and
    a Brown-Forsythe test (its spread: KS is weak against a change of scale alone)."""
    return [test(single[:, j], batched[:, j]).pvalue for j in range(single.shape[1])
            for test in (stats.ks_2samp, lambda a, b: stats.levene(a, b, center="median"))]


CONFIGS = {
    "poisson, flat clipping, a 2-layer MLP": dict(batch_size=4, noise_multiplier=1.0,
                                                  model=mlp),
    "shuffled, per-layer clipping, updates": dict(
        batch_size=4, noise_multiplier=0.8, loader="shuffled", clipping="per_layer",
        max_grad_norm=[0.5, 0.5], output="updates"),
    "poisson, 3 examples, most batches empty": dict(batch_size=4, noise_multiplier=1.0,
                                                    data_size=3, epochs=2),
    "sequential, sum reduction, Adam, 2 epochs": dict(
        batch_size=5, noise_multiplier=1.0, loader="sequential", loss_reduction="sum",
        criterion={"reduction": "sum"}, epochs=2,
        optimizer=lambda p: torch.optim.Adam(p, lr=0.05)),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_batched_trainings_have_the_law_of_single_trainings(name):
    args = dict(CONFIGS[name])
    size, output = args.pop("data_size", None), args.pop("output", "last")
    _, _, _, single, batched = law_gap(args, size, output)
    assert single.shape[1] == batched.shape[1]
    p_values = law_p_values(single, batched)
    # Bonferroni over the tests: the draws are seeded, so the check holds or fails every run
    assert min(p_values) > 0.001 / len(p_values), p_values


def test_the_law_check_catches_a_wrong_normalisation():
    """The same check rejects batched trainings divided by a wrong expected batch size, so it
    can fail."""
    runner, data, divisor, single, _ = law_gap(dict(batch_size=4, noise_multiplier=1.0))
    wrong = train_copies(runner.training, runner.state, data, 2000, divisor + 1,
                         np.random.default_rng(1))
    p_values = law_p_values(single, wrong)
    assert min(p_values) < 0.001 / len(p_values), p_values


def alone_and_in_two_threads(mech, runs: int):
    """`runs` trainings of the first dataset at seeds 3 and 4, one after the other and in two
    threads at once."""
    from concurrent.futures import ThreadPoolExecutor
    data = mech.pairs[0][0]

    def train(seed):
        return mech.fn(data, np.random.default_rng(seed), runs)
    alone = [train(seed) for seed in (3, 4)]
    with ThreadPoolExecutor(2) as pool:
        return alone, list(pool.map(train, (3, 4)))


def test_same_seed_same_trainings_in_any_thread():
    """Trainings draw only from their own seeded generators, so two threads training at once
    (as the engine's workers do) give what each gives alone."""
    mech = from_training(linear, sgd, torch.nn.MSELoss(), X, Y, batch_size=4,
                         noise_multiplier=1.0)
    alone, together = alone_and_in_two_threads(mech, 300)
    assert all(np.array_equal(a, b) for a, b in zip(alone, together))
    assert not np.array_equal(alone[0], alone[1])


def test_ghost_clipping_trains_one_by_one_and_threads_keep_their_own_loss():
    """Ghost clipping needs Opacus's own layers (no stacked copies); it switches its loss
    module's reduction while it runs, so two threads must not share one."""
    mech = from_training(linear, sgd, torch.nn.MSELoss(), X, Y, batch_size=4,
                         noise_multiplier=1.0, grad_sample_mode="ghost")
    assert not mech.fn.batched
    alone, together = alone_and_in_two_threads(mech, 30)
    assert all(np.array_equal(a, b) for a, b in zip(alone, together))


# a gradient canary: with L1 loss and a target far below, an example's gradient is its input
# (clipped to norm 1), whatever the parameters; the other examples have gradient 0 (input 0)
def gradient_canary_training(noise, **kwargs):
    return from_training(lambda: torch.nn.Linear(1, 1, bias=False),
                         lambda p: torch.optim.SGD(p, lr=1.0),
                         torch.nn.L1Loss(reduction="sum"), np.zeros((8, 1), np.float32),
                         np.zeros((8, 1), np.float32), noise_multiplier=noise,
                         canary=([1.0], [-1e6]), loss_reduction="sum", **kwargs)


def gaussian_epsilon(mu: float, delta: float) -> float:
    """ε at δ of μ-GDP: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth, Su 2022;
    docs/fdp.md)."""
    from scipy.optimize import brentq

    def delta_at(eps):
        return (stats.norm.cdf(-eps / mu + mu / 2)
                - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2))
    return brentq(lambda e: delta_at(e) - delta, 0.0, 50.0)


def test_a_full_batch_training_passes_at_its_claim_and_halved_noise_is_flagged():
    """Full batches (q = 1), 4 epochs, σ = 4: the trained weight is −(4 + N(0, 4σ²)) with the
    canary and −N(0, 4σ²) without, so the training is exactly (2/σ)-GDP; the bounds must stay
    below that truth, and the halved noise's must pass the claim."""
    correct = gradient_canary_training(4.0, batch_size=16, epochs=4)
    result = dpverify.audit(correct, seed=0, samples=1 << 13)
    assert result.verdict == "pass" and result.conclusive
    assert result.epsilon_lower_bound < correct.epsilon
    assert result.epsilon_lower_bound <= gaussian_epsilon(0.5, correct.delta)
    halved = dataclasses.replace(gradient_canary_training(2.0, batch_size=16, epochs=4),
                                 epsilon=correct.epsilon)
    flagged = dpverify.audit(halved, seed=0, samples=1 << 13)
    assert flagged.verdict == "violation"
    assert correct.epsilon < flagged.epsilon_lower_bound <= gaussian_epsilon(1.0, correct.delta)


def test_a_shuffled_loader_under_the_poisson_accountant_is_flagged_and_poisson_passes():
    """mechanisms_under_test/dpsgd.py's pair through Opacus: 40 examples of gradient -1 but
    one of +1, against the 39; batches of 4, σ = 3, one epoch; the updates are the output."""
    others = np.full((39, 1), -1.0, np.float32)
    small = as_examples(others, np.full((39, 1), -1e6, np.float32), "39 of gradient -1")
    big = as_examples(np.concatenate([[[1.0]], others]).astype(np.float32),
                      np.full((40, 1), -1e6, np.float32), "the same + one of gradient +1")

    def epoch(loader):
        return from_training(lambda: torch.nn.Linear(1, 1, bias=False),
                             lambda p: torch.optim.SGD(p, lr=1.0),
                             torch.nn.L1Loss(reduction="sum"), big.inputs, big.targets,
                             batch_size=4, noise_multiplier=3.0, loader=loader,
                             loss_reduction="sum", output="updates", pairs=[(big, small)])
    shuffled = dpverify.audit(epoch("shuffled"), seed=0)
    assert shuffled.verdict == "violation"
    poisson = dpverify.audit(epoch("poisson"), seed=0)
    assert poisson.verdict == "pass"
    assert epoch("shuffled").epsilon == pytest.approx(epoch("poisson").epsilon, rel=1e-9)


def test_bad_configurations_raise_typed_errors_that_say_what_to_do():
    base = dict(batch_size=4, noise_multiplier=1.0)
    with pytest.raises(DpVerifyError, match="loader must be one of"):
        from_training(mlp, sgd, torch.nn.MSELoss(), X, Y, **base, loader="poison")
    with pytest.raises(DpVerifyError, match="not both"):
        from_training(mlp, sgd, torch.nn.MSELoss(), X, Y, batch_size=4, noise_multiplier=1.0,
                      target_epsilon=1.0, target_delta=1e-5)
    with pytest.raises(InvalidPairsError, match="same first dimension"):
        from_training(mlp, sgd, torch.nn.MSELoss(), X, Y[:5], **base)
    with pytest.raises(InvalidPairsError, match="corner must be one of"):
        from_training(mlp, sgd, torch.nn.MSELoss(), X, Y, **base, corner="huge")
    # Opacus's own refusal (BatchNorm mixes examples) arrives named, as a DpVerifyError
    with pytest.raises(DpVerifyError, match="Opacus failed to train"):
        from_training(lambda: torch.nn.Sequential(torch.nn.Linear(2, 2),
                                                  torch.nn.BatchNorm1d(2)),
                      sgd, torch.nn.MSELoss(), X, np.zeros((38, 2), np.float32), **base)
