"""Transformer building blocks: position-wise feed-forward, encoder layer, decoder layer.

``norm_first=False`` is the paper's post-LN ``LN(x + sublayer(x))``; ``True`` is pre-LN
``x + sublayer(LN(x))`` (Xiong 2020; ViT), which needs a final LayerNorm after the stack.
"""
from __future__ import annotations

from torch import Tensor, nn

from components.models.attention import MultiHeadAttention

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}


class FeedForward(nn.Module):
    """FFN(x) = W2 act(W1 x + b1) + b2, applied at every position."""

    def __init__(self, d_model: int, d_ff: int, dropout: float, activation: str = "relu"):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_ff), ACTIVATIONS[activation](), nn.Dropout(dropout),
                                 nn.Linear(d_ff, d_model))

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each with a residual and LayerNorm."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False,
                 scale: bool = True, naive: bool = False, activation: str = "relu"):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, scale, naive)
        self.ff = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.drop, self.norm_first = nn.Dropout(dropout), norm_first

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.drop(self.self_attn(h, h, h, mask)[0])
            return x + self.drop(self.ff(self.norm2(x)))
        x = self.norm1(x + self.drop(self.self_attn(x, x, x, mask)[0]))
        return self.norm2(x + self.drop(self.ff(x)))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, feed-forward."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False,
                 scale: bool = True, naive: bool = False, activation: str = "relu"):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, scale, naive)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout, scale, naive)
        self.ff = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        self.drop, self.norm_first = nn.Dropout(dropout), norm_first

    def forward(self, x: Tensor, memory: Tensor, self_mask: Tensor | None, memory_mask: Tensor | None,
                need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        """Return (B, T, d) and the cross-attention weights (B, n_heads, T, T_src) or None."""
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.drop(self.self_attn(h, h, h, self_mask)[0])
            ctx, w = self.cross_attn(self.norm2(x), memory, memory, memory_mask, need_weights)
            x = x + self.drop(ctx)
            return x + self.drop(self.ff(self.norm3(x))), w
        x = self.norm1(x + self.drop(self.self_attn(x, x, x, self_mask)[0]))
        ctx, w = self.cross_attn(x, memory, memory, memory_mask, need_weights)
        x = self.norm2(x + self.drop(ctx))
        return self.norm3(x + self.drop(self.ff(x))), w


class Encoder(nn.Module):
    """A stack of encoder layers (plus the final LayerNorm a pre-LN stack needs)."""

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False, scale: bool = True, naive: bool = False, activation: str = "relu"):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first, scale, naive, activation)
                                    for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class Decoder(nn.Module):
    """A stack of decoder layers; returns the last layer's cross-attention weights when asked."""

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False, scale: bool = True, naive: bool = False, activation: str = "relu"):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, n_heads, d_ff, dropout, norm_first, scale, naive, activation)
                                    for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: Tensor, memory: Tensor, self_mask: Tensor | None, memory_mask: Tensor | None,
                need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        weights = None
        for i, layer in enumerate(self.layers):
            x, weights = layer(x, memory, self_mask, memory_mask, need_weights and i == len(self.layers) - 1)
        return self.norm(x), weights
