"""One chunk: run the mechanism `size` times on one input and encode its outputs.

`run_chunk` is what a worker executes; it returns only what the caller needs: a certifying chunk
(given an `evaluate`) its event counts, a search chunk its encoded outputs.
"""
from __future__ import annotations

import copy
import time
from typing import Callable, NamedTuple

import numpy as np

from .encoding import Encoded, encode
from ..errors import MechanismError, MechanismOutputError, where_raised
from ..mechanism import Mechanism
from .chunks import ChunkTask


class ChunkSeconds(NamedTuple):
    """Seconds one chunk spent drawing and encoding its outputs, and evaluating them."""
    draw: float
    evaluate: float


def describe_input(data) -> str:
    """`repr(data)`, cut to 80 characters, for error messages."""
    text = repr(data)
    return text if len(text) <= 80 else text[:77] + "..."


def _mechanism_raised(mech: Mechanism, exc: Exception, data, where: str) -> MechanismError:
    """The error for a mechanism that raised `exc` on `data`: its message ends with the
    innermost frames of the mechanism's own code (`errors.where_raised`)."""
    frames = where_raised(exc)
    return MechanismError(
        f"mechanism {mech.name!r} raised {type(exc).__name__}: {exc} on input "
        f"{describe_input(data)} {where}" + (f"\n{frames}" if frames else ""))


def draw_outputs(mech: Mechanism, data, rng: np.random.Generator, size: int, start: int):
    """Run the mechanism `size` times on `data`; wrap any exception into a MechanismError whose
    message ends with the innermost frames of the mechanism's own code (file:line, source)."""
    data = copy.deepcopy(data)  # a mechanism that mutates its input must not leak into later runs
    if mech.batched:
        try:
            return mech.fn(data, rng, size)
        except Exception as exc:
            raise _mechanism_raised(
                mech, exc, data, f"(batch of samples {start}..{start + size - 1})") from exc
    fn, outputs = mech.fn, []
    append = outputs.append
    try:  # the scalar path's cost is this loop: nothing in it but the call
        for _ in range(size):
            append(fn(data, rng))
    except Exception as exc:
        raise _mechanism_raised(
            mech, exc, data, f"at sample {start + len(outputs)}") from exc
    return outputs


def run_chunk(mech: Mechanism, data, task: ChunkTask, root_seed: int,
              evaluate: Callable[[Encoded], np.ndarray] | None = None):
    """Draw one chunk and return (schema, encoded outputs) or, with `evaluate`, (schema, counts),
    followed by the seconds spent drawing and encoding, and evaluating (`ChunkSeconds`)."""
    started = time.perf_counter()
    rng = np.random.default_rng(task.seed_sequence(root_seed))
    outputs = draw_outputs(mech, data, rng, task.size, task.start)
    try:
        enc, schema = encode(outputs, task.size, task.start, batched=mech.batched,
                             exact_floats=mech.floating_point)
    except MechanismOutputError as exc:
        raise MechanismOutputError(
            f"mechanism {mech.name!r} on input {describe_input(data)}: {exc}") from None
    drawn = time.perf_counter()
    if evaluate is None:
        return schema, enc, ChunkSeconds(drawn - started, 0.0)
    counts = evaluate(enc)
    return schema, counts, ChunkSeconds(drawn - started, time.perf_counter() - drawn)
