"""Spell a number: one id in, its digits out (the one-to-many task shape)."""

from __future__ import annotations

import numpy as np
import torch

from components.bounds import Count, Size, Symbols
from components.data.errors import DataError
from components.data.split_sizes import N_TEST, N_TRAIN, N_VALID
from components.data.tasks import write_task
from components.registry import component

MAX_IDS = 1_000_000  # one embedding row per number: keep the table a sensible size


def digits_of(n: torch.Tensor, base: int, length: int) -> torch.Tensor:
    """Base-``base`` digits of each number in ``n`` (N,), most significant first: (N, length)."""
    powers = base ** torch.arange(length - 1, -1, -1, dtype=torch.long)
    return (n.unsqueeze(1) // powers) % base


@component("data.spell", outputs=["dataset"], bottleneck="B1")
def spell(
    ctx,
    *,
    base: Symbols = 4,
    length: Size = 5,
    n_train: Count = N_TRAIN,
    n_valid: Count = N_VALID,
    n_test: Count = N_TEST,
    seed: Count = 0,
) -> dict:
    """Generate the spelling task: from one number id, emit its ``length`` digits in base ``base``.

    One input, a sequence out (Karpathy's one-to-many): a generator such as
    ``lstm-generator-small`` starts from one vector and must unfold it into ``length`` outputs, so
    the task measures how much sequence one vector carries. The numbers are a closed set of
    ``base ** length`` ids (each has its own embedding), so this is a capacity test, not
    generalisation to unseen ids: every split draws from the same numbers.

    Args:
        base: digits per position (the output classes); guessing scores ``1/base``.
        length: digits per number (the output length).
        n_train, n_valid, n_test: examples per split, drawn uniformly with replacement.
        seed: generator seed; each split has its own stream.

    Returns:
        ``dataset``: folder with ``train.pt``, ``valid.pt``, ``test.pt`` (``x`` (N,) ids,
        ``y`` (N, length) digits) and ``meta.json`` (target ``generate``, ``out_len``).
    """
    if base < 2:
        raise DataError(f"base must be >= 2, got {base}")
    if length < 1:
        raise DataError(f"length must be >= 1, got {length}")
    n_ids = base**length
    if n_ids > MAX_IDS:
        raise DataError(
            f"base ** length = {n_ids:,} numbers is more than {MAX_IDS:,} embedding rows: lower base or length"
        )

    def make(rng: np.random.Generator, n: int, split: str) -> dict[str, torch.Tensor]:
        x = torch.from_numpy(rng.integers(0, n_ids, size=n)).long()
        return {"x": x, "y": digits_of(x, base, length)}

    meta = {
        "task": "spell",
        "target": "generate",
        "vocab_size": n_ids,
        "num_classes": base,
        "input_dim": 0,
        "out_len": length,
        "base": base,
        "length": length,
        "chance": 1.0 / base,
        "label_rule": f"y[:, t] = digit t of x in base {base}, most significant first",
    }
    return write_task(ctx, make, meta, n_train=n_train, n_valid=n_valid, n_test=n_test, seed=seed)
