"""Variable-length sequence classification: the majority symbol (the task-shape demo for B1)."""

from __future__ import annotations

import numpy as np
import torch

from components.bounds import Count, Size, Symbols
from components.data.errors import DataError
from components.data.split_sizes import N_TEST, N_TRAIN, N_VALID
from components.data.tasks import write_task
from components.registry import component


def _sequence(rng: np.random.Generator, length: int, vocab: int) -> tuple[np.ndarray, int]:
    """Draw symbols until one is strictly the most frequent; return them and that symbol."""
    while True:
        seq = rng.integers(0, vocab, size=length)
        counts = np.bincount(seq, minlength=vocab)
        top = np.flatnonzero(counts == counts.max())
        if top.size == 1:
            return seq, int(top[0])


@component("data.variable_length", outputs=["dataset"], bottleneck="B1")
def variable_length(
    ctx,
    *,
    vocab: Symbols = 4,
    min_len: Size = 5,
    max_len: Size = 50,
    n_train: Count = N_TRAIN,
    n_valid: Count = N_VALID,
    n_test: Count = N_TEST,
    seed: Count = 0,
) -> dict:
    """Generate sequences of random length labelled with their most frequent symbol.

    Args:
        vocab: symbols ``0..vocab-1``, also the classes; ties are redrawn so the label is unique.
        min_len, max_len: length range (inclusive); shorter sequences are right-padded with ``pad_id``.
        n_train, n_valid, n_test: examples per split.
        seed: generator seed; each split has its own stream.

    Returns:
        ``dataset``: folder with ``x (N, max_len)``, ``y (N,)`` and ``lengths (N,)``.
    """
    if vocab < 2:
        raise DataError(f"vocab must be >= 2 symbols, got {vocab}")
    if not 1 <= min_len <= max_len:
        raise DataError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    pad_id = vocab

    def make(rng: np.random.Generator, n: int, split: str) -> dict[str, torch.Tensor]:
        x = np.full((n, max_len), pad_id, dtype=np.int64)
        y = np.zeros(n, dtype=np.int64)
        lengths = rng.integers(min_len, max_len + 1, size=n)
        for i, length in enumerate(lengths):
            seq, y[i] = _sequence(rng, int(length), vocab)
            x[i, :length] = seq
        return {"x": torch.from_numpy(x), "y": torch.from_numpy(y), "lengths": torch.from_numpy(lengths)}

    meta = {
        "task": "variable_length",
        "target": "classify",
        "vocab_size": vocab + 1,
        "pad_id": pad_id,
        "num_classes": vocab,
        "input_dim": 0,
        "min_len": min_len,
        "max_len": max_len,
        "chance": 1.0 / vocab,
        "label_rule": "y = the symbol occurring most often in x[:length] (always unique)",
    }
    return write_task(ctx, make, meta, n_train=n_train, n_valid=n_valid, n_test=n_test, seed=seed)
