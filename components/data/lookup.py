"""Multi-lookup: at every step output the tokens a few fixed offsets back (one head per offset)."""

from __future__ import annotations

import numpy as np
import torch

from components.bounds import Count, Size, Sizes, Symbols
from components.data.errors import DataError
from components.data.split_sizes import N_TEST, N_TRAIN, N_VALID
from components.data.tasks import write_task
from components.registry import component


@component("data.multi_lookup", outputs=["dataset"], bottleneck="B4")
def multi_lookup(
    ctx,
    *,
    seq_len: Size = 24,
    vocab: Symbols = 16,
    offsets: Sizes = [1, 3, 6],
    n_train: Count = N_TRAIN,
    n_valid: Count = N_VALID,
    n_test: Count = N_TEST,
    seed: Count = 0,
) -> dict:
    """Generate multi-lookup: ``y[:, t, j] = x[:, t - offsets[j]]``, ``-100`` where ``t < offsets[j]``.

    Args:
        seq_len: tokens per sequence (24 in calibration).
        vocab: symbols ``0..vocab-1``; guessing scores ``1/vocab`` per output.
        offsets: how far back each output looks (1, 3 and 6 separate 1 head from 4 heads).
        n_train, n_valid, n_test: examples per split.
        seed: generator seed; each split has its own stream.

    Returns:
        ``dataset``: folder with ``x (N, T)`` and tag targets ``y (N, T, len(offsets))``.
    """
    if vocab < 2:
        raise DataError(f"vocab must be >= 2 symbols, got {vocab}")
    if not offsets or min(offsets) < 1 or max(offsets) >= seq_len:
        raise DataError(f"offsets must be non-empty and in [1, seq_len - 1] = [1, {seq_len - 1}], got {offsets}")

    def make(rng: np.random.Generator, n: int, split: str) -> dict[str, torch.Tensor]:
        x = torch.from_numpy(rng.integers(0, vocab, size=(n, seq_len)))  # (N, T)
        y = torch.full((n, seq_len, len(offsets)), -100, dtype=torch.long)  # (N, T, J)
        for j, k in enumerate(offsets):
            y[:, k:, j] = x[:, :-k]
        return {"x": x, "y": y, "lengths": torch.full((n,), seq_len, dtype=torch.long)}

    meta = {
        "task": "multi_lookup",
        "target": "tag",
        "num_outputs": len(offsets),
        "offsets": list(offsets),
        "vocab_size": vocab + 1,
        "pad_id": vocab,
        "num_classes": vocab,
        "input_dim": 0,
        "seq_len": seq_len,
        "lag": max(offsets),
        "chance": 1.0 / vocab,
        "label_rule": "y[:, t, j] = x[:, t - offsets[j]] for t >= offsets[j], -100 before",
    }
    return write_task(ctx, make, meta, n_train=n_train, n_valid=n_valid, n_test=n_test, seed=seed)
