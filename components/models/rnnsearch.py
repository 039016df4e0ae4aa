"""RNNsearch (Bahdanau 2015) and the RNNencdec it is compared with, sharing one decoder.

RNNsearch: bidirectional encoder, additive attention from s_{i-1}, maxout deep output.

p(y_i | s_{i-1}, y_{i-1}, c_i); c_i = sum_j a_ij h_j with e_ij = v^T tanh(W1 s_{i-1} + W2 h_j);
s_i = f(s_{i-1}, [E y_{i-1}; c_i]). The W2 h_j half is computed once per batch (``prepare``). In the
teacher-forced pass only what depends on s_{i-1} stays in the time loop: the cell's input projection of
E y_{i-1} is one matmul over all steps, and the deep output and softmax layer run once after the loop.

RNNencdec (Cho 2014, the baseline of Bahdanau 2015): the same decoder and deep output, fed at every step
the one context vector c = tanh(V h_T) of a unidirectional encoder instead of c_i; s_0 = tanh(W_s c).
So the two differ only in where the context comes from (``RNNEncDec``). ``RNNPaperConfig`` adds the
paper's initialisation (``components.models.init``) and RNNsearch's s_0 = tanh(W_s h<-_1) from the
backward state alone. With ``gru: bahdanau`` (the paper variants) the encoder and the decoder use the
paper's GRU (A.1.1, ``components.models.cells.gru_bahdanau_step``) instead of PyTorch's.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from components.models.cells import BahdanauGRUCell, gru_bahdanau_step
from components.models.decoding import Generates, kept
from components.models.init import check_init, paper_init
from components.models.recurrent import HAS_CELL_STATE
from components.models.registry import ModelError, check_choice
from components.models.rnn_attention import BahdanauAttention
from components.models.rnn_encoder import RNNEncoder, Seq2SeqConfig

CELL = {"rnn": nn.RNNCell, "lstm": nn.LSTMCell, "gru": nn.GRUCell, "gru_bahdanau": BahdanauGRUCell}


@dataclass
class RNNPaperConfig(Seq2SeqConfig):
    """Seq2SeqConfig plus the choices the papers made: ``attention`` bahdanau (RNNsearch) or none (RNNencdec)."""

    init: str = "paper"  # paper: Bahdanau 2015 B.1 (orthogonal recurrent, N(0, 0.01^2), v_a zero) | pytorch
    init_state: str = "backward"  # RNNsearch s_0 = tanh(W_s h<-_1) as the paper | both: tanh(W_s [h->_T; h<-_1])

    def __post_init__(self):
        super().__post_init__()
        check_init(self.init)
        check_choice("init_state", self.init_state, {"backward", "both"})
        check_choice("attention (RNNsearch: bahdanau, RNNencdec: none)", self.attention, {"bahdanau", "none"})


class BackwardBridge(nn.Module):
    """s_0 = W_s h<-_1 (tanh applied by the encoder): the [forward; backward] final states' backward half."""

    def __init__(self, hidden: int):
        super().__init__()
        self.hidden = hidden
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, joined: Tensor) -> Tensor:
        return self.proj(joined[..., self.hidden :])


