"""Serve deterministic training batches by step number from a data folder's tensors.

The batch at step ``s`` is a pure function of (seed, s): epoch ``e`` shuffles with a generator
seeded from (seed, e). Resuming therefore needs only the step count to continue the data order.
"""

from __future__ import annotations

import torch

from components.data.io import load_meta, load_split  # noqa: F401  (re-exported for tasks)
from components.train.errors import TrainError


def epoch_order(n: int, seed: int, epoch: int) -> torch.Tensor:
    """Return the shuffled example order of one epoch."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    return torch.randperm(n, generator=g)


class TensorBatches:
    """Fixed-size batches of in-memory tensors, indexed by global step."""

    def __init__(self, tensors: dict[str, torch.Tensor], batch_size: int, seed: int):
        self.tensors = tensors
        self.n = len(next(iter(tensors.values())))
        if self.n == 0:
            raise TrainError("the training split is empty")
        self.batch_size = min(batch_size, self.n)
        self.per_epoch = self.n // self.batch_size
        self.seed = seed
        self._order: tuple[int, torch.Tensor] | None = None

    def __call__(self, step: int) -> dict[str, torch.Tensor]:
        epoch, i = divmod(step, self.per_epoch)
        if self._order is None or self._order[0] != epoch:
            self._order = (epoch, epoch_order(self.n, self.seed, epoch))
        idx = self._order[1][i * self.batch_size : (i + 1) * self.batch_size]
        return {k: v[idx] for k, v in self.tensors.items()}


def chunks(tensors: dict[str, torch.Tensor], batch_size: int):
    """Yield the split in order, in batches (for evaluation)."""
    n = len(next(iter(tensors.values())))
    for start in range(0, n, batch_size):
        yield {k: v[start : start + batch_size] for k, v in tensors.items()}
