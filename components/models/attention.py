"""Scaled dot-product attention (the free function), masks, and multi-head attention.

Masks are boolean and broadcast to (..., T_q, T_k): True means "may attend", as in
``F.scaled_dot_product_attention``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from components.models.registry import ModelError


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    scale: bool = True,
    dropout: float = 0.0,
    training: bool = False,
) -> tuple[Tensor, Tensor]:
    """Return softmax(Q K^T / sqrt(d_k)) V and the weights (Vaswani 2017, eq. 1)."""
    scores = q @ k.transpose(-2, -1)  # (..., T_q, T_k)
    if scale:  # without it, dot products grow like sqrt(d_k) and the softmax saturates
        scores = scores / math.sqrt(q.shape[-1])
    if mask is not None:
        if mask.dtype != torch.bool:
            raise ModelError(f"attention mask must be bool (True = attend), got {mask.dtype}")
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)
    return F.dropout(weights, dropout, training) @ v, weights


def causal_mask(t: int, device=None) -> Tensor:
    """Mask out subsequent positions: (T, T), True on and below the diagonal."""
    return torch.ones(t, t, dtype=torch.bool, device=device).tril()


def padding_mask(lengths: Tensor, t: int) -> Tensor:
    """Mask out padded keys: (B, 1, 1, T), True at real positions."""
    return (torch.arange(t, device=lengths.device)[None, :] < lengths[:, None])[:, None, None, :]


def local_mask(t_q: int, t_k: int, r: int, device=None) -> Tensor:
    """Restrict attention to keys within r positions (the Transformer paper's restricted self-attention)."""
    i = torch.arange(t_q, device=device)[:, None]
    j = torch.arange(t_k, device=device)[None, :]
    return (i - j).abs() <= r


def combine(*masks: Tensor | None) -> Tensor | None:
    """AND the given masks; rows left without any key attend everywhere (they are padding)."""
    out = None
    for m in masks:
        if m is not None:
            out = m if out is None else out & m
    if out is not None:
        out = out | ~out.any(-1, keepdim=True)
    return out


class MultiHeadAttention(nn.Module):
    """Project to ``n_heads`` heads of d_k = d_model / n_heads, attend, concatenate, project.

    ``naive=True`` forces the explicit softmax(QK^T)V path (it materialises the (T_q, T_k) weights);
    otherwise weights are computed only when asked for and SDPA runs the fused kernel.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        scale: bool = True,
        naive: bool = False,
        bias: bool = True,
    ):
        super().__init__()
        if d_model % n_heads:
            raise ModelError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.dropout, self.scale, self.naive = dropout, scale, naive
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

    def _split(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (B, n_heads, T, d_k)

    def project_kv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Return keys and values of x split into heads, (B, n_heads, T, d_k) each (a decoder caches them)."""
        return self._split(self.w_k(x)), self._split(self.w_v(x))

    def forward(
        self,
        query: Tensor,
        key: Tensor | None,
        value: Tensor | None,
        mask: Tensor | None = None,
        need_weights: bool = False,
        is_causal: bool = False,
        kv: tuple[Tensor, Tensor] | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Return output (B, T_q, d_model) and weights (B, n_heads, T_q, T_k) or None.

        ``is_causal`` masks subsequent positions without a mask tensor (T_q == T_k), so SDPA can pick
        the Flash kernel; ``kv`` gives keys and values already projected (``project_kv``).
        """
        q = self._split(self.w_q(query))
        k, v = kv if kv is not None else (self._split(self.w_k(key)), self._split(self.w_v(value)))
        p = self.dropout if self.training else 0.0
        if is_causal and (mask is not None or need_weights or self.naive):
            mask, is_causal = combine(mask, causal_mask(q.shape[2], q.device)), False  # SDPA takes one or the other
        if need_weights or self.naive:
            out, weights = attention(q, k, v, mask, self.scale, p, self.training)
        else:
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=p, is_causal=is_causal, scale=None if self.scale else 1.0
            )
            weights = None
        B, _, T, _ = out.shape
        out = self.w_o(out.transpose(1, 2).reshape(B, T, self.n_heads * self.d_k))
        return out, (weights if need_weights else None)
