"""Many independent trainings in one Opacus training (docs/theory.md §7.1).

K copies of the user's model become one module, `Copies`, whose parameters are the copies'
parameters stacked on a leading axis. The dataset becomes K·N examples: example (k, i) is the
user's example i with the copy index k appended to its flattened input, and `Copies` answers it
with copy k's parameters only. Opacus then trains the module with its own per-sample
gradients (its functorch path for a layer it has no rule for), clipping, noise, batch sampler
and accountant hook, and the K trainings are independent with the law of a single one:

- example (k, i)'s gradient is zero outside copy k, so its norm, and its clipped value, are
  those of example i in a single training of copy k (flat or per-layer clipping alike);
- Opacus adds independent N(0, σ²C²) noise to every coordinate, so each copy gets its own;
- Poisson sampling at rate q = 1/ceil(N/B) keeps every (k, i) independently with probability q:
  each copy's batch is a Poisson batch of its N examples, independent of the others' (the
  loader's batch size is K·B, so the rate and the number of steps are a single training's);
- shuffled and sequential loaders: `CopyBatches` cuts a permutation (or the identity) of each
  copy's N examples into batches of B, as torch's DataLoader does, and step j trains every copy
  on its own j-th batch;
- with loss_reduction="mean" Opacus divides the noisy sum by its expected batch size, which it
  computes from the dataset's size: the K·N-example dataset's is set back to a single
  training's (read from Opacus on the user's dataset, `expected_batch_size`);
- the optimizer's update is coordinate-wise (SGD, momentum, Adam, weight decay), so copy k's
  parameters move as a single training's would.

tests/test_lib_opacus.py compares batched with single trainings (same law, two-sample tests).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .training import (Examples, Training, make_private, recorded_run, seed_sampler, tensors,
                       torch_generator)

# per-sample gradients are K·B × K × P floats a step (B the batch, P the model's parameters):
# copies per call keep that near 2^19 (K = 100 for a 13-parameter MLP in batches of 4, 256 for
# a 2-parameter regression), where a training costs least (measured: 0.43 ms at K = 100
# against 0.47 at 71 and 0.45 at 140 for that MLP, one torch thread)
GRADIENT_FLOATS = 1 << 19
MAX_COPIES = 256


def copies_per_call(training: Training, parameters: int) -> int:
    """K, the trainings one call runs: K²·B·P ≈ GRADIENT_FLOATS, between 1 and MAX_COPIES."""
    k = math.isqrt(max(1, GRADIENT_FLOATS // max(1, training.batch_size * parameters)))
    return int(min(MAX_COPIES, max(1, k)))


def supports(training: Training, examples: Examples) -> str | None:
    """Why this training cannot be batched (None when it can): the copy index travels in the
    input, so inputs must be floating point; Opacus's ghost clipping and expanded weights do
    not take a custom layer."""
    mode = training.private.get("grad_sample_mode", "hooks")
    if mode not in ("hooks", "functorch"):
        return f"grad_sample_mode={mode!r} computes per-sample gradients without a custom layer"
    if not np.issubdtype(np.asarray(examples.inputs).dtype, np.floating):
        return "the inputs are not floating point (the copy index is appended to them)"
    return None


@functools.cache
def _copies_class():
    """`Copies` (defined on first use, so that importing the adapter does not import torch)."""
    from torch import nn
    from torch.func import functional_call, vmap

    class Copies(nn.Module):
        """K copies of a model: input rows are (flattened input, copy index)."""

        def __init__(self, template, state: dict, k: int, input_shape: tuple):
            super().__init__()
            self.names = list(state)
            self.input_shape = tuple(input_shape)
            for i, name in enumerate(self.names):
                stacked = state[name].detach().unsqueeze(0).expand(k, *state[name].shape)
                self.register_parameter(f"p{i}", nn.Parameter(stacked.clone()))
            # the model's structure, without parameters of its own, kept out of the module tree
            # so that Opacus sees `Copies` as one layer
            self._template = [template.to("meta")]

        def stacked(self):
            return [getattr(self, f"p{i}") for i in range(len(self.names))]

        def forward(self, rows):
            inputs = rows[:, :-1].reshape(rows.shape[0], *self.input_shape)
            if rows.shape[0] == 0:   # an empty batch (vmap takes no empty axis): any copy
                first = {name: p[0] for name, p in zip(self.names, self.stacked())}
                return functional_call(self._template[0], first, (inputs,))
            copy = rows[:, -1].long()
            chosen = {name: p[copy] for name, p in zip(self.names, self.stacked())}

            def one(params, x):
                return functional_call(self._template[0], params, (x.unsqueeze(0),)).squeeze(0)
            return vmap(one)(chosen, inputs)

    return Copies


class Rows:
    """The K·N-example dataset: `__getitems__` hands the loader index tensors, so a batch is
    gathered in one indexing instead of one Python call per example."""

    def __init__(self, inputs, targets, index=None):
        self.inputs, self.targets, self.index = inputs, targets, index

    def __len__(self):
        return len(self.inputs) if self.index is None else len(self.index)

    def __getitem__(self, i):
        return self.inputs[i], self.targets[i]

    def __getitems__(self, index):
        import torch
        return Rows(self.inputs, self.targets, torch.as_tensor(index, dtype=torch.long))

    @staticmethod
    def collate(rows: "Rows"):
        return rows.inputs[rows.index], rows.targets[rows.index]


class CopyBatches:
    """Batches of a shuffled or sequential DataLoader, for K copies at once: each epoch, copy
    k's N examples in a uniform random order (torch.randperm, as DataLoader's RandomSampler) or
    in order, cut into batches of B (the last one shorter unless drop_last); batch j holds
    every copy's j-th batch."""

    def __init__(self, n: int, k: int, batch: int, shuffle: bool, drop_last: bool, generator):
        self.n, self.k, self.batch = n, k, batch
        self.shuffle, self.drop_last, self.generator = shuffle, drop_last, generator

    def __len__(self):
        return self.n // self.batch if self.drop_last else -(-self.n // self.batch)

    def __iter__(self):
        import torch
        if self.shuffle:
            order = torch.stack([torch.randperm(self.n, generator=self.generator)
                                 for _ in range(self.k)])
        else:
            order = torch.arange(self.n).expand(self.k, self.n)
        order = order + (torch.arange(self.k) * self.n)[:, None]
        for j in range(len(self)):
            yield order[:, j * self.batch:(j + 1) * self.batch].reshape(-1).tolist()


