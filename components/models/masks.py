"""Length masks and padded-sequence helpers shared by every family."""

from __future__ import annotations

import torch
from torch import Tensor

from components.models.registry import ModelError


def check_lengths(lengths: Tensor | None, batch: int, max_len: int, where: str) -> Tensor | None:
    """Validate ``lengths`` (B,) against a batch of ``batch`` sequences padded to ``max_len``."""
    if lengths is None:
        return None
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1 or lengths.shape[0] != batch:
        raise ModelError(f"{where}: lengths must have shape ({batch},), got {tuple(lengths.shape)}")
    if batch and (int(lengths.min()) < 1 or int(lengths.max()) > max_len):
        raise ModelError(
            f"{where}: lengths must lie in [1, {max_len}] (the padded length), "
            f"got min {int(lengths.min())} max {int(lengths.max())}"
        )
    return lengths


def length_mask(lengths: Tensor | None, max_len: int, device=None) -> Tensor | None:
    """Return a (B, T) bool mask, True at real (non-padding) positions, or None."""
    if lengths is None:
        return None
    device = device or lengths.device
    return torch.arange(max_len, device=device)[None, :] < lengths.to(device)[:, None]


def reverse_padded(x: Tensor, lengths: Tensor | None) -> Tensor:
    """Reverse each sequence of x (B, T, ...) within its own length; padding stays at the end."""
    B, T = x.shape[:2]
    if lengths is None:
        return x.flip(1)
    t = torch.arange(T, device=x.device)[None, :]  # (1, T)
    lengths = lengths.to(x.device)[:, None]  # (B, 1)
    idx = torch.where(t < lengths, lengths - 1 - t, t)  # (B, T)
    idx = idx.view(B, T, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, idx)


def masked_mean(x: Tensor, mask: Tensor | None) -> Tensor:
    """Mean of x (B, T, D) over real positions -> (B, D)."""
    if mask is None:
        return x.mean(1)
    m = mask.unsqueeze(-1).to(x.dtype)
    return (x * m).sum(1) / m.sum(1).clamp_min(1)
