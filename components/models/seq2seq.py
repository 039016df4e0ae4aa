"""RNN encoder-decoder: final state only (Sutskever 2014 / Cho 2014) or Luong attention (Luong 2015).

The decoder runs the fused recurrent kernel over the whole target; Luong attention is computed
after it for all target positions at once (no input feeding), so training is vectorised.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from components.models.decoding import Generates, kept
from components.models.recurrent import HAS_CELL_STATE, Recurrent
from components.models.registry import ModelError
from components.models.rnn_attention import LuongAttention
from components.models.rnn_encoder import RNNEncoder, Seq2SeqConfig
from components.models.rnnsearch import RNNSearch


class Seq2Seq(Generates, nn.Module):
    """``attention='none'``: the decoder sees only the encoder's final state (bottleneck B3)."""

    family = "seq2seq"
    projects_kept = True  # forward(..., keep=flat indices) projects only those target positions

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        if cfg.attention == "bahdanau":
            raise ModelError("Bahdanau attention is the RNNSearch model; build it with build_seq2seq")
        self.config, self.removes = cfg, cfg.removes
        self.encoder = RNNEncoder(cfg, cfg.num_layers)
        self.embed = nn.Embedding(cfg.tgt_vocab_size, cfg.embed_dim, padding_idx=cfg.pad_id)
        self.decoder = Recurrent(
            cfg.cell_kind, cfg.embed_dim, cfg.hidden_size, cfg.num_layers, False, cfg.dropout, cfg.gate_bias
        )
        H = cfg.hidden_size
        if cfg.attention != "none":
            self.attn = LuongAttention(cfg.attention, H, self.encoder.output_size, cfg.attention_dim)
            self.combine = nn.Linear(H + self.encoder.output_size, H)  # h~_t = tanh(W_c [c_t; h_t]) (eq. 5)
        self.drop = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(H, cfg.tgt_vocab_size)

    def encode(self, src: Tensor, src_lengths: Tensor | None) -> dict[str, Tensor]:
        memory = self.encoder(src, src_lengths)
        if self.config.attention != "none":
            memory["keys"] = self.attn.prepare(memory["values"])
        return memory

    def init_state(self, memory):
        return (memory["h0"], memory["c0"])

    def _decode(self, tgt_in: Tensor, state, memory, keep: Tensor | None = None):
        """Run the decoder over tgt_in (B, T); return logits, new state (batch-first), attn.

        ``keep`` (flat indices into B*T) projects only those positions: logits (N, V).
        """
        if tgt_in.numel() and tgt_in.device.type == "cpu" and int(tgt_in.max()) >= self.config.tgt_vocab_size:
            raise ModelError(f"tgt id {int(tgt_in.max())} out of range for tgt_vocab_size {self.config.tgt_vocab_size}")
        h0, c0 = (s.transpose(0, 1).contiguous() for s in state)  # (L, B, H)
        rnn_state = (h0, c0) if self.config.cell in HAS_CELL_STATE else h0
        out, final = self.decoder(self.drop(self.embed(tgt_in)), None, rnn_state)  # (B, T, H)
        h, c = final if self.config.cell in HAS_CELL_STATE else (final, c0)
        attn = None
        if self.config.attention != "none":
            ctx, attn = self.attn(out, memory["keys"], memory["values"], memory["mask"])
            out = torch.tanh(self.combine(torch.cat([ctx, out], -1)))
            attn = self.encoder.unreverse(attn, memory["lengths"])
        return self.out(kept(self.drop(out), keep)), (h.transpose(0, 1), c.transpose(0, 1)), attn

    def forward(self, src: Tensor, src_lengths: Tensor | None, tgt_in: Tensor, keep: Tensor | None = None):
        """Teacher-forced pass: logits (B, T_tgt, V), or (N, V) at ``keep``, and attention (B, T_tgt, T_src) or None."""
        memory = self.encode(src, src_lengths)
        logits, _, attn = self._decode(tgt_in, self.init_state(memory), memory, keep)
        return logits, attn

    def step(self, prev: Tensor, state, memory):
        logits, state, attn = self._decode(prev[:, None], state, memory)
        return F.log_softmax(logits[:, 0], -1), state, (attn[:, 0] if attn is not None else None)


def build_seq2seq(cfg: Seq2SeqConfig) -> nn.Module:
    """Build RNNSearch for Bahdanau attention, else the seq2seq / Luong model."""
    return RNNSearch(cfg) if cfg.attention == "bahdanau" else Seq2Seq(cfg)


build_seq2seq.family = "seq2seq"
