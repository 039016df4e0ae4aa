"""Shared helpers for the synthetic sequence tasks: seeded generators and the on-disk layout."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from components.data.errors import DataError
from components.data.io import save_splits, write_meta

SPLIT_IDS = {"train": 0, "valid": 1, "test": 2}


def split_rng(seed: int, split: str) -> np.random.Generator:
    """A generator for one split: the test set does not change when ``n_train`` does."""
    return np.random.default_rng([seed, SPLIT_IDS[split]])


def check_counts(**counts: int) -> None:
    """Reject negative or all-zero example counts."""
    for name, n in counts.items():
        if n < 0:
            raise DataError(f"{name} must be >= 0, got {n}")
    if not any(counts.values()):
        raise DataError(f"all example counts are 0 ({', '.join(counts)}): ask for some examples")


def write_task(
    ctx,
    make: Callable[[np.random.Generator, int, str], dict[str, torch.Tensor]],
    meta: dict[str, Any],
    *,
    n_train: int,
    n_valid: int,
    n_test: int,
    seed: int,
) -> dict[str, str]:
    """Check the example counts, generate every split with ``make(rng, n, split)``, save it with
    ``meta.json``; return the step's outputs (``dataset``: the folder)."""
    check_counts(n_train=n_train, n_valid=n_valid, n_test=n_test)
    counts = {"train": n_train, "valid": n_valid, "test": n_test}
    folder = ctx.path("dataset")
    splits = {name: make(split_rng(seed, name), n, name) for name, n in counts.items()}
    save_splits(folder, splits)
    meta = {"kind": "sequence", "seed": seed, **meta, "counts": dict(counts)}
    write_meta(folder, meta)
    ctx.log_params({k: v for k, v in meta.items() if isinstance(v, (int, float, str, bool))})
    ctx.log_metrics({f"n_{k}": v for k, v in counts.items()})
    return {"dataset": str(folder)}
