"""One Opacus training as a user's code runs it: `PrivacyEngine.make_private` on a model, an
optimizer and a DataLoader, then the usual loop over epochs and batches.

`Training` holds what the user chose (model factory, optimizer factory, loss, loader settings,
`make_private` arguments); `Examples` is one dataset of the audit (inputs and targets, a
label saying what it is). `train_once` runs one training of a dataset with its randomness
from two torch generators (the batch sampler's and the noise's), seeded from the engine's
`rng`, and returns the parameters the audit looks at (`Record`).
"""
from __future__ import annotations

import copy
import logging
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ...errors import DpVerifyError
from .. import require

LOADERS = ("poisson", "shuffled", "sequential")
OUTPUTS = ("last", "trajectory", "updates")


# Opacus's note that secure_mode is off (the adapter seeds its generators on purpose), and
# torch's note that a full backward hook fires on outputs (Opacus's hooks, inputs need no grad)
QUIET = ("Secure RNG turned off", "Full backward hook is firing")


def require_opacus():
    """Import opacus (and torch), or raise a DpVerifyError saying how to install them. The
    two notes in QUIET are filtered (the filters are set once: warnings.catch_warnings is not
    safe across the engine's threads)."""
    require("torch", "opacus", "torch 2 (the CPU build: pip install torch==2.13.0)", "opacus")
    opacus = require("opacus", "opacus", "opacus 1.5-1.6 and torch 2", "opacus")
    for message in QUIET:
        warnings.filterwarnings("ignore", message=message, category=UserWarning)
    # the PRV accountant takes log(0) on its grid's edge, and says so, on every reading
    warnings.filterwarnings("ignore", message="divide by zero encountered in log",
                            category=RuntimeWarning, module="opacus")
    # Opacus logs every empty first Poisson batch (1.8% of trainings of 38 examples at q = 0.1):
    # expected here, and an audit trains millions of times
    logger = logging.getLogger("opacus.data_loader")
    if not any(isinstance(f, _EmptyBatchNote) for f in logger.filters):
        logger.addFilter(_EmptyBatchNote())
    return opacus


