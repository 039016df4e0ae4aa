"""The adding problem (Hochreiter & Schmidhuber 1997, experiment 4): sum two marked values."""

from __future__ import annotations

from typing import Annotated

import numpy as np
import torch
from pydantic import Field

from components.bounds import Count
from components.data.errors import DataError
from components.data.split_sizes import N_TEST, N_TRAIN, N_VALID
from components.data.tasks import write_task
from components.registry import component

TOLERANCE = 0.04  # the paper counts a sequence as right when |error| < 0.04


def _chance(tol: float = TOLERANCE) -> float:
    """Accuracy of always answering 0.5: P(|X1 + X2| < 4 tol); X1 = 0 when the first pair is marked."""
    a = 4 * tol
    triangular = (4 * a - a * a) / 4  # X1 + X2 ~ triangular on [-2, 2]
    return 0.9 * triangular + 0.1 * a  # 1 in 10 sequences marks pair 0, leaving X2 ~ U[-1, 1]


def _batch(rng: np.random.Generator, n: int, min_len: int, max_len: int):
    """``n`` sequences of (value, marker) pairs, zero-padded to ``max_len``, as the paper specifies."""
    lengths = rng.integers(min_len, max_len + 1, size=n)  # random lengths in [T, T + T/10]
    x = np.zeros((n, max_len, 2), dtype=np.float32)
    x[:, :, 0] = rng.uniform(-1.0, 1.0, size=(n, max_len))
    rows = np.arange(n)
    x[:, 0, 1] = -1.0  # first and last pairs carry -1 unless marked
    x[rows, lengths - 1, 1] = -1.0
    i1 = rng.integers(0, 10, size=n)  # one of the first ten pairs
    i2 = rng.integers(0, min_len // 2 - 1, size=n)  # one of the first T/2 - 1 still unmarked pairs
    i2 += i2 >= i1
    x[rows[i1 == 0], 0, 0] = 0.0  # "in the rare case where the first pair gets marked, we set X1 to zero"
    x[rows, i1, 1] = x[rows, i2, 1] = 1.0
    x[np.arange(max_len)[None, :] >= lengths[:, None]] = 0.0  # padding
    y = 0.5 + (x[rows, i1, 0] + x[rows, i2, 0]) / 4.0
    return x, y.astype(np.float32), lengths


@component("data.adding", outputs=["dataset"], bottleneck="B2")
def adding(
    ctx,
    *,
    seq_len: Annotated[int, Field(ge=20)] = 100,
    n_train: Count = N_TRAIN,
    n_valid: Count = N_VALID,
    n_test: Count = N_TEST,
    seed: Count = 0,
) -> dict:
    """Generate the adding problem: output 0.5 + (X1 + X2) / 4 for the two marked values.

    Args:
        seq_len: the minimal length T; each sequence has a random length in ``[T, T + T // 10]``.
        n_train, n_valid, n_test: examples per split.
        seed: generator seed; each split has its own stream.

    Returns:
        ``dataset``: folder with float inputs ``x (N, T_max, 2)`` (value, marker), zero-padded,
        targets ``y (N,)`` in ``[0, 1]`` and ``lengths``.
    """
    if seq_len < 20:
        raise DataError(
            f"seq_len must be >= 20 (one marked pair among the first 10, one among the first T/2), got {seq_len}"
        )
    max_len = seq_len + seq_len // 10

    def make(rng: np.random.Generator, n: int, split: str) -> dict[str, torch.Tensor]:
        x, y, lengths = _batch(rng, n, seq_len, max_len)
        return {"x": torch.from_numpy(x), "y": torch.from_numpy(y), "lengths": torch.from_numpy(lengths)}

    meta = {
        "task": "adding",
        "target": "regress",
        "vocab_size": 0,
        "input_dim": 2,
        "num_classes": 0,
        "pad_id": 0,
        "min_len": seq_len,
        "max_len": max_len,
        "lag": seq_len - seq_len // 2,
        "tolerance": TOLERANCE,
        "chance": _chance(),
        "label_rule": "y = 0.5 + (sum of x[t, 0] where x[t, 1] == 1) / 4; "
        "correct when |error| < 0.04; chance = accuracy of always answering 0.5",
    }
    return write_task(ctx, make, meta, n_train=n_train, n_valid=n_valid, n_test=n_test, seed=seed)
