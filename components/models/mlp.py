"""One-to-one MLP baseline: a fixed-size input window, the model that lives with bottleneck B1."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from components.models.heads import HEADS
from components.models.inputs import SequenceInput
from components.models.masks import check_lengths, length_mask
from components.models.registry import ModelError, check_choice


@dataclass
class MLPConfig:
    """Sizes of the MLP baseline; ``seq_len`` is the fixed window it can see."""

    head: str = "many_to_one"  # many_to_one | many_to_many
    vocab_size: int = 16
    input_dim: int = 0  # > 0: real-valued inputs (B, T, input_dim) instead of tokens
    embed_dim: int = 16
    seq_len: int = 32
    hidden_size: int = 128
    num_layers: int = 2
    dropout: float = 0.0
    num_classes: int = 8
    pad_id: int = 0

    def __post_init__(self):
        check_choice("head", self.head, HEADS - {"one_to_many"})
        if self.seq_len < 1 or self.num_layers < 1:
            raise ModelError(f"seq_len and num_layers must be >= 1, got {self.seq_len}, {self.num_layers}")


class MLP(nn.Module):
    """Flatten the (zero-padded) window of ``seq_len`` embedded steps and apply an MLP."""

    family = "mlp"
    removes: set = set()

    def __init__(self, cfg: MLPConfig):
        super().__init__()
        self.config, self.removes = cfg, set()
        self.input = SequenceInput(cfg.vocab_size, cfg.input_dim, cfg.embed_dim, cfg.pad_id)
        layers, dim = [], cfg.seq_len * self.input.dim
        for _ in range(cfg.num_layers):
            layers += [nn.Linear(dim, cfg.hidden_size), nn.ReLU(), nn.Dropout(cfg.dropout)]
            dim = cfg.hidden_size
        self.body = nn.Sequential(*layers)
        per = cfg.num_classes * (cfg.seq_len if cfg.head == "many_to_many" else 1)
        self.out = nn.Linear(dim, per)

    def hidden_states(self, x: Tensor, lengths: Tensor | None = None, taps: Tensor | None = None) -> Tensor:
        """Return the per-position inputs (B, T, E): the MLP keeps no per-step state."""
        e = self.input(x)
        B, T, _ = e.shape
        if T > self.config.seq_len:
            raise ModelError(
                f"the MLP baseline sees a fixed window of seq_len={self.config.seq_len} steps, "
                f"got T={T}; build it with seq_len>={T}"
            )
        mask = length_mask(check_lengths(lengths, B, T, "MLP"), T, e.device)
        if mask is not None:
            e = e * mask.unsqueeze(-1)
        return e + taps if taps is not None else e

    def forward(self, x: Tensor, lengths: Tensor | None = None, taps: Tensor | None = None) -> Tensor:
        """Return logits (B, C) or (B, T, C)."""
        e = self.hidden_states(x, lengths, taps)
        B, T, E = e.shape
        e = torch.nn.functional.pad(e, (0, 0, 0, self.config.seq_len - T))  # (B, seq_len, E)
        out = self.out(self.body(e.reshape(B, -1)))
        if self.config.head == "many_to_one":
            return out
        return out.view(B, self.config.seq_len, -1)[:, :T]
