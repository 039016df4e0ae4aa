"""Show, Attend and Tell (Xu 2015): CNN feature-map regions + recurrent decoder with soft attention.

At step t: z_t = beta_t * sum_i alpha_ti a_i with alpha from additive attention on h_{t-1} and the
gate beta_t = sigmoid(f_beta(h_{t-1})) (sec. 4.2.1); h_t = cell([E y_{t-1}; z_t], h_{t-1});
logits from [h_t; z_t; E y_{t-1}] (deep output, eq. 7). h_0, c_0 come from the mean region.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from components.models.cnn import conv_features
from components.models.decoding import Generates
from components.models.registry import ModelError, check_choice
from components.models.rnn_attention import BahdanauAttention

CELL = {"gru": nn.GRUCell, "lstm": nn.LSTMCell}


@dataclass
class CaptionerConfig:
    """Image encoder widths and decoder sizes; regions = (image_size / 2^len(widths))^2."""

    image_size: int = 28
    channels: int = 1
    widths: tuple[int, ...] = (32, 64)
    tgt_vocab_size: int = 16
    embed_dim: int = 32
    hidden_size: int = 64
    attention_dim: int = 64
    cell: str = "lstm"               # lstm (as in the paper) | gru
    dropout: float = 0.0
    pad_id: int = 0

    def __post_init__(self):
        self.widths = tuple(self.widths)
        check_choice("cell", self.cell, CELL)
        if self.image_size < 2 ** len(self.widths):
            raise ModelError(f"{len(self.widths)} pooling blocks need image_size >= {2 ** len(self.widths)}")


class Captioner(Generates, nn.Module):
    """Image-to-sequence: ``forward(images, None, tgt_in) -> (logits, attn over regions (B, T, R))``."""

    family = "captioner"

    def __init__(self, cfg: CaptionerConfig):
        super().__init__()
        self.config, self.removes = cfg, {"B1", "B2", "B3"}  # gated recurrent decoder + attention
        D, H, E = cfg.widths[-1], cfg.hidden_size, cfg.embed_dim
        self.features = conv_features(cfg.channels, cfg.widths)
        self.init_h, self.init_c = nn.Linear(D, H), nn.Linear(D, H)
        self.attn = BahdanauAttention(H, D, cfg.attention_dim)
        self.f_beta = nn.Linear(H, D)
        self.embed = nn.Embedding(cfg.tgt_vocab_size, E, padding_idx=cfg.pad_id)
        self.cell = CELL[cfg.cell](E + D, H)
        self.drop = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(H + D + E, cfg.tgt_vocab_size)

    def encode(self, images: Tensor, lengths=None) -> dict[str, Tensor]:
        """Return regions (B, R, D) = the last conv map's positions, their keys and a full mask."""
        cfg = self.config
        if images.dim() != 4 or images.shape[1] != cfg.channels:
            raise ModelError(f"Captioner expects images (B, {cfg.channels}, H, W), got {tuple(images.shape)}")
        regions = self.features(images).flatten(2).transpose(1, 2)                 # (B, h*w, D)
        mask = torch.ones(regions.shape[:2], dtype=torch.bool, device=regions.device)
        return {"values": regions, "keys": self.attn.prepare(regions), "mask": mask}

    def init_state(self, memory):
        mean = memory["values"].mean(1)                                             # (B, D)
        return torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean))

    def _step(self, y_emb: Tensor, state, memory):
        h, c = state
        z, a = self.attn(h[:, None], memory["keys"], memory["values"], memory["mask"])
        z = torch.sigmoid(self.f_beta(h)) * z[:, 0]                                 # gated context (B, D)
        x = torch.cat([y_emb, z], -1)
        h, c = self.cell(x, (h, c)) if self.config.cell == "lstm" else (self.cell(x, h), c)
        return self.out(self.drop(torch.cat([h, z, y_emb], -1))), (h, c), a[:, 0]

    def forward(self, images: Tensor, src_lengths, tgt_in: Tensor):
        """Teacher-forced pass: logits (B, T, V) and attention over regions (B, T, R)."""
        memory = self.encode(images)
        state, emb = self.init_state(memory), self.embed(tgt_in)
        logits, attns = [], []
        for t in range(tgt_in.shape[1]):
            out, state, a = self._step(emb[:, t], state, memory)
            logits.append(out)
            attns.append(a)
        return torch.stack(logits, 1), torch.stack(attns, 1)

    def step(self, prev: Tensor, state, memory):
        out, state, a = self._step(self.embed(prev), state, memory)
        return F.log_softmax(out, -1), state, a
