"""Decode a translation split with an encoder-decoder, and bucket examples by source length."""

from __future__ import annotations

from typing import Any

import torch

from components.data.batching import pad
from components.probes.common import ProbeError


@torch.no_grad()
def translate(
    model,
    src_ids: list[list[int]],
    meta: dict[str, Any],
    *,
    beam: int = 1,
    length_penalty: float = 0.6,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    batch_size: int = 64,
    device: str = "cpu",
    on_batch=None,
) -> list[list[int]]:
    """Return output ids per source (in input order), batched by similar source length;
    each output at most ``max_len_a * its own source length + max_len_b`` tokens (not the batch's
    longest source: a sentence's output does not depend on its batch-mates);
    ``on_batch(n)`` is called after each batch of n sentences (progress)."""
    if not hasattr(model, "greedy"):
        raise ProbeError(f"{type(model).__name__} cannot decode: it has no greedy(); use an encoder-decoder")
    bos, eos, pad_id = int(meta["bos_id"]), int(meta["eos_id"]), int(meta["pad_id"])
    order = sorted(range(len(src_ids)), key=lambda i: len(src_ids[i]))
    out: list[list[int]] = [[] for _ in src_ids]
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        src, lengths = pad([src_ids[i] for i in idx], pad_id)
        max_len = output_limits(lengths, max_len_a, max_len_b)
        src, lengths = src.to(device), lengths.to(device)
        if beam > 1:
            tokens = model.beam_search(src, lengths, beam, max_len, bos, eos, length_penalty)
        else:
            tokens = model.greedy(src, lengths, max_len, bos, eos)[0]
        for row, i in enumerate(idx):
            out[i] = strip(tokens[row].tolist(), bos, eos, pad_id)
        if on_batch is not None:
            on_batch(len(idx))
    return out


def output_limits(src_lengths: torch.Tensor, a: float, b: int) -> torch.Tensor:
    """Each sentence's output limit, int(a * its source length + b), at least 1 (an empty source)."""
    return torch.tensor([max(1, int(a * n + b)) for n in src_lengths.tolist()], dtype=torch.long)


def strip(ids: list[int], bos: int, eos: int, pad_id: int) -> list[int]:
    """Cut at EOS and drop BOS / padding."""
    if eos in ids:
        ids = ids[: ids.index(eos)]
    return [i for i in ids if i not in (bos, pad_id)]


def bucket_names(edges: list[int]) -> list[str]:
    """Names of the buckets [e_i, e_{i+1} - 1] and a last open one "e_k-inf"."""
    if not edges or sorted(set(edges)) != list(edges) or edges[0] < 0:
        raise ProbeError(f"buckets must be increasing non-negative lengths like [1, 10, 20, 30], got {edges}")
    names = [f"{lo}-{hi - 1}" for lo, hi in zip(edges, edges[1:])]
    return names + [f"{edges[-1]}-inf"]


def bucket_of(n: int, edges: list[int]) -> str | None:
    """Return the bucket name of length ``n`` (None below the first edge)."""
    if n < edges[0]:
        return None
    names = bucket_names(edges)
    for i, hi in enumerate(edges[1:]):
        if n < hi:
            return names[i]
    return names[-1]