def copies_loader(training: Training, rows: Rows, n: int, k: int, generator):
    """The loader make_private gets for K copies: batch size K·B for Poisson sampling (so that
    Opacus's rate 1/len(loader) is a single training's), CopyBatches otherwise."""
    from torch.utils.data import DataLoader
    if training.loader == "poisson":
        return DataLoader(rows, batch_size=k * training.batch_size, collate_fn=Rows.collate,
                          drop_last=training.drop_last)
    batches = CopyBatches(n, k, training.batch_size, training.loader == "shuffled",
                          training.drop_last, generator)
    return DataLoader(rows, batch_sampler=batches, collate_fn=Rows.collate)


def train_copies(training: Training, state: dict, examples: Examples, k: int, divisor,
                 rng) -> np.ndarray:
    """K independent trainings of `examples` in one Opacus training; outputs (K, ...), each
    row what `train_once` returns for one training."""
    import torch
    loader_generator, noise_generator = torch_generator(rng), torch_generator(rng)
    inputs, targets = tensors(examples)
    n = len(examples)
    flat = inputs.reshape(n, -1)
    copy_index = torch.arange(k, dtype=flat.dtype).repeat_interleave(n)[:, None]
    rows = Rows(torch.cat([flat.repeat(k, 1), copy_index], dim=1), targets.repeat(
        k, *([1] * (targets.dim() - 1))))
    module = _copies_class()(training.model(), state, k, tuple(inputs.shape[1:]))
    optimizer = training.optimizer(module.parameters())
    loader = copies_loader(training, rows, n, k, loader_generator)
    _, private, optimizer, loader, criterion = make_private(training, module, optimizer,
                                                            loader, noise_generator)
    optimizer.expected_batch_size = divisor
    seed_sampler(loader, loader_generator)
    return recorded_run(training, private, optimizer, loader, criterion,
                        lambda: _stacked_parameters(module, k))


def _stacked_parameters(module, k: int) -> np.ndarray:
    """(K, P): each copy's parameters flattened in the model's named_parameters order."""
    import torch
    with torch.no_grad():
        return torch.cat([p.detach().reshape(k, -1) for p in module.stacked()],
                         dim=1).double().numpy()


__all__ = ["copies_per_call", "supports", "train_copies", "CopyBatches", "Rows",
           "GRADIENT_FLOATS", "MAX_COPIES"]
