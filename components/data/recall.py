"""Delayed recall: remember the first token for ``lag`` steps (the long-lag probe for B2)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch

from components.bounds import Count, Size, Symbols
from components.data.errors import DataError
from components.data.split_sizes import N_TEST, N_TRAIN, N_VALID
from components.data.tasks import write_task
from components.registry import component


@component("data.delayed_recall", outputs=["dataset"], bottleneck="B2")
def delayed_recall(
    ctx,
    *,
    lag: Size = 20,
    vocab: Symbols = 8,
    target: Literal["classify", "tag"] = "classify",
    n_train: Count = N_TRAIN,
    n_valid: Count = N_VALID,
    n_test: Count = N_TEST,
    seed: Count = 0,
) -> dict:
    """Generate the delayed-recall task: recall a token seen ``lag`` steps earlier.

    Args:
        lag: distance between the token and the step that must recall it.
        vocab: number of symbols (ids ``0..vocab-1``); guessing scores ``1/vocab``.
        target: ``classify`` reads out once at the end (``y = x[:, 0]``, sequences of ``lag + 1``
            tokens); ``tag`` copies at every step (``y[:, t] = x[:, t - lag]``, ``-100`` before ``lag``;
            sequences of ``2 * lag`` tokens).
        n_train, n_valid, n_test: examples per split.
        seed: generator seed; each split has its own stream.

    Returns:
        ``dataset``: folder with ``train.pt``, ``valid.pt``, ``test.pt`` and ``meta.json``.
    """
    if lag < 1:
        raise DataError(f"lag must be >= 1, got {lag}")
    if vocab < 2:
        raise DataError(f"vocab must be >= 2 symbols, got {vocab}")
    seq_len = lag + 1 if target == "classify" else 2 * lag

    def make(rng: np.random.Generator, n: int, split: str) -> dict[str, torch.Tensor]:
        x = torch.from_numpy(rng.integers(0, vocab, size=(n, seq_len)))  # (N, T); distractors share the vocab
        if target == "classify":
            y = x[:, 0].clone()  # (N,)
        else:
            y = torch.full_like(x, -100)  # (N, T)
            y[:, lag:] = x[:, :-lag]
        return {"x": x, "y": y, "lengths": torch.full((n,), seq_len, dtype=torch.long)}

    rule = (
        "y = x[:, 0] (read out at the last step)"
        if target == "classify"
        else "y[:, t] = x[:, t - lag] for t >= lag, -100 before"
    )
    meta = {
        "task": "delayed_recall",
        "target": "classify" if target == "classify" else "tag",
        "vocab_size": vocab + 1,
        "pad_id": vocab,
        "num_classes": vocab,
        "input_dim": 0,
        "seq_len": seq_len,
        "lag": lag,
        "chance": 1.0 / vocab,
        "label_rule": rule,
    }
    return write_task(ctx, make, meta, n_train=n_train, n_valid=n_valid, n_test=n_test, seed=seed)
