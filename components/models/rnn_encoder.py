"""Recurrent source encoder shared by seq2seq, Bahdanau and Luong models."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from components.models.masks import check_lengths, length_mask, reverse_padded
from components.models.recurrent import HAS_CELL_STATE, Recurrent
from components.models.registry import ModelError, check_choice

ATTENTIONS = {"none", "bahdanau", "dot", "general", "concat"}
GRUS = {"pytorch", "bahdanau"}


@dataclass
class Seq2SeqConfig:
    """Sizes and options of the recurrent encoder-decoders."""

    attention: str = "none"  # none (Sutskever/Cho) | bahdanau | dot | general | concat (Luong)
    cell: str = "gru"  # rnn | lstm | gru
    gru: str = "pytorch"  # pytorch: tanh(W x + r*(U h)), nn.GRU | bahdanau: tanh(W x + U (r*h)) (Bahdanau 2015 A.1.1)
    src_vocab_size: int = 32
    tgt_vocab_size: int = 32
    embed_dim: int = 32
    hidden_size: int = 64
    num_layers: int = 1  # encoder and (seq2seq, Luong) decoder layers; Bahdanau's decoder has 1
    bidirectional_encoder: bool = False
    reverse_source: bool = False  # Sutskever 2014: feed the source backwards
    attention_dim: int = 0  # additive/concat scoring size; 0 = hidden_size
    maxout_dim: int = 0  # Bahdanau deep output: maxout units; 0 = hidden_size // 2
    dropout: float = 0.0
    forget_bias: float = 1.0
    update_bias: float | None = None
    pad_id: int = 0

    def __post_init__(self):
        check_choice("attention", self.attention, ATTENTIONS)
        check_choice("cell", self.cell, {"rnn", "lstm", "gru"})
        check_choice("gru", self.gru, GRUS)
        if self.gru == "bahdanau" and self.cell != "gru":
            raise ModelError(f"gru='bahdanau' is a GRU's form: set cell 'gru' or gru 'pytorch' (cell is {self.cell!r})")
        if self.gru == "bahdanau" and self.update_bias is not None:
            raise ModelError(
                "update_bias sets PyTorch's GRU update gate (z keeps the old state); Bahdanau's z takes the new "
                "candidate: set update_bias null with gru='bahdanau'"
            )
        if min(self.hidden_size, self.embed_dim, self.num_layers) < 1:
            raise ModelError("hidden_size, embed_dim and num_layers must be >= 1")

    @property
    def cell_kind(self) -> str:
        """The recurrent cell to build: ``cell``, or ``gru_bahdanau`` for Bahdanau's GRU."""
        return "gru_bahdanau" if self.cell == "gru" and self.gru == "bahdanau" else self.cell

    @property
    def gate_bias(self):
        return {"lstm": self.forget_bias, "gru": self.update_bias}.get(self.cell)

    @property
    def removes(self) -> set[str]:
        out = {"B1"} | ({"B2"} if self.cell != "rnn" else set())
        return out | ({"B3"} if self.attention != "none" else set())


class RNNEncoder(nn.Module):
    """Embed and encode the source; bridge the final state to the decoder's initial state."""

    def __init__(self, cfg: Seq2SeqConfig, decoder_layers: int):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.src_vocab_size, cfg.embed_dim, padding_idx=cfg.pad_id)
        self.rnn = Recurrent(
            cfg.cell_kind,  # Bahdanau's GRU runs our cell loop (input projections of all steps in one matmul)
            cfg.embed_dim,
            cfg.hidden_size,
            cfg.num_layers,
            cfg.bidirectional_encoder,
            cfg.dropout,
            cfg.gate_bias,
        )
        self.decoder_layers = decoder_layers
        if cfg.bidirectional_encoder:  # s_0 = tanh(W_s [h_fwd; h_bwd]) (Bahdanau 2015 A.2.2, both directions)
            self.bridge_h = nn.Linear(2 * cfg.hidden_size, cfg.hidden_size)
            if cfg.cell in HAS_CELL_STATE:
                self.bridge_c = nn.Linear(2 * cfg.hidden_size, cfg.hidden_size)
        elif decoder_layers != cfg.num_layers:
            raise ModelError(
                f"a unidirectional encoder hands over one state per layer: the decoder needs "
                f"{cfg.num_layers} layers, got {decoder_layers}"
            )

    @property
    def output_size(self) -> int:
        return self.rnn.output_size

    def forward(self, src: Tensor, src_lengths: Tensor | None) -> dict[str, Tensor]:
        """Return memory: values (B, T_src, D*H), mask, lengths (B,), and h0/c0 (B, L_dec, H)."""
        if src.dim() != 2 or src.dtype.is_floating_point:
            raise ModelError(f"src must be token ids (B, T), got {tuple(src.shape)} {src.dtype}")
        if src.numel() and src.device.type == "cpu" and int(src.max()) >= self.cfg.src_vocab_size:  # no GPU sync
            raise ModelError(f"src id {int(src.max())} out of range for src_vocab_size {self.cfg.src_vocab_size}")
        B, T = src.shape
        lengths = check_lengths(src_lengths, B, T, "encoder")
        if lengths is None:
            lengths = torch.full((B,), T, dtype=torch.long)
        if self.cfg.reverse_source:
            src = reverse_padded(src, lengths)
        values, final = self.rnn(self.embed(src), lengths)
        h, c = final if self.cfg.cell in HAS_CELL_STATE else (final, torch.zeros_like(final))
        if self.cfg.bidirectional_encoder:
            h = torch.tanh(self.bridge_h(self._join_directions(h)))
            c = self.bridge_c(self._join_directions(c)) if self.cfg.cell in HAS_CELL_STATE else torch.zeros_like(h)
        return {
            "values": values,
            "mask": length_mask(lengths, T, src.device),
            "lengths": lengths.to(src.device),
            "h0": h.transpose(0, 1),
            "c0": c.transpose(0, 1),
        }  # states batch-first

    def _join_directions(self, s: Tensor) -> Tensor:
        """(L*2, B, H) final states -> (L_dec, B, 2H): [forward; backward] of the top L_dec layers."""
        L, B = self.cfg.num_layers, s.shape[1]
        return s.view(L, 2, B, -1).transpose(1, 2).reshape(L, B, -1)[-self.decoder_layers :]

    def unreverse(self, attn: Tensor | None, lengths: Tensor) -> Tensor | None:
        """Map attention over the reversed source (B, T_q, T_src) back to source order."""
        if attn is None or not self.cfg.reverse_source:
            return attn
        return reverse_padded(attn.transpose(1, 2), lengths).transpose(1, 2)
