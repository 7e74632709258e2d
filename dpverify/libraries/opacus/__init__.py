"""Audit an Opacus (PyTorch) DP-SGD training at the claim Opacus's own accountant reports, on
datasets that differ in one example.

    import torch, dpverify
    from dpverify.libraries.opacus import from_training
    mech = from_training(lambda: torch.nn.Linear(1, 1), lambda p: torch.optim.SGD(p, lr=0.5),
                         torch.nn.MSELoss(), inputs, targets, batch_size=4,
                         noise_multiplier=1.0, max_grad_norm=1.0, delta=1e-5)
    dpverify.audit(mech)

The modules of this package:

    training.py  the user's training (`Training`): make_private and the loop, as a user's
                 code runs them, with the batch sampler and noise seeded from the engine's rng
    claims.py    the claim: one training, then PrivacyEngine.get_epsilon(δ)
    pairs.py     neighbours: a canary added, an example removed, and the corners of the size
    copies.py    many independent trainings in one Opacus training (docs/theory.md §7.1)

Claim (docs/theory.md §7): Opacus's accountant ("prv", its default, "rdp" or "gdp") after a
training of each dataset of the pairs, read at `delta`; the larger figure of a pair's two
datasets. The output is the trained parameters ("last") or the parameters after every step
("trajectory", which the accountant also covers).

Randomness: Opacus draws its noise from `noise_generator` and its Poisson batches from the
sampler's generator; the adapter seeds both from the engine's rng (randomness="rng"), so an
audit is reproducible. The model's initial parameters are fixed (the factory's under
`init_seed`), as DP-SGD's guarantee holds for any initialisation. Layers that draw from
torch's global generator (dropout) are not seeded.

Speed: one training of a 1-parameter model through make_private costs about 14 ms; K copies in
one training (copies.py, batched=True) cost 0.3-0.6 ms per training on one core
(reports/throughput.md). Trainings that cannot be batched (integer inputs, ghost clipping)
run one by one.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import DpVerifyError, InvalidPairsError
from ...mechanism import Mechanism, validate_claim
from .claims import Reading, read
from .copies import copies_per_call, supports, train_copies
from .pairs import CORNERS, as_examples, corner_pairs, default_canary
from .training import Examples, Training, initial_state, require_opacus, train_once

# the audit's default runs per input: batched trainings of a small model cost about half a
# millisecond, so 2^14 runs per input keep a default audit of two pairs within minutes
DEFAULT_SAMPLES = 1 << 14
DEFAULT_DELTA = 1e-5


class Trainings:
    """The engine's mechanism function: `size` trainings of a dataset, batched (K at a time)
    or one by one; outputs (size, width) float64."""

    def __init__(self, training: Training, state: dict, readings: dict, batched: bool,
                 parameters: int):
        self.training, self.state, self.readings = training, state, readings
        # make_private_with_epsilon searches its noise multiplier on every call (about a
        # second with the PRV accountant); the runs train with the σ it chose for each
        # dataset through make_private, which is what make_private_with_epsilon calls
        self.sampled = {data: _with_noise(training, reading) for data, reading in
                        readings.items()}
        self.batched = batched
        self.parameters = parameters
        self.copies = copies_per_call(training, parameters)
        self.steps = max(r.steps for r in readings.values())

    @property
    def width(self) -> int:
        return self.parameters * (1 if self.training.output == "last" else self.steps)

    def __call__(self, data, rng, size):
        reading = self.readings.get(data)
        if reading is None:
            raise InvalidPairsError(f"{data!r} is not a dataset of this mechanism's pairs "
                                    "(its claim was read on those only)")
        training = self.sampled[data]
        if self.batched:
            rows, done = [], 0
            while done < size:
                k = min(self.copies, size - done)
                rows.append(train_copies(training, self.state, data, k,
                                         reading.expected_batch_size, rng))
                done += k
            out = np.concatenate(rows)
        else:
            out = np.stack([train_once(training, self.state, data, rng) for _ in range(size)])
        return self._padded(out)

    def _padded(self, out: np.ndarray) -> np.ndarray:
        """Fewer steps than the longest training of the pairs: a trajectory's last parameters
        repeated, updates of 0 (the parameters stay where they are)."""
        if out.shape[1] == self.width:
            return out
        missing = (self.width - out.shape[1]) // self.parameters
        last = out[:, -self.parameters:] if self.training.output == "trajectory" else \
            np.zeros((len(out), self.parameters))
        return np.concatenate([out] + [last] * missing, axis=1)


def _with_noise(training: Training, reading: Reading) -> Training:
    """The training with make_private_with_epsilon's choice of σ given to make_private."""
    if training.target_epsilon is None:
        return training
    return dataclasses.replace(training, noise_multiplier=reading.noise_multiplier,
                               target_epsilon=None, target_delta=None)


