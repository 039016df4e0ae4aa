"""Transformer building blocks: position-wise feed-forward, encoder layer, decoder layer.

``norm_first=False`` is the paper's post-LN ``LN(x + sublayer(x))``; ``True`` is pre-LN
``x + sublayer(LN(x))`` (Xiong 2020; ViT), which needs a final LayerNorm after the stack.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from components.models.attention import MultiHeadAttention

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}


def _inner(dropout: float, attention_dropout: float | None, ffn_dropout: float | None) -> tuple[float, float]:
    """The dropout on the attention weights and on the feed-forward hidden layer: ``dropout`` (on each
    sub-layer's output) unless set on their own; Vaswani 2017 puts dropout on sub-layer outputs and
    the embedding sums only, i.e. 0 for both."""
    attn = dropout if attention_dropout is None else attention_dropout
    return attn, dropout if ffn_dropout is None else ffn_dropout


class FeedForward(nn.Module):
    """FFN(x) = W2 act(W1 x + b1) + b2, applied at every position."""

    def __init__(self, d_model: int, d_ff: int, dropout: float, activation: str = "relu"):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_model, d_ff), ACTIVATIONS[activation](), nn.Dropout(dropout), nn.Linear(d_ff, d_model)
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


class _Layer(nn.Module):
    """The parts of a layer: self-attention, cross-attention when ``cross``, feed-forward, one
    LayerNorm per sub-layer (``norm1``, ``norm2``[, ``norm3``]) and the sub-layer output dropout."""

    cross: bool = False

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        scale: bool = True,
        naive: bool = False,
        activation: str = "relu",
        attention_dropout: float | None = None,
        ffn_dropout: float | None = None,
    ):
        super().__init__()
        attn_p, ff_p = _inner(dropout, attention_dropout, ffn_dropout)
        self.self_attn = MultiHeadAttention(d_model, n_heads, attn_p, scale, naive)
        if self.cross:
            self.cross_attn = MultiHeadAttention(d_model, n_heads, attn_p, scale, naive)
        self.ff = FeedForward(d_model, d_ff, ff_p, activation)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        if self.cross:
            self.norm3 = nn.LayerNorm(d_model)
        self.drop, self.norm_first = nn.Dropout(dropout), norm_first


class EncoderLayer(_Layer):
    """Self-attention then feed-forward, each with a residual and LayerNorm."""

    def forward(self, x: Tensor, mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.drop(self.self_attn(h, h, h, mask, is_causal=is_causal)[0])
            return x + self.drop(self.ff(self.norm2(x)))
        x = self.norm1(x + self.drop(self.self_attn(x, x, x, mask, is_causal=is_causal)[0]))
        return self.norm2(x + self.drop(self.ff(x)))


KV = tuple[Tensor, Tensor]  # keys, values (B, n_heads, T, d_k)


class DecoderLayer(_Layer):
    """Masked self-attention, cross-attention over the encoder memory, feed-forward.

    With ``past`` (the keys/values of the positions already decoded) x holds only the new positions;
    their keys/values are appended and returned, so a decoding step costs O(t), not O(t^2).
    """

    cross = True

    def _self(self, h: Tensor, mask: Tensor | None, is_causal: bool, past: KV | None) -> tuple[Tensor, KV | None]:
        if past is None:
            return self.self_attn(h, h, h, mask, is_causal=is_causal)[0], None
        k, v = self.self_attn.project_kv(h)
        kv = (torch.cat([past[0], k], 2), torch.cat([past[1], v], 2))  # (B, n_heads, t + T_new, d_k)
        return self.self_attn(h, None, None, mask, kv=kv)[0], kv

    def _cross(self, h: Tensor, memory: Tensor, mask: Tensor | None, need_weights: bool, cross_kv: KV | None):
        return self.cross_attn(h, memory, memory, mask, need_weights, kv=cross_kv)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None,
        memory_mask: Tensor | None,
        need_weights: bool = False,
        is_causal: bool = False,
        cross_kv: KV | None = None,
        past: KV | None = None,
    ) -> tuple[Tensor, Tensor | None, KV | None]:
        """Return (B, T, d), the cross-attention weights (B, n_heads, T, T_src) or None, and the new cache."""
        if self.norm_first:
            a, kv = self._self(self.norm1(x), self_mask, is_causal, past)
            x = x + self.drop(a)
            ctx, w = self._cross(self.norm2(x), memory, memory_mask, need_weights, cross_kv)
            x = x + self.drop(ctx)
            return x + self.drop(self.ff(self.norm3(x))), w, kv
        a, kv = self._self(x, self_mask, is_causal, past)
        x = self.norm1(x + self.drop(a))
        ctx, w = self._cross(x, memory, memory_mask, need_weights, cross_kv)
        x = self.norm2(x + self.drop(ctx))
        return self.norm3(x + self.drop(self.ff(x))), w, kv


class _Stack(nn.Module):
    """``n_layers`` layers of one kind (``layer_type``) plus the final LayerNorm a pre-LN stack needs."""

    layer_type: type[EncoderLayer | DecoderLayer]

    def __init__(
        self,
        n_layers: int,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        scale: bool = True,
        naive: bool = False,
        activation: str = "relu",
        attention_dropout: float | None = None,
        ffn_dropout: float | None = None,
    ):
        super().__init__()
        inner = dict(attention_dropout=attention_dropout, ffn_dropout=ffn_dropout)
        self.layers = nn.ModuleList(
            self.layer_type(d_model, n_heads, d_ff, dropout, norm_first, scale, naive, activation, **inner)
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()


class Encoder(_Stack):
    """A stack of encoder layers (plus the final LayerNorm a pre-LN stack needs)."""

    layer_type = EncoderLayer

    def forward(self, x: Tensor, mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        for layer in self.layers:
            x = layer(x, mask, is_causal)
        return self.norm(x)


class Decoder(_Stack):
    """A stack of decoder layers; returns the last layer's cross-attention weights when asked."""

    layer_type = DecoderLayer

    def cross_kv(self, memory: Tensor) -> list[KV]:
        """Project the encoder memory to every layer's cross-attention keys/values (once per batch)."""
        return [layer.cross_attn.project_kv(memory) for layer in self.layers]

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None,
        memory_mask: Tensor | None,
        need_weights: bool = False,
        is_causal: bool = False,
        cross_kv: list[KV] | None = None,
        past: list[KV] | None = None,
    ) -> tuple[Tensor, Tensor | None, list[KV] | None]:
        """Return (B, T, d), the last layer's cross-attention weights or None, and the new caches."""
        weights, cache = None, []
        for i, layer in enumerate(self.layers):
            x, weights, kv = layer(
                x,
                memory,
                self_mask,
                memory_mask,
                need_weights and i == len(self.layers) - 1,
                is_causal,
                cross_kv[i] if cross_kv else None,
                past[i] if past else None,
            )
            cache.append(kv)
        return self.norm(x), weights, (cache if past else None)