class _EmptyBatchNote(logging.Filter):
    """Drops Opacus's "First batch is empty" log line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("First batch is empty")


@dataclass(frozen=True, eq=False)
class Examples:
    """A dataset of the audit: `inputs` (N, ...) and `targets` (N, ...) as numpy arrays, and a
    label saying what it is (e.g. "the 40 examples + the canary")."""

    inputs: np.ndarray
    targets: np.ndarray
    label: str

    def __len__(self) -> int:
        return len(self.inputs)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Examples) and np.array_equal(self.inputs, other.inputs)
                and np.array_equal(self.targets, other.targets))

    def __hash__(self) -> int:
        return hash((self.inputs.tobytes(), self.targets.tobytes()))

    def __repr__(self) -> str:
        return f"<{self.label}: {len(self)} examples>"

    def subset(self, stop: int, label: str) -> "Examples":
        """The first `stop` examples."""
        return Examples(self.inputs[:stop], self.targets[:stop], label)

    def plus(self, inputs, targets, label: str) -> "Examples":
        """These examples and one more at the end."""
        return Examples(np.concatenate([self.inputs, np.asarray(inputs)[None]]),
                        np.concatenate([self.targets, np.asarray(targets)[None]]), label)


@dataclass(frozen=True)
class Training:
    """A user's DP-SGD training: what `make_private` gets and how the loop runs.

    model: a factory `() -> torch.nn.Module`; it is called once (under torch seed
    `init_seed`), and every training starts from those initial parameters (the audit holds
    the initialisation fixed, as DP-SGD's guarantee does for any initialisation).
    optimizer: a factory `params -> torch.optim.Optimizer` (e.g. `lambda p: SGD(p, lr=0.1)`).
    criterion: the loss module (its reduction must match `loss_reduction`).
    loader: "poisson" (make_private's default: Opacus's DPDataLoader), "shuffled" (a
    DataLoader with shuffle=True, poisson_sampling=False) or "sequential" (shuffle=False).
    output: "last" (the parameters after training), "trajectory" (after every step) or
    "updates" (every step's change: the trajectory's differences, the same information).
    private: further keyword arguments of make_private (clipping, loss_reduction,
    grad_sample_mode, ...), kept as given.
    """

    model: Callable[[], Any]
    optimizer: Callable[[Any], Any]
    criterion: Any
    batch_size: int
    epochs: int = 1
    noise_multiplier: float | None = None
    max_grad_norm: Any = 1.0
    loader: str = "poisson"
    drop_last: bool = False
    output: str = "last"
    accountant: str = "prv"
    target_epsilon: float | None = None
    target_delta: float | None = None
    init_seed: int = 0
    private: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.loader not in LOADERS:
            raise DpVerifyError(f"loader must be one of {', '.join(LOADERS)}, got "
                                f"{self.loader!r}")
        if self.output not in OUTPUTS:
            raise DpVerifyError(f"output must be 'last' (the trained parameters), "
                                f"'trajectory' (the parameters after every step) or 'updates' "
                                f"(every step's change of the parameters), got "
                                f"{self.output!r}")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise DpVerifyError(f"batch_size must be a positive integer, got "
                                f"{self.batch_size!r}")
        if not isinstance(self.epochs, int) or self.epochs < 1:
            raise DpVerifyError(f"epochs must be a positive integer, got {self.epochs!r}")
        if (self.noise_multiplier is None) == (self.target_epsilon is None):
            raise DpVerifyError("give noise_multiplier= (make_private) or target_epsilon= "
                                "and target_delta= (make_private_with_epsilon), not both")
        if self.target_epsilon is not None and self.target_delta is None:
            raise DpVerifyError("target_epsilon= needs target_delta= "
                                "(make_private_with_epsilon's arguments)")

    @property
    def loss_reduction(self) -> str:
        return self.private.get("loss_reduction", "mean")


def torch_generator(rng: np.random.Generator):
    """A torch generator seeded from the engine's numpy generator."""
    import torch
    return torch.Generator().manual_seed(int(rng.integers(2**62)))


def initial_state(training: Training) -> dict:
    """The initial parameters every training starts from: the model factory's, under torch
    seed `init_seed` (the global generator is forked, so the user's stream is untouched)."""
    import torch
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(training.init_seed)
        model = training.model()
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def fresh_model(training: Training, state: dict):
    """A model from the factory with the audit's initial parameters."""
    import torch
    with torch.random.fork_rng(devices=[]):
        model = training.model()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(state[name])
    return model


def tensors(examples: Examples):
    """The dataset's inputs and targets as torch tensors (inputs float32 unless integer)."""
    import torch
    inputs = torch.as_tensor(examples.inputs)
    if inputs.is_floating_point():
        inputs = inputs.float()
    targets = torch.as_tensor(examples.targets)
    if targets.is_floating_point():
        targets = targets.float()
    return inputs, targets


def user_loader(training: Training, dataset, generator):
    """The DataLoader a user hands to make_private."""
    from torch.utils.data import DataLoader
    return DataLoader(dataset, batch_size=training.batch_size,
                      shuffle=training.loader == "shuffled", drop_last=training.drop_last,
                      generator=generator)


def make_private(training: Training, module, optimizer, loader, noise_generator):
    """`PrivacyEngine(accountant).make_private` (or `make_private_with_epsilon`) as the user
    calls it; returns (engine, module, optimizer, loader, criterion)."""
    import opacus
    engine = opacus.PrivacyEngine(accountant=training.accountant)
    common = dict(module=module, optimizer=optimizer, data_loader=loader,
                  max_grad_norm=training.max_grad_norm,
                  poisson_sampling=training.loader == "poisson",
                  noise_generator=noise_generator, **training.private)
    # each training its own loss module: Opacus's ghost clipping sets its reduction to "none"
    # while it computes per-sample losses, which another thread's training would then see
    criterion = copy.deepcopy(training.criterion)
    if "ghost" in training.private.get("grad_sample_mode", "hooks"):
        common["criterion"] = criterion
    if training.target_epsilon is None:
        made = engine.make_private(noise_multiplier=training.noise_multiplier, **common)
    else:
        made = engine.make_private_with_epsilon(
            target_epsilon=training.target_epsilon, target_delta=training.target_delta,
            epochs=training.epochs, **common)
    if len(made) == 4:   # ghost clipping: (module, optimizer, its criterion, loader)
        module, optimizer, criterion, loader = made
    else:
        module, optimizer, loader = made
    return engine, module, optimizer, loader, criterion


def seed_sampler(loader, generator) -> None:
    """Opacus's Poisson batch sampler draws from torch's global generator unless given one
    (make_private passes its secure generator only in secure_mode): give it `generator`, so
    runs are reproducible and threads do not share a stream. The sampler's law is unchanged."""
    sampler = getattr(loader, "batch_sampler", None)
    if sampler is not None and hasattr(sampler, "generator"):
        sampler.generator = generator


def run_loop(training: Training, module, optimizer, loader, criterion, record) -> None:
    """The training loop: for each epoch and batch, zero_grad, loss, backward, step; `record`
    is called after every step."""
    for _ in range(training.epochs):
        for inputs, targets in loader:
            optimizer.zero_grad()
            criterion(module(inputs), targets).backward()
            optimizer.step()
            record()


def flat_parameters(module) -> np.ndarray:
    """A model's parameters, flattened in named_parameters order, as float64."""
    import torch
    with torch.no_grad():
        return torch.cat([p.detach().reshape(-1) for p in module.parameters()]).double().numpy()


def prepared(training: Training, state: dict, examples: Examples, rng):
    """A fresh model, optimizer and loader of `examples`, made private as the user's code does;
    returns (engine, module, optimizer, loader, criterion). The batch sampler and the noise
    draw from torch generators seeded from `rng`."""
    from torch.utils.data import TensorDataset
    loader_generator, noise_generator = torch_generator(rng), torch_generator(rng)
    module = fresh_model(training, state)
    optimizer = training.optimizer(module.parameters())
    loader = user_loader(training, TensorDataset(*tensors(examples)), loader_generator)
    made = make_private(training, module, optimizer, loader, noise_generator)
    seed_sampler(made[3], loader_generator)
    return made


def train_once(training: Training, state: dict, examples: Examples, rng) -> np.ndarray:
    """One training of `examples` as the user's code runs it; the output per `training.output`
    (docs/libraries.md#opacus)."""
    _, module, optimizer, loader, criterion = prepared(training, state, examples, rng)
    return recorded_run(training, module, optimizer, loader, criterion,
                        lambda: flat_parameters(module))


def recorded_run(training: Training, module, optimizer, loader, criterion, snapshot):
    """The training loop, with `snapshot()` (the parameters, (P,) or (K, P)) taken before and
    after every step, or after the last only for output "last"; the output per
    `training.output`."""
    steps = [] if training.output == "last" else [snapshot()]
    record = (lambda: steps.append(snapshot())) if steps else (lambda: None)
    run_loop(training, module, optimizer, loader, criterion, record)
    if not steps:
        steps = [snapshot()]
    return output_of(training, np.stack(steps, axis=-2))


def output_of(training: Training, parameters: np.ndarray) -> np.ndarray:
    """What the audit sees, from the parameters before the first step and after each (S+1, P),
    or after the last only (1, P), with the runs (if any) on a leading axis."""
    if training.output == "last":
        return parameters[..., -1, :]
    if training.output == "updates":
        parameters = np.diff(parameters, axis=-2)
    else:
        parameters = parameters[..., 1:, :]
    return parameters.reshape(*parameters.shape[:-2], -1)
