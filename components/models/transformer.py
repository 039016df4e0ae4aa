"""Transformer encoder-decoder (Vaswani 2017) with the ablation switches of the comparison."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from components.models.attention import causal_mask, combine, local_mask, padding_mask
from components.models.decoding import Generates, kept
from components.models.masks import check_lengths
from components.models.positions import POSITIONS, Positions
from components.models.registry import ModelError, check_choice
from components.models.transformer_layers import ACTIVATIONS, Decoder, Encoder


@dataclass
class TransformerConfig:
    """Sizes and switches of the encoder-decoder Transformer."""

    src_vocab_size: int = 32
    tgt_vocab_size: int = 32
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 128
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    dropout: float = 0.1  # on each sub-layer's output and on the embedding sums (paper sec. 5.4)
    attention_dropout: float | None = None  # on the attention weights; None: dropout (the paper: none, 0)
    ffn_dropout: float | None = None  # on the feed-forward hidden layer; None: dropout (the paper: none, 0)
    positions: str = "sinusoidal"  # sinusoidal | learned | none
    norm_first: bool = False  # False: post-LN as in the paper; True: pre-LN
    scale: bool = True  # False drops 1/sqrt(d_k) (ablation)
    window: int = 0  # > 0: self-attention restricted to |i - j| <= window
    tie_embeddings: bool = True  # target embedding = pre-softmax weights (paper sec. 3.4)
    share_embeddings: bool = False  # one embedding for source and target (joint vocabulary)
    naive: bool = False  # force explicit softmax(QK^T)V instead of SDPA
    kv_cache: bool = True  # decode with cached keys/values; False reruns the whole prefix (reference)
    activation: str = "relu"
    max_len: int = 512
    pos_init_std: float = 1.0  # learned positions on the scale of the scaled embeddings
    pad_id: int = 0

    def __post_init__(self):
        check_choice("positions", self.positions, POSITIONS)
        check_choice("activation", self.activation, ACTIVATIONS)
        if self.d_model % self.n_heads:
            raise ModelError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ModelError(
                f"share_embeddings needs one joint vocabulary, got src_vocab_size="
                f"{self.src_vocab_size} and tgt_vocab_size={self.tgt_vocab_size}"
            )
        if self.window < 0:
            raise ModelError(f"window must be >= 0 (0 = unrestricted), got {self.window}")
        for name in ("dropout", "attention_dropout", "ffn_dropout"):
            p = getattr(self, name)
            if p is not None and not 0.0 <= p < 1.0:
                raise ModelError(f"{name} must be in [0, 1) (None: the same as dropout), got {p}")

    def stack_args(self) -> tuple:
        return (
            self.d_model,
            self.n_heads,
            self.d_ff,
            self.dropout,
            self.norm_first,
            self.scale,
            self.naive,
            self.activation,
            self.attention_dropout,
            self.ffn_dropout,
        )


class Transformer(Generates, nn.Module):
    """Encoder-decoder; ``forward`` returns logits and the last layer's cross-attention (head mean)."""

    family = "transformer"
    projects_kept = True  # forward(..., keep=flat indices) projects only those target positions

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.config, self.removes = cfg, {"B1", "B2", "B3", "B4"}
        d = cfg.d_model
        self.src_embed = nn.Embedding(cfg.src_vocab_size, d, padding_idx=cfg.pad_id)
        self.tgt_embed = (
            self.src_embed if cfg.share_embeddings else nn.Embedding(cfg.tgt_vocab_size, d, padding_idx=cfg.pad_id)
        )
        for emb in dict.fromkeys([self.src_embed, self.tgt_embed]):  # ordered: same seed, same weights; N(0, 1/d)
            nn.init.normal_(emb.weight, std=d**-0.5)
            with torch.no_grad():
                emb.weight[cfg.pad_id].zero_()
        self.positions = Positions(cfg.positions, d, cfg.max_len, cfg.pos_init_std)
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = Encoder(cfg.n_encoder_layers, *cfg.stack_args())
        self.decoder = Decoder(cfg.n_decoder_layers, *cfg.stack_args())
        self.generator = nn.Linear(d, cfg.tgt_vocab_size, bias=not cfg.tie_embeddings)
        if cfg.tie_embeddings:
            self.generator.weight = self.tgt_embed.weight

    def _embed(self, embed: nn.Embedding, ids: Tensor, what: str, offset: int = 0) -> Tensor:
        if ids.dim() != 2 or ids.dtype.is_floating_point:
            raise ModelError(f"{what} must be token ids (B, T), got {tuple(ids.shape)} {ids.dtype}")
        # checked on CPU only: on a GPU int(max) would wait for the device every step (the trainer checks ids
        # on the CPU before the transfer)
        if ids.numel() and ids.device.type == "cpu" and int(ids.max()) >= embed.num_embeddings:
            raise ModelError(f"{what} id {int(ids.max())} out of range for vocabulary {embed.num_embeddings}")
        # embeddings times sqrt(d_model) (paper sec. 3.4) so they are not drowned by the positions
        return self.drop(self.positions(embed(ids) * math.sqrt(self.config.d_model), offset))

    def _self_mask(self, t: int, causal: bool, device) -> Tensor | None:
        w = self.config.window
        return combine(causal_mask(t, device) if causal else None, local_mask(t, t, w, device) if w else None)

    def encode(self, src: Tensor, src_lengths: Tensor | None) -> dict:
        """Return the memory (B, T_src, d), its key mask (B, 1, 1, T_src) and each decoder layer's keys/values."""
        B, T = src.shape
        lengths = check_lengths(src_lengths, B, T, "Transformer source")
        if lengths is None:
            lengths = torch.full((B,), T, dtype=torch.long, device=src.device)
        key_mask = padding_mask(lengths.to(src.device), T)
        mask = combine(key_mask, self._self_mask(T, False, src.device))
        memory = self.encoder(self._embed(self.src_embed, src, "src"), mask)
        return {"memory": memory, "mask": key_mask, "cross": self.decoder.cross_kv(memory)}

    def decode(self, tgt_in: Tensor, memory: dict, need_weights: bool = True, keep: Tensor | None = None):
        """Return logits (B, T_tgt, V), or (N, V) at ``keep``, and cross-attention (B, T_tgt, T_src)
        averaged over heads."""
        T = tgt_in.shape[1]
        x = self._embed(self.tgt_embed, tgt_in, "tgt_in")
        causal = not self.config.window  # is_causal, no mask tensor: SDPA may use Flash
        x, w, _ = self.decoder(
            x,
            memory["memory"],
            None if causal else self._self_mask(T, True, tgt_in.device),
            memory["mask"],
            need_weights,
            causal,
            memory.get("cross"),
        )
        return self.generator(kept(x, keep)), (w.mean(1) if w is not None else None)

    def forward(self, src: Tensor, src_lengths: Tensor | None, tgt_in: Tensor, keep: Tensor | None = None):
        """Teacher-forced pass: (logits (B, T_tgt, V) or (N, V) at ``keep``, attn (B, T_tgt, T_src))."""
        return self.decode(tgt_in, self.encode(src, src_lengths), keep=keep)

    def init_state(self, memory) -> dict:
        """Return empty self-attention caches (B, n_heads, 0, d_k) per layer, or an empty prefix (B, 0)."""
        m = memory["memory"]
        if not self.config.kv_cache:
            return {"prefix": m.new_zeros(m.shape[0], 0, dtype=torch.long)}
        h = self.config.n_heads
        empty = m.new_zeros(m.shape[0], h, 0, self.config.d_model // h)
        return {"past": [(empty, empty) for _ in self.decoder.layers], "t": 0}  # t: positions decoded so far

    def step(self, prev: Tensor, state: dict, memory):
        """Decode one position from ``prev`` (B,); return its log-probs (B, V), the state and the
        cross-attention (B, T_src)."""
        if "prefix" in state:  # reference path: rerun the decoder over the whole prefix
            prefix = torch.cat([state["prefix"], prev[:, None]], 1)
            logits, attn = self.decode(prefix, memory)
            return F.log_softmax(logits[:, -1], -1), {"prefix": prefix}, attn[:, -1]
        past, t = state["past"], state["t"]
        x = self._embed(self.tgt_embed, prev[:, None], "prev", offset=t)  # (B, 1, d)
        w = self.config.window
        if w:  # restricted self-attention: only the last ``window`` positions stay in the cache
            past = [(k[:, :, -w:], v[:, :, -w:]) for k, v in past]
        x, attn, past = self.decoder(x, memory["memory"], None, memory["mask"], True, False, memory["cross"], past)
        logits = self.generator(x[:, -1])
        return F.log_softmax(logits, -1), {"past": past, "t": t + 1}, attn.mean(1)[:, -1]
