"""RNNSearch (Bahdanau 2015): bidirectional encoder, additive attention from s_{i-1}, maxout deep output.

p(y_i | s_{i-1}, y_{i-1}, c_i); c_i = sum_j a_ij h_j with e_ij = v^T tanh(W1 s_{i-1} + W2 h_j);
s_i = f(s_{i-1}, [E y_{i-1}; c_i]). The W2 h_j half is computed once per batch (``prepare``).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from components.models.decoding import Generates
from components.models.registry import ModelError
from components.models.rnn_attention import BahdanauAttention
from components.models.rnn_encoder import RNNEncoder, Seq2SeqConfig

CELL = {"rnn": nn.RNNCell, "lstm": nn.LSTMCell, "gru": nn.GRUCell}


class RNNSearch(Generates, nn.Module):
    """Attention-based encoder-decoder; ``forward`` returns logits and per-step alignments."""

    family = "seq2seq"

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        if cfg.attention != "bahdanau":
            raise ModelError(f"RNNSearch uses attention='bahdanau', got {cfg.attention!r}")
        self.config, self.removes = cfg, cfg.removes
        H, E = cfg.hidden_size, cfg.embed_dim
        self.encoder = RNNEncoder(cfg, 1)
        K = self.encoder.output_size
        self.attn = BahdanauAttention(H, K, cfg.attention_dim or H)
        self.embed = nn.Embedding(cfg.tgt_vocab_size, E, padding_idx=cfg.pad_id)
        self.cell = CELL[cfg.cell](E + K, H)
        if cfg.cell == "lstm":
            with torch.no_grad():
                self.cell.bias_ih[H:2 * H].fill_(cfg.forget_bias)
                self.cell.bias_hh[H:2 * H].zero_()
        self.maxout = cfg.maxout_dim or H // 2
        self.deep = nn.Linear(H + E + K, 2 * self.maxout)   # t~_i = U_o s_{i-1} + V_o E y_{i-1} + C_o c_i
        self.drop = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(self.maxout, cfg.tgt_vocab_size)

    def encode(self, src: Tensor, src_lengths: Tensor | None) -> dict[str, Tensor]:
        memory = self.encoder(src, src_lengths)
        memory["keys"] = self.attn.prepare(memory["values"])                      # (B, T_src, A) once
        return memory

    def init_state(self, memory):
        return (memory["h0"][:, -1], memory["c0"][:, -1])                         # (B, H) each

    def _step(self, y_emb: Tensor, state, memory):
        """One step from embedded y_{i-1} (B, E): logits (B, V), new state, alignment (B, T_src)."""
        s, c = state
        ctx, a = self.attn(s[:, None], memory["keys"], memory["values"], memory["mask"])
        ctx, a = ctx[:, 0], a[:, 0]
        t = self.deep(self.drop(torch.cat([s, y_emb, ctx], -1))).view(-1, self.maxout, 2).max(-1).values
        x = torch.cat([y_emb, ctx], -1)
        new = self.cell(x, (s, c)) if self.config.cell == "lstm" else (self.cell(x, s), c)
        return self.out(self.drop(t)), new, a

    def forward(self, src: Tensor, src_lengths: Tensor | None, tgt_in: Tensor):
        """Teacher-forced pass: logits (B, T_tgt, V) and attention (B, T_tgt, T_src)."""
        if tgt_in.numel() and int(tgt_in.max()) >= self.config.tgt_vocab_size:
            raise ModelError(f"tgt id {int(tgt_in.max())} out of range for tgt_vocab_size {self.config.tgt_vocab_size}")
        memory = self.encode(src, src_lengths)
        state, emb = self.init_state(memory), self.embed(tgt_in)                 # (B, T, E)
        logits, attns = [], []
        for e_i in emb.unbind(1):  # unbind: slicing emb[:, i] would cost O(T) per step in backward
            out, state, a = self._step(e_i, state, memory)
            logits.append(out)
            attns.append(a)
        attn = self.encoder.unreverse(torch.stack(attns, 1), memory["lengths"])
        return torch.stack(logits, 1), attn

    def step(self, prev: Tensor, state, memory):
        logits, state, a = self._step(self.embed(prev), state, memory)
        a = self.encoder.unreverse(a[:, None], memory["lengths"])[:, 0]
        return F.log_softmax(logits, -1), state, a

