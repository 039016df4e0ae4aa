"""Read a data folder (docs/contracts.md) and serve deterministic batches by step number.

The batch at step ``s`` is a pure function of (seed, s): epoch ``e`` shuffles with a generator
seeded from (seed, e). Resuming therefore needs only the step count to continue the data order.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from components.train.build import TrainError

SPLITS = ("train", "valid", "test")


def load_meta(path: str | Path) -> dict[str, Any]:
    """Return ``meta.json`` of a data folder."""
    path = Path(path)
    try:
        from components.data.io import load_meta as _load
    except ImportError:
        _load = None
    if _load is not None:
        return _load(path)
    meta_file = path / "meta.json"
    if not meta_file.exists():
        raise TrainError(f"data folder {path} has no meta.json; pass the 'dataset' output of a data step")
    return json.loads(meta_file.read_text())


def load_split(path: str | Path, split: str) -> dict[str, torch.Tensor]:
    """Return the tensors of one split of a sequence or images folder."""
    if split not in SPLITS:
        raise TrainError(f"unknown split {split!r}; use one of {SPLITS}")
    path = Path(path)
    try:
        from components.data.io import load_split as _load
    except ImportError:
        _load = None
    if _load is not None:
        return _load(path, split)
    file = path / f"{split}.pt"
    if not file.exists():
        raise TrainError(f"data folder {path} has no {split}.pt")
    return torch.load(file, weights_only=True)


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

    def __call__(self, step: int) -> dict[str, torch.Tensor]:
        epoch, i = divmod(step, self.per_epoch)
        idx = epoch_order(self.n, self.seed, epoch)[i * self.batch_size:(i + 1) * self.batch_size]
        return {k: v[idx] for k, v in self.tensors.items()}


def chunks(tensors: dict[str, torch.Tensor], batch_size: int):
    """Yield the split in order, in batches (for evaluation)."""
    n = len(next(iter(tensors.values())))
    for start in range(0, n, batch_size):
        yield {k: v[start:start + batch_size] for k, v in tensors.items()}
