"""Length-bucketed batches under a token budget (fairseq ``--max-tokens``) and padding."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch


def bucket_batches(
    lengths: Sequence[int], max_tokens: int, seed: int = 0, shuffle: bool = True, max_sentences: int | None = None
) -> list[list[int]]:
    """Group example indices into batches whose padded size ``B * max_len`` fits ``max_tokens``.

    Examples are sorted by length (ties broken at random for ``seed`` when ``shuffle``) so a batch
    holds similar lengths and little padding; the batch order is then shuffled for ``seed``.
    """
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    too_long = np.flatnonzero(lengths > max_tokens)
    if too_long.size:
        i = int(too_long[0])
        raise ValueError(
            f"example {i} has {int(lengths[i])} tokens, more than max_tokens={max_tokens} "
            f"({too_long.size} such examples): raise max_tokens or filter long examples (max_len)"
        )
    rng = np.random.default_rng(seed)
    tiebreak = rng.permutation(len(lengths)) if shuffle else np.arange(len(lengths))
    order = np.lexsort((tiebreak, lengths))  # by length, then by the tie-break key
    sorted_len = lengths[order]
    cap = max_sentences or len(order)
    batches: list[list[int]] = []
    start = 0
    while start < len(order):  # one iteration per batch, not per example
        # sorted ascending, so the batch's longest is its last: it fits while (k + 1) * len[start + k] <= budget
        window = sorted_len[start : start + min(cap, max_tokens // max(int(sorted_len[start]), 1))]
        fits = np.arange(1, len(window) + 1) * window <= max_tokens
        size = max(int(np.argmin(fits)) if not fits.all() else len(window), 1)
        batches.append(order[start : start + size].tolist())
        start += size
    if shuffle:
        batches = [batches[j] for j in rng.permutation(len(batches))]
    return batches


def pad(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack id lists into a right-padded ``(B, T)`` LongTensor; also return ``lengths (B,)``."""
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    out = torch.full((len(seqs), int(lengths.max()) if len(seqs) else 0), pad_id, dtype=torch.long)
    for row, s in enumerate(seqs):
        out[row, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
    return out, lengths


def padding_mask(lengths: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """Return a ``(B, T)`` bool mask, True at real tokens and False at padding."""
    max_len = int(lengths.max()) if max_len is None else max_len
    return torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]


def padding_fraction(batches: list[list[int]], lengths: Sequence[int]) -> float:
    """Fraction of the padded ``B * max_len`` slots of all batches that are padding."""
    lengths = np.asarray(lengths)
    real = sum(int(lengths[b].sum()) for b in batches)
    slots = sum(len(b) * int(lengths[b].max()) for b in batches)
    return 1.0 - real / slots if slots else 0.0
