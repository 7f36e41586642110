"""Several processes (``accelerate launch``, ``torchrun``): who computes what, who writes, when to wait.

A stage started by ``accelerate launch --num_processes N -m looking_inward <stage>`` runs in N processes. The
launcher sets ``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE``; :func:`setup` turns them into a process group
(through accelerate's ``PartialState``, NCCL on GPUs, gloo on CPUs) before any model is placed, and
:func:`device` gives each process its own GPU. Then:

- **inference** is shared out by shard: process r computes the shards ``k`` with ``k % N == r`` and writes
  them; after a barrier every process reads all of them. A shard's rows depend on its items alone, so the
  tables are those of one process;
- **training** shares each step's batch out among the processes (``reproduce.lm.finetune``), with the loss
  weighted by answer tokens across them;
- **only the main process writes** the stage's outputs (tables, adapters, indexes); the others wait at a
  barrier wherever they are about to read what it wrote.

With one process (no launcher) every function here is a no-op or the obvious answer.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TypeVar

import torch

T = TypeVar("T")


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def is_main() -> bool:
    return rank() == 0


def distributed() -> bool:
    return world_size() > 1


def setup(device: str = "auto") -> None:
    """Create the process group (once) when started by a launcher; ``device`` is the profile's."""
    if not distributed():
        return
    from accelerate import PartialState

    use_cpu = device == "cpu" or not torch.cuda.is_available()
    PartialState(cpu=use_cpu)


def device(requested: str = "auto") -> torch.device | None:
    """This process's GPU when several processes share the GPUs, else None (the caller decides)."""
    if distributed() and requested in ("auto", "cuda") and torch.cuda.is_available():
        setup(requested)
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return None


def barrier() -> None:
    """Wait for every process (nothing to wait for with one)."""
    if distributed():
        from accelerate import PartialState

        PartialState().wait_for_everyone()


def main_only(fn: Callable[..., T]) -> Callable[..., T | None]:
    """``fn`` run on the main process only (a writer of a stage output)."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if is_main():
            return fn(*args, **kwargs)
        return None
    return wrapped


def mine(k: int) -> bool:
    """Whether shard ``k`` is this process's to compute."""
    return k % world_size() == rank()
