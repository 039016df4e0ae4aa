"""Encoder-only classifier/tagger and decoder-only language model (family ``transformer``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from components.models.attention import causal_mask, combine, local_mask, padding_mask
from components.models.heads import HEADS, ManyToMany, ManyToOne
from components.models.inputs import SequenceInput
from components.models.masks import check_lengths, length_mask, masked_mean
from components.models.positions import POSITIONS, Positions
from components.models.registry import ModelError, check_choice
from components.models.transformer_layers import ACTIVATIONS, Encoder


@dataclass
class EncoderConfig:
    """Self-attention sequence model; ``causal=True`` with a tagging head is a decoder-only LM."""

    head: str = "many_to_one"  # many_to_one (masked mean pool) | many_to_many
    vocab_size: int = 16
    input_dim: int = 0  # > 0: real-valued inputs (B, T, input_dim) instead of tokens
    num_classes: int = 8  # 0: one class per token (a language model's next-token head)
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 128
    num_layers: int = 2
    dropout: float = 0.0
    positions: str = "sinusoidal"
    norm_first: bool = True
    scale: bool = True
    window: int = 0
    causal: bool = False
    naive: bool = False
    activation: str = "relu"
    max_len: int = 1024
    pos_init_std: float = 1.0  # learned positions on the scale of the scaled embeddings
    tie_embeddings: bool = False  # LM: output weights = input embedding (Press & Wolf 2017)
    pad_id: int = 0

    def __post_init__(self):
        check_choice("head", self.head, HEADS - {"one_to_many"})
        check_choice("positions", self.positions, POSITIONS)
        check_choice("activation", self.activation, ACTIVATIONS)
        if self.d_model % self.n_heads:
            raise ModelError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.num_classes == 0 and (self.vocab_size <= 0 or self.input_dim > 0):
            raise ModelError(
                "num_classes=0 means one class per token and needs token inputs (vocab_size > 0, input_dim 0)"
            )
        if self.tie_embeddings and (self.head != "many_to_many" or self.out_classes != self.vocab_size):
            raise ModelError(
                "tie_embeddings needs head='many_to_many' and one class per token (num_classes=0), "
                f"got head={self.head!r}, num_classes={self.num_classes}, vocab_size={self.vocab_size}"
            )

    @property
    def out_classes(self) -> int:
        return self.num_classes or self.vocab_size


class TransformerEncoderModel(nn.Module):
    """Embed, add positions, self-attend (with padding / causal / local masks), then a task head."""

    family = "transformer"

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.config, self.removes = cfg, {"B1", "B2", "B3", "B4"}
        self.input = SequenceInput(cfg.vocab_size, cfg.input_dim, cfg.d_model, cfg.pad_id, project=True)
        if self.input.tokens:  # N(0, 1/d) so that x sqrt(d) has unit scale (Vaswani 2017 sec. 3.4)
            nn.init.normal_(self.input.embed.weight, std=cfg.d_model**-0.5)
            if self.input.embed.padding_idx is not None:
                with torch.no_grad():
                    self.input.embed.weight[self.input.embed.padding_idx].zero_()
        self.positions = Positions(cfg.positions, cfg.d_model, cfg.max_len, cfg.pos_init_std)
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = Encoder(
            cfg.num_layers,
            cfg.d_model,
            cfg.n_heads,
            cfg.d_ff,
            cfg.dropout,
            cfg.norm_first,
            cfg.scale,
            cfg.naive,
            cfg.activation,
        )
        head = ManyToOne if cfg.head == "many_to_one" else ManyToMany
        self.head = head(cfg.d_model, cfg.out_classes)
        if cfg.tie_embeddings:
            self.head.out.weight = self.input.embed.weight

    def hidden_states(self, x: Tensor, lengths: Tensor | None = None, taps: Tensor | None = None) -> Tensor:
        """Return the top layer's states (B, T, d_model); ``taps`` is added to the embedded input."""
        e = self.input(x)
        B, T, _ = e.shape
        lengths = check_lengths(lengths, B, T, "TransformerEncoderModel")
        e = e * math.sqrt(self.config.d_model) if self.input.tokens else e
        if taps is not None:
            e = e + taps
        w = self.config.window
        if self.config.causal and not w:
            # right padding under a causal mask: real positions never see a padded key, so is_causal alone
            # suffices and SDPA may use Flash (padded positions' outputs are never read)
            return self.encoder(self.drop(self.positions(e)), None, is_causal=True)
        mask = combine(
            padding_mask(lengths, T) if lengths is not None else None,
            causal_mask(T, e.device) if self.config.causal else None,
            local_mask(T, T, w, e.device) if w else None,
        )
        return self.encoder(self.drop(self.positions(e)), mask)

    def forward(self, x: Tensor, lengths: Tensor | None = None, taps: Tensor | None = None) -> Tensor:
        """Return logits (B, C) for many_to_one, (B, T, C) for many_to_many."""
        h = self.hidden_states(x, lengths, taps)
        if self.config.head == "many_to_one":
            return self.head(masked_mean(h, length_mask(lengths, h.shape[1], h.device)))
        return self.head(h)
