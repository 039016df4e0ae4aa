"""Positional information added to token embeddings: sinusoidal, learned, or none."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from components.models.registry import ModelError, check_choice

POSITIONS = {"sinusoidal", "learned", "none"}


def sinusoids(max_len: int, d_model: int) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...) (Vaswani 2017, sec. 3.5): (T, d)."""
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)[:, : d_model // 2]
    return pe


class Positions(nn.Module):
    """Add position vectors to x (B, T, d); learned ones start at N(0, init_std^2)."""

    def __init__(self, kind: str, d_model: int, max_len: int, init_std: float = 0.02):
        super().__init__()
        check_choice("positions", kind, POSITIONS)
        self.kind, self.max_len = kind, max_len
        if kind == "sinusoidal":
            self.register_buffer("table", sinusoids(max_len, d_model)[None], persistent=False)
        elif kind == "learned":
            self.table = nn.Parameter(torch.randn(1, max_len, d_model) * init_std)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        if self.kind == "none":
            return x
        T = x.shape[1]
        if offset + T > self.max_len:
            raise ModelError(
                f"sequence of length {offset + T} exceeds max_len={self.max_len} of the "
                f"position table; build the model with a larger max_len"
            )
        return x + self.table[:, offset : offset + T]
