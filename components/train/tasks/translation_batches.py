"""Translation batches: id lists (or ``TokenArrays``) padded into src / tgt_in / tgt_out, merged
for fewer passes, and length-bucketed by global step."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from components.train import data as D
from components.train.errors import TrainError


def max_id(seqs) -> int:
    """Largest id in a split's sequences (-1 when empty)."""
    if hasattr(seqs, "max_id"):
        return seqs.max_id()
    return max((max(s) for s in seqs if len(s)), default=-1)


def collate_translation(src: list[list[int]], tgt: list[list[int]], pad_id: int) -> dict:
    """Pad a batch of id lists: src (B, S), tgt_in / tgt_out (B, T) with -100 after EOS."""
    from components.data.batching import pad

    return _shifted(*pad(src, pad_id), *pad(tgt, pad_id))


def collate_rows(src, tgt, idx, pad_id: int) -> dict:
    """Collate rows ``idx`` of id lists or ``TokenArrays`` (the arrays pad without a Python loop)."""
    if hasattr(src, "pad"):
        return _shifted(*src.pad(idx, pad_id), *tgt.pad(idx, pad_id))
    return collate_translation([src[i] for i in idx], [tgt[i] for i in idx], pad_id)


def merge_translation(batches: list[dict], pad_id: int) -> dict:
    """One padded batch holding the rows of ``batches`` (collated translation batches): what one
    forward pass over them computes equals their accumulated passes up to float rounding (padding is
    masked, and -100 targets are not scored)."""
    if len(batches) == 1:
        return batches[0]

    def cat(key: str, fill: int) -> torch.Tensor:
        width = max(b[key].size(1) for b in batches)
        return torch.cat([F.pad(b[key], (0, width - b[key].size(1)), value=fill) for b in batches])

    return {
        "src": cat("src", pad_id),
        "src_lengths": torch.cat([b["src_lengths"] for b in batches]),
        "tgt_in": cat("tgt_in", pad_id),
        "tgt_out": cat("tgt_out", -100),
    }


def _shifted(src_t, src_len, tgt_t, tgt_len) -> dict:
    tgt_in, tgt_out = tgt_t[:, :-1], tgt_t[:, 1:].clone()
    steps = torch.arange(tgt_out.size(1)).unsqueeze(0)
    tgt_out[steps >= (tgt_len - 1).unsqueeze(1)] = -100
    return {"src": src_t, "src_lengths": src_len, "tgt_in": tgt_in, "tgt_out": tgt_out}


def pair_lengths(src, tgt):
    """max(len(src_i), len(tgt_i)) per pair, the size a token budget counts."""
    if hasattr(src, "lengths"):
        return np.maximum(src.lengths, tgt.lengths)
    return [max(len(s), len(t)) for s, t in zip(src, tgt)]


class TranslationBatches:
    """Length-bucketed translation batches by global step (one shuffle per epoch).

    ``src`` and ``tgt`` are lists of id lists or ``TokenArrays``; both give the same batches.
    """

    def __init__(self, src, tgt, pad_id: int, seed: int, batch_size: int, max_tokens: int | None):
        self.src, self.tgt, self.pad_id = src, tgt, pad_id
        self.seed, self.batch_size, self.max_tokens = seed, batch_size, max_tokens
        self.lengths = pair_lengths(src, tgt)
        self.epoch, self.start, self.batches = -1, 0, []  # current epoch, its first step, its batches

    def _epoch(self, e: int) -> list[list[int]]:
        if self.max_tokens:
            from components.data.batching import bucket_batches

            batches = bucket_batches(self.lengths, self.max_tokens, self.seed * 1_000_003 + e, True)
        else:
            order = D.epoch_order(len(self.src), self.seed, e).tolist()
            n = max(1, len(order) // self.batch_size)
            batches = [order[i * self.batch_size : (i + 1) * self.batch_size] for i in range(n)]
        if not batches:
            raise TrainError("the translation training split produced no batches")
        return batches

    def __call__(self, step: int) -> dict:
        if step < self.start or self.epoch < 0:  # (re)start from epoch 0: batch counts vary by epoch
            self.epoch, self.start, self.batches = 0, 0, self._epoch(0)
        while step >= self.start + len(self.batches):
            self.start += len(self.batches)
            self.epoch += 1
            self.batches = self._epoch(self.epoch)
        return collate_rows(self.src, self.tgt, self.batches[step - self.start], self.pad_id)