def from_training(model, optimizer, criterion, inputs, targets, *, batch_size: int,
                  noise_multiplier=None, max_grad_norm=1.0, epochs: int = 1,
                  loader: str = "poisson", drop_last: bool = False, accountant: str = "prv",
                  delta=None, target_epsilon=None, target_delta=None, output: str = "last",
                  canary=None, corner: str = "user", pairs=None, batched: bool = True,
                  init_seed: int = 0, name=None, **make_private) -> Mechanism:
    """A dpverify Mechanism training `model()` with `optimizer(params)` and `criterion` on
    (inputs, targets) through Opacus's `PrivacyEngine(accountant).make_private(...)` (or
    `make_private_with_epsilon` when target_epsilon= and target_delta= are given).

    loader: "poisson" (Opacus's Poisson sampling), "shuffled" or "sequential" (a DataLoader
    with shuffle=True / False and poisson_sampling=False). make_private: further arguments
    (clipping="per_layer", loss_reduction="sum", grad_sample_mode=...).
    corner: which neighbours (pairs.CORNERS; "user": a canary added to the dataset, its last
    example removed); canary: (input, target) of the added example; pairs: [(D, D2), ...] of
    `as_examples(inputs, targets, label)` instead. output: "last", "trajectory" or "updates".
    delta: the δ the claim is read at (default target_delta, else 1e-5). batched=False trains
    one model per run.
    """
    require_opacus()
    spec = Training(model=model, optimizer=optimizer, criterion=criterion,
                    batch_size=batch_size, epochs=epochs, noise_multiplier=noise_multiplier,
                    max_grad_norm=max_grad_norm, loader=loader, drop_last=drop_last,
                    output=output, accountant=accountant, target_epsilon=target_epsilon,
                    target_delta=target_delta, init_seed=init_seed, private=dict(make_private))
    delta = validate_claim(1.0, DEFAULT_DELTA if delta is None and target_delta is None else
                           (target_delta if delta is None else delta))[1]
    if delta <= 0:
        raise DpVerifyError("delta must be > 0: Opacus's accountants report ε at a δ > 0")
    data = as_examples(inputs, targets)
    if pairs is not None:
        corner = "the given pairs"
    else:
        found = corner_pairs(spec, data, canary)
        if corner not in found:
            raise InvalidPairsError(f"corner must be one of {', '.join(found)} for this "
                                    f"dataset and loader, got {corner!r}")
        pairs = found[corner]
    return _mechanism(spec, pairs, delta, batched, name or describe(spec, corner))


def corners(model, optimizer, criterion, inputs, targets, **kwargs) -> dict[str, Mechanism]:
    """{corner: Mechanism} for every corner of pairs.CORNERS that applies, each with its own
    claim (from_training's arguments)."""
    spec_args = {k: v for k, v in kwargs.items() if k not in ("corner", "name")}
    probe = Training(model=model, optimizer=optimizer, criterion=criterion,
                     batch_size=kwargs["batch_size"], noise_multiplier=1.0,
                     drop_last=kwargs.get("drop_last", False),
                     private={"loss_reduction": kwargs.get("loss_reduction", "mean")})
    names = corner_pairs(probe, as_examples(inputs, targets), kwargs.get("canary"))
    return {c: from_training(model, optimizer, criterion, inputs, targets, corner=c,
                             **spec_args) for c in names}


def _mechanism(spec: Training, pairs, delta: float, batched: bool, label: str) -> Mechanism:
    """The Mechanism: the claim read on every dataset of the pairs (the largest), the runner."""
    pairs = [tuple(pair) for pair in pairs]
    if not pairs or any(len(p) != 2 or not all(isinstance(d, Examples) for d in p)
                        for p in pairs):
        raise InvalidPairsError(f"{label}: pairs must be (Examples, Examples) tuples")
    state = initial_state(spec)
    readings = {}
    for pair in pairs:
        for d in pair:
            if d not in readings:
                readings[d] = _read(spec, state, d, delta, label)
    batched = batched and all(supports(spec, d) is None for d in readings)
    parameters = sum(int(np.prod(p.shape)) for p in state.values())
    runner = Trainings(spec, state, readings, batched, parameters)
    epsilon = max(r.epsilon for r in readings.values())
    return Mechanism(fn=runner, name=label, epsilon=epsilon, delta=delta, pairs=pairs,
                     batched=True, randomness="rng", samples=DEFAULT_SAMPLES)


def _read(spec, state, data, delta, label) -> Reading:
    """Opacus's reading of one dataset, its own errors named."""
    try:
        return read(spec, state, data, delta)
    except DpVerifyError:
        raise
    except Exception as exc:  # the library's own error, whatever its type
        raise DpVerifyError(f"{label}: Opacus failed to train on {data!r}: "
                            f"{type(exc).__name__}: {exc}") from None


def describe(spec: Training, corner: str) -> str:
    """E.g. "opacus:make_private(loader=poisson, batch_size=4, epochs=1, noise_multiplier=1,
    max_grad_norm=1, accountant=prv) on user"."""
    args = [f"loader={spec.loader}", f"batch_size={spec.batch_size}", f"epochs={spec.epochs}"]
    if spec.target_epsilon is None:
        args.append(f"noise_multiplier={spec.noise_multiplier:g}")
    else:
        args.append(f"target_epsilon={spec.target_epsilon:g}, target_delta="
                    f"{spec.target_delta:g}")
    args.append(f"max_grad_norm={spec.max_grad_norm}")
    args += [f"{k}={v}" for k, v in sorted(spec.private.items())]
    args.append(f"accountant={spec.accountant}")
    if spec.output != "last":
        args.append(f"output={spec.output}")
    method = "make_private" if spec.target_epsilon is None else "make_private_with_epsilon"
    return f"opacus:{method}({', '.join(args)}) on {corner}"


__all__ = ["from_training", "corners", "Trainings", "Training", "Examples", "Reading", "read",
           "corner_pairs", "default_canary", "as_examples", "CORNERS", "DEFAULT_SAMPLES",
           "DEFAULT_DELTA", "require_opacus"]
