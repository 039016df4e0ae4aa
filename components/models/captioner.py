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
from components.models.image_size import hw
from components.models.registry import ModelError, check_choice
from components.models.rnn_attention import BahdanauAttention

CELL = {"gru": nn.GRUCell, "lstm": nn.LSTMCell}


@dataclass
class CaptionerConfig:
    """Image encoder widths and decoder sizes; regions = (H / 2^k) * (W / 2^k) for k = len(widths).

    Output symbols are the ``num_classes`` labels plus BOS and EOS (ids ``num_classes`` and
    ``num_classes + 1`` unless given), as the digit-strip data writes them.
    """

    image_size: int | tuple[int, int] = 28
    channels: int = 1
    widths: tuple[int, ...] = (32, 64)
    num_classes: int = 10
    tgt_vocab_size: int = 0  # 0: num_classes + 2 (labels, BOS, EOS)
    bos_id: int | None = None  # None: num_classes
    eos_id: int | None = None  # None: num_classes + 1
    embed_dim: int = 32
    hidden_size: int = 64
    attention_dim: int = 64
    cell: str = "lstm"  # lstm (as in the paper) | gru
    dropout: float = 0.0
    pad_id: int | None = None  # None: captions have no padding symbol; decoding fills with EOS

    def __post_init__(self):
        self.widths = tuple(self.widths)
        self.image_size = self.image_size if isinstance(self.image_size, int) else hw(self.image_size)
        check_choice("cell", self.cell, CELL)
        if min(hw(self.image_size)) < 2 ** len(self.widths):
            raise ModelError(f"{len(self.widths)} pooling blocks need image_size >= {2 ** len(self.widths)}")
        for name in ("bos", "eos"):
            if not 0 <= getattr(self, name) < self.out_vocab:
                raise ModelError(
                    f"{name}_id {getattr(self, name)} is outside the output vocabulary of "
                    f"{self.out_vocab}; set tgt_vocab_size or num_classes"
                )

    @property
    def out_vocab(self) -> int:
        return self.tgt_vocab_size or self.num_classes + 2

    @property
    def bos(self) -> int:
        return self.num_classes if self.bos_id is None else self.bos_id

    @property
    def eos(self) -> int:
        return self.num_classes + 1 if self.eos_id is None else self.eos_id


class Captioner(Generates, nn.Module):
    """Image-to-sequence: ``forward(images, tgt_in) -> (logits (B, T, V), attn over regions (B, T, R))``."""

    family = "captioner"

    def __init__(self, cfg: CaptionerConfig):
        super().__init__()
        self.config, self.removes = cfg, {"B1", "B2", "B3"}  # gated recurrent decoder + attention
        D, H, E = cfg.widths[-1], cfg.hidden_size, cfg.embed_dim
        self.features = conv_features(cfg.channels, cfg.widths)
        self.init_h, self.init_c = nn.Linear(D, H), nn.Linear(D, H)
        self.attn = BahdanauAttention(H, D, cfg.attention_dim)
        self.f_beta = nn.Linear(H, D)
        self.embed = nn.Embedding(cfg.out_vocab, E, padding_idx=cfg.pad_id)
        self.cell = CELL[cfg.cell](E + D, H)
        self.drop = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(H + D + E, cfg.out_vocab)

    def encode(self, images: Tensor, lengths=None) -> dict[str, Tensor]:
        """Return regions (B, R, D) = the last conv map's positions, their keys and a full mask."""
        cfg = self.config
        if images.dim() != 4 or images.shape[1] != cfg.channels:
            raise ModelError(f"Captioner expects images (B, {cfg.channels}, H, W), got {tuple(images.shape)}")
        regions = self.features(images).flatten(2).transpose(1, 2)  # (B, h*w, D)
        mask = torch.ones(regions.shape[:2], dtype=torch.bool, device=regions.device)
        return {"values": regions, "keys": self.attn.prepare(regions), "mask": mask}

    def init_state(self, memory):
        mean = memory["values"].mean(1)  # (B, D)
        return torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean))

    def _step(self, y_emb: Tensor, state, memory):
        h, c = state
        z, a = self.attn(h[:, None], memory["keys"], memory["values"], memory["mask"])
        z = torch.sigmoid(self.f_beta(h)) * z[:, 0]  # gated context (B, D)
        x = torch.cat([y_emb, z], -1)
        h, c = self.cell(x, (h, c)) if self.config.cell == "lstm" else (self.cell(x, h), c)
        return self.out(self.drop(torch.cat([h, z, y_emb], -1))), (h, c), a[:, 0]

    def forward(self, images: Tensor, *rest):
        """Teacher-forced pass ``(images, tgt_in)`` or ``(images, None, tgt_in)``: logits and attention."""
        if len(rest) not in (1, 2):
            raise ModelError("call the captioner as model(images, tgt_in) or model(images, None, tgt_in)")
        tgt_in = rest[-1]
        V = self.config.out_vocab
        if tgt_in.dim() != 2 or tgt_in.dtype.is_floating_point or (tgt_in.numel() and int(tgt_in.max()) >= V):
            raise ModelError(f"tgt_in must be ids (B, T) below {V}, got {tuple(tgt_in.shape)} {tgt_in.dtype}")
        memory = self.encode(images)
        state, emb = self.init_state(memory), self.embed(tgt_in)
        logits, attns = [], []
        for e_t in emb.unbind(1):  # unbind: slicing emb[:, t] would cost O(T) per step in backward
            out, state, a = self._step(e_t, state, memory)
            logits.append(out)
            attns.append(a)
        return torch.stack(logits, 1), torch.stack(attns, 1)

    def step(self, prev: Tensor, state, memory):
        out, state, a = self._step(self.embed(prev), state, memory)
        return F.log_softmax(out, -1), state, a
