"""Attention for recurrent encoder-decoders: Bahdanau (additive) and Luong (dot, general, concat).

Both take queries (B, T_q, D_q), keys prepared once per batch by ``prepare(values)``, values
(B, T_src, D_v) and a (B, T_src) bool mask; they return context (B, T_q, D_v) and weights (B, T_q, T_src).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from components.models.registry import ModelError, check_choice


def _softmax(scores: Tensor, mask: Tensor | None) -> Tensor:
    if mask is not None:
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
    return scores.softmax(-1)


class BahdanauAttention(nn.Module):
    """Additive attention e_ij = v^T tanh(W1 s_{i-1} + W2 h_j) (Bahdanau 2015, eq. 6 / A.1.2)."""

    def __init__(self, query_dim: int, key_dim: int, attn_dim: int):
        super().__init__()
        self.w1 = nn.Linear(query_dim, attn_dim, bias=False)
        self.w2 = nn.Linear(key_dim, attn_dim)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def prepare(self, values: Tensor) -> Tensor:
        """Return W2 h_j for every source position (B, T_src, A), computed once per batch, not per step."""
        return self.w2(values)

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None):
        scores = self.v(torch.tanh(self.w1(query)[:, :, None] + keys[:, None])).squeeze(-1)  # (B, T_q, T_src)
        weights = _softmax(scores, mask)
        return weights @ values, weights


class LuongAttention(nn.Module):
    """Luong 2015 scores: dot h_t^T h_s; general h_t^T W_a h_s; concat v_a^T tanh(W_a [h_t; h_s])."""

    def __init__(self, kind: str, query_dim: int, key_dim: int, attn_dim: int = 0):
        super().__init__()
        check_choice("Luong attention", kind, {"dot", "general", "concat"})
        self.kind = kind
        if kind == "dot" and query_dim != key_dim:
            raise ModelError(
                f"dot attention needs equal decoder and encoder state sizes, got {query_dim} and "
                f"{key_dim} (a bidirectional encoder doubles it); use 'general' or 'concat'"
            )
        if kind == "general":
            self.w_a = nn.Linear(key_dim, query_dim, bias=False)
        if kind == "concat":  # W_a [h_t; h_s] split as W_q h_t + W_k h_s so the h_s half is computed once
            self.w_q = nn.Linear(query_dim, attn_dim or query_dim, bias=False)
            self.w_k = nn.Linear(key_dim, attn_dim or query_dim, bias=False)
            self.v_a = nn.Linear(attn_dim or query_dim, 1, bias=False)

    def prepare(self, values: Tensor) -> Tensor:
        """Return the per-source part of the score: h_s, W_a h_s or W_k h_s (B, T_src, .)."""
        if self.kind == "general":
            return self.w_a(values)
        if self.kind == "concat":
            return self.w_k(values)
        return values

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None):
        if self.kind == "concat":
            scores = self.v_a(torch.tanh(self.w_q(query)[:, :, None] + keys[:, None])).squeeze(-1)
        else:
            scores = query @ keys.transpose(1, 2)  # (B, T_q, T_src)
        weights = _softmax(scores, mask)
        return weights @ values, weights