def cell_from_gates(kind: str, gi: Tensor, cell: nn.Module, s: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """Advance ``cell`` given its input pre-activations gi = W_ih x + b_ih (B, G*H); as nn.*Cell computes."""
    if kind == "gru_bahdanau":  # r resets s before U: tanh(W x + U (r * s)) (Bahdanau 2015 A.1.1)
        return gru_bahdanau_step(gi, (s, c), cell.weight_hh, cell.bias_hh)
    gh = F.linear(s, cell.weight_hh, cell.bias_hh)
    if kind == "gru":  # r, z, n gates; n = tanh(W_in x + r * (W_hn h + b_hn))
        i_r, i_z, i_n = gi.chunk(3, -1)
        h_r, h_z, h_n = gh.chunk(3, -1)
        r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
        return (1 - z) * torch.tanh(i_n + r * h_n) + z * s, c
    if kind == "lstm":
        i, f, g, o = (gi + gh).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c
    return torch.tanh(gi + gh), c


class RNNSearch(Generates, nn.Module):
    """Attention-based encoder-decoder; ``forward`` returns logits and per-step alignments."""

    family = "seq2seq"
    projects_kept = True  # forward(..., keep=flat indices) projects only those target positions

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        if cfg.attention != "bahdanau":
            raise ModelError(f"RNNSearch uses attention='bahdanau', got {cfg.attention!r}")
        self.config, self.removes = cfg, cfg.removes
        H = cfg.hidden_size
        self.encoder = RNNEncoder(cfg, 1)
        K = self.encoder.output_size
        self.attn = BahdanauAttention(H, K, cfg.attention_dim or H)
        self._decoder(cfg, K)
        if getattr(cfg, "init_state", "both") == "backward" and cfg.bidirectional_encoder:
            self.encoder.bridge_h = BackwardBridge(H)
            if cfg.cell in HAS_CELL_STATE:
                self.encoder.bridge_c = BackwardBridge(H)
        self._paper_init()

    def _decoder(self, cfg: Seq2SeqConfig, K: int) -> None:
        """The decoder side both papers share, for a context of size K: target embedding, cell on
        [E y_{i-1}; c_i], maxout deep output and the softmax layer."""
        H, E = cfg.hidden_size, cfg.embed_dim
        self.embed = nn.Embedding(cfg.tgt_vocab_size, E, padding_idx=cfg.pad_id)
        self.cell = CELL[cfg.cell_kind](E + K, H)
        if cfg.cell == "lstm":
            with torch.no_grad():
                self.cell.bias_ih[H : 2 * H].fill_(cfg.forget_bias)
                self.cell.bias_hh[H : 2 * H].zero_()
        self.maxout = cfg.maxout_dim or H // 2
        self.deep = nn.Linear(H + E + K, 2 * self.maxout)  # t~_i = U_o s_{i-1} + V_o E y_{i-1} + C_o c_i
        self.drop = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(self.maxout, cfg.tgt_vocab_size)

    def _paper_init(self, scores=("attn.w1.weight", "attn.w2.weight"), zero=("attn.v.weight",)) -> None:
        """Apply the paper's initialisation when the config asks for it (then the LSTM forget bias again)."""
        self.init_rules = {}
        if getattr(self.config, "init", "pytorch") != "paper":
            return
        self.init_rules = paper_init(self, scores, zero)
        if self.config.cell == "lstm":
            with torch.no_grad():
                H = self.config.hidden_size
                self.cell.bias_ih[H : 2 * H].fill_(self.config.forget_bias)

    def encode(self, src: Tensor, src_lengths: Tensor | None) -> dict[str, Tensor]:
        memory = self.encoder(src, src_lengths)
        memory["keys"] = self.attn.prepare(memory["values"])  # (B, T_src, A) once
        return memory

    def init_state(self, memory):
        return (memory["h0"][:, -1], memory["c0"][:, -1])  # (B, H) each

    def _step(self, y_emb: Tensor, state, memory):
        """One step from embedded y_{i-1} (B, E): logits (B, V), new state, alignment (B, T_src)."""
        s, c = state
        ctx, a = self.attn(s[:, None], memory["keys"], memory["values"], memory["mask"])
        ctx, a = ctx[:, 0], a[:, 0]
        logits, new = self._decode(y_emb, s, c, ctx)
        return logits, new, a

    def _decode(self, y_emb: Tensor, s: Tensor, c: Tensor, ctx: Tensor):
        """The maxout deep output and the recurrent update for one step, given its context vector."""
        t = self.deep(self.drop(torch.cat([s, y_emb, ctx], -1))).view(-1, self.maxout, 2).max(-1).values
        x = torch.cat([y_emb, ctx], -1)
        new = self.cell(x, (s, c)) if self.config.cell == "lstm" else (self.cell(x, s), c)
        return self.out(self.drop(t)), new

    def _check_tgt(self, tgt_in: Tensor) -> None:
        if tgt_in.numel() and tgt_in.device.type == "cpu" and int(tgt_in.max()) >= self.config.tgt_vocab_size:
            raise ModelError(f"tgt id {int(tgt_in.max())} out of range for tgt_vocab_size {self.config.tgt_vocab_size}")

    def forward(self, src: Tensor, src_lengths: Tensor | None, tgt_in: Tensor, keep: Tensor | None = None):
        """Teacher-forced pass: logits (B, T_tgt, V), or (N, V) at ``keep``, and attention (B, T_tgt, T_src)."""
        self._check_tgt(tgt_in)
        memory = self.encode(src, src_lengths)
        (s, c), emb = self.init_state(memory), self.embed(tgt_in)  # (B, T, E)
        E = emb.shape[-1]
        w_y, w_c = self.cell.weight_ih[:, :E], self.cell.weight_ih[:, E:]
        gi_y = F.linear(emb, w_y, self.cell.bias_ih)  # (B, T, G*H) for all steps at once
        states, ctxs, attns = [], [], []
        for gi in gi_y.unbind(1):  # unbind: slicing [:, i] would cost O(T) per step in backward
            ctx, a = self.attn(s[:, None], memory["keys"], memory["values"], memory["mask"])
            states.append(s)
            ctxs.append(ctx[:, 0])
            attns.append(a[:, 0])
            s, c = cell_from_gates(self.config.cell_kind, gi + F.linear(ctx[:, 0], w_c), self.cell, s, c)
        prev_s, ctx = torch.stack(states, 1), torch.stack(ctxs, 1)  # s_{i-1}, c_i: (B, T, H), (B, T, K)
        t = self.deep(self.drop(torch.cat([prev_s, emb, ctx], -1)))
        t = t.view(*t.shape[:2], self.maxout, 2).max(-1).values  # maxout (B, T, maxout)
        attn = self.encoder.unreverse(torch.stack(attns, 1), memory["lengths"])
        return self.out(kept(self.drop(t), keep)), attn

    def step(self, prev: Tensor, state, memory):
        logits, state, a = self._step(self.embed(prev), state, memory)
        a = self.encoder.unreverse(a[:, None], memory["lengths"])[:, 0]
        return F.log_softmax(logits, -1), state, a


class RNNEncDec(RNNSearch):
    """RNNencdec (Cho 2014; Bahdanau 2015's baseline): RNNsearch's decoder fed one fixed context c = tanh(V h_T).

    The embedding, GRU decoder cell (input [E y_{i-1}; c]), maxout deep output t~_i = U_o s_{i-1} +
    V_o E y_{i-1} + C_o c and softmax layer are RNNSearch's; the attention is replaced by c, the same at
    every step, computed from the unidirectional encoder's final state, and s_0 = tanh(W_s c).
    """

    def __init__(self, cfg: Seq2SeqConfig):
        nn.Module.__init__(self)
        if cfg.attention != "none":
            raise ModelError(f"RNNencdec has no attention (attention='none'), got {cfg.attention!r}")
        if cfg.bidirectional_encoder:
            raise ModelError("RNNencdec reads the source one way (c = tanh(V h_T)): set bidirectional_encoder false")
        self.config, self.removes = cfg, cfg.removes
        H = cfg.hidden_size
        self.encoder = RNNEncoder(cfg, 1)
        K = H
        self.context = nn.Linear(H, K)  # c = tanh(V h_T)
        self.bridge = nn.Linear(K, H)  # s_0 = tanh(W_s c)
        self._decoder(cfg, K)
        self._paper_init(scores=(), zero=())

    def encode(self, src: Tensor, src_lengths: Tensor | None) -> dict[str, Tensor]:
        memory = self.encoder(src, src_lengths)
        memory["context"] = torch.tanh(self.context(memory["h0"][:, -1]))  # (B, K), one for all steps
        return memory

    def init_state(self, memory):
        s = torch.tanh(self.bridge(memory["context"]))
        return (s, torch.zeros_like(s))

    def _step(self, y_emb: Tensor, state, memory):
        s, c = state
        logits, new = self._decode(y_emb, s, c, memory["context"])
        return logits, new, None

    def forward(self, src: Tensor, src_lengths: Tensor | None, tgt_in: Tensor, keep: Tensor | None = None):
        """Teacher-forced pass: logits (B, T_tgt, V), or (N, V) at ``keep``, and None (no alignment)."""
        self._check_tgt(tgt_in)
        memory = self.encode(src, src_lengths)
        (s, c), emb, ctx = self.init_state(memory), self.embed(tgt_in), memory["context"]
        E = emb.shape[-1]
        w_y, w_c = self.cell.weight_ih[:, :E], self.cell.weight_ih[:, E:]
        gi_c = F.linear(ctx, w_c, self.cell.bias_ih)[:, None]  # the context's share, the same at every step
        states = []
        for gi in (F.linear(emb, w_y) + gi_c).unbind(1):
            states.append(s)
            s, c = cell_from_gates(self.config.cell_kind, gi, self.cell, s, c)
        prev_s = torch.stack(states, 1)
        t = self.deep(self.drop(torch.cat([prev_s, emb, ctx[:, None].expand(-1, emb.shape[1], -1)], -1)))
        t = t.view(*t.shape[:2], self.maxout, 2).max(-1).values
        return self.out(kept(self.drop(t), keep)), None

    def step(self, prev: Tensor, state, memory):
        logits, state, _ = self._step(self.embed(prev), state, memory)
        return F.log_softmax(logits, -1), state, None


def build_rnn_paper(cfg: Seq2SeqConfig) -> nn.Module:
    """RNNsearch for attention='bahdanau', RNNencdec for attention='none'."""
    return RNNSearch(cfg) if cfg.attention == "bahdanau" else RNNEncDec(cfg)


build_rnn_paper.family = "seq2seq"
