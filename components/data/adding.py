"""The adding problem (Hochreiter & Schmidhuber 1997, experiment 4): sum two marked values."""
from __future__ import annotations

import numpy as np
import torch

from components.data.errors import DataError
from components.data.tasks import check_counts, write_task
from components.registry import component

TOLERANCE = 0.04  # the paper counts a sequence as right when |error| < 0.04


def _chance(tol: float = TOLERANCE) -> float:
    """Accuracy of always answering 0.5: P(|X1 + X2| < 4 tol); X1 = 0 when the first pair is marked."""
    a = 4 * tol
    triangular = (4 * a - a * a) / 4  # X1 + X2 ~ triangular on [-2, 2]
    return 0.9 * triangular + 0.1 * a  # 1 in 10 sequences marks pair 0, leaving X2 ~ U[-1, 1]


def _sequence(rng: np.random.Generator, length: int, min_len: int) -> tuple[np.ndarray, float]:
    """One sequence of (value, marker) pairs and its target, as the paper specifies."""
    pairs = np.zeros((length, 2), dtype=np.float32)
    pairs[:, 0] = rng.uniform(-1.0, 1.0, size=length)
    pairs[0, 1] = pairs[-1, 1] = -1.0  # first and last pairs carry -1 unless marked
    i1 = int(rng.integers(0, 10))  # one of the first ten pairs
    i2 = int(rng.choice([p for p in range(min_len // 2) if p != i1]))  # one of the first T/2 - 1 unmarked
    if i1 == 0:
        pairs[0, 0] = 0.0  # "in the rare case where the first pair gets marked, we set X1 to zero"
    pairs[[i1, i2], 1] = 1.0
    return pairs, 0.5 + (pairs[i1, 0] + pairs[i2, 0]) / 4.0


@component("data.adding", outputs=["dataset"], bottleneck="B2")
def adding(ctx, *, seq_len: int = 100, n_train: int = 5000, n_valid: int = 500, n_test: int = 1000,
           seed: int = 0) -> dict:
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
        raise DataError(f"seq_len must be >= 20 (one marked pair among the first 10, one among the first T/2), got {seq_len}")
    check_counts(n_train=n_train, n_valid=n_valid, n_test=n_test)
    max_len = seq_len + seq_len // 10

    def make(rng: np.random.Generator, n: int, split: str) -> dict[str, torch.Tensor]:
        x = np.zeros((n, max_len, 2), dtype=np.float32)
        y = np.zeros(n, dtype=np.float32)
        lengths = rng.integers(seq_len, max_len + 1, size=n)
        for i, length in enumerate(lengths):
            x[i, :length], y[i] = _sequence(rng, int(length), seq_len)
        return {"x": torch.from_numpy(x), "y": torch.from_numpy(y), "lengths": torch.from_numpy(lengths)}

    meta = {"task": "adding", "target": "regress", "vocab_size": 0, "input_dim": 2, "num_classes": 0,
            "pad_id": 0, "min_len": seq_len, "max_len": max_len, "lag": seq_len - seq_len // 2, "tolerance": TOLERANCE,
            "chance": _chance(), "label_rule": "y = 0.5 + (sum of x[t, 0] where x[t, 1] == 1) / 4; "
            "correct when |error| < 0.04; chance = accuracy of always answering 0.5"}
    folder = write_task(ctx, make, {"train": n_train, "valid": n_valid, "test": n_test}, seed, meta)
    return {"dataset": str(folder)}
