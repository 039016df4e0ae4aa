"""1D convolutional sequence model: the convolution column of the RNN / conv / attention comparison.

Residual blocks x + ReLU(conv_d(x)) with dilation 2^l (as in WaveNet / TCN), so the receptive field
grows exponentially with depth while every position is computed in parallel.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch.nn.functional as F
from torch import Tensor, nn

from components.models.heads import HEADS, ManyToMany, ManyToOne
from components.models.inputs import SequenceInput
from components.models.masks import check_lengths, length_mask, masked_mean
from components.models.registry import ModelError, check_choice


@dataclass
class Conv1DConfig:
    """Sizes of the dilated residual 1D CNN."""

    head: str = "many_to_one"  # many_to_one (masked mean pool) | many_to_many
    vocab_size: int = 16
    input_dim: int = 0  # > 0: real-valued inputs (B, T, input_dim) instead of tokens
    embed_dim: int = 32
    channels: int = 64
    kernel_size: int = 3
    num_layers: int = 4
    dilation_growth: int = 2  # dilation of layer l = growth^l (1 = plain stack)
    causal: bool = False  # pad on the left only: position t sees only inputs <= t
    dropout: float = 0.0
    num_classes: int = 8
    pad_id: int = 0

    def __post_init__(self):
        check_choice("head", self.head, HEADS - {"one_to_many"})
        if self.kernel_size < 1 or (not self.causal and self.kernel_size % 2 == 0):
            raise ModelError(f"kernel_size must be odd for a centred (non-causal) convolution, got {self.kernel_size}")
        if self.num_layers < 1 or self.dilation_growth < 1:
            raise ModelError("num_layers and dilation_growth must be >= 1")

    @property
    def receptive_field(self) -> int:
        return 1 + sum((self.kernel_size - 1) * self.dilation_growth**i for i in range(self.num_layers))


class Conv1DModel(nn.Module):
    """Sequence model ``forward(x, lengths) -> logits``; padding never leaks into real positions."""

    family = "conv1d"

    def __init__(self, cfg: Conv1DConfig):
        super().__init__()
        self.config, self.removes = cfg, {"B1", "B4"}
        self.input = SequenceInput(cfg.vocab_size, cfg.input_dim, cfg.embed_dim, cfg.pad_id)
        self.proj = nn.Linear(self.input.dim, cfg.channels)
        self.convs = nn.ModuleList(
            nn.Conv1d(cfg.channels, cfg.channels, cfg.kernel_size, dilation=cfg.dilation_growth**i)
            for i in range(cfg.num_layers)
        )
        self.drop = nn.Dropout(cfg.dropout)
        head = ManyToOne if cfg.head == "many_to_one" else ManyToMany
        self.head = head(cfg.channels, cfg.num_classes)

    def hidden_states(self, x: Tensor, lengths: Tensor | None = None, taps: Tensor | None = None) -> Tensor:
        """Return the top block's per-position states (B, T, channels)."""
        e = self.input(x)
        B, T, _ = e.shape
        mask = length_mask(check_lengths(lengths, B, T, "Conv1DModel"), T, e.device)
        if taps is not None:
            e = e + taps
        h = self.proj(e).transpose(1, 2)  # (B, C, T)
        keep = mask[:, None, :].to(h.dtype) if mask is not None else None
        for conv in self.convs:
            if keep is not None:  # zero padding positions so they act like the conv's own zero padding
                h = h * keep
            total = conv.dilation[0] * (conv.kernel_size[0] - 1)
            left = total if self.config.causal else total // 2
            h = h + self.drop(F.relu(conv(F.pad(h, (left, total - left)))))
        if keep is not None:
            h = h * keep
        return h.transpose(1, 2)

    def forward(self, x: Tensor, lengths: Tensor | None = None, taps: Tensor | None = None) -> Tensor:
        """Return logits (B, C) for many_to_one, (B, T, C) for many_to_many."""
        h = self.hidden_states(x, lengths, taps)
        if self.config.head == "many_to_one":
            return self.head(masked_mean(h, length_mask(lengths, h.shape[1], h.device)))
        return self.head(h)
