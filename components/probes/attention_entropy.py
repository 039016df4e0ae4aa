"""probe.attention_entropy: the softmax saturates without 1/sqrt(d_k) as d_k grows (at init)."""

from __future__ import annotations

import math
from typing import Any, Literal

import torch

from components import Context, component
from components.bounds import Count, Size, Sizes
from components.models.attention import MultiHeadAttention, attention
from components.probes import common as P


def normalised_entropy(weights: torch.Tensor) -> float:
    """Mean entropy of attention rows divided by log(T_k): 1 uniform, 0 one-hot."""
    h = -(weights * weights.clamp_min(1e-30).log()).sum(-1)
    return float(h.mean() / math.log(weights.shape[-1]))


@component(
    "probe.attention_entropy",
    outputs=["summary", "plot"],
    logged_before=["entropy", "unscaled_drop", "scaled_min"],
    summary=["entropy/scaled/dk_{d_k}", "entropy/unscaled/dk_{d_k}", "unscaled_drop", "scaled_min"],
)
def attention_entropy(
    ctx: Context,
    *,
    d_k: Sizes = [16, 32, 64, 128, 256],  # noqa: B006
    length: Size = 32,
    samples: Size = 64,
    init: Literal["layer", "unit"] = "layer",
    seed: Count = 0,
) -> dict:
    """Measure attention entropy at init with and without the 1/sqrt(d_k) scale.

    ``layer``: one head of the model zoo's ``MultiHeadAttention`` (d_model = d_k) at its
    initialisation, on unit-variance inputs (what a LayerNorm hands it). ``unit``: queries and
    keys with independent unit-variance components (Vaswani 2017, footnote 4), so q.k has
    variance d_k. The zoo's own attention code computes the weights either way.

    Returns:
        ``summary``: ``entropy/scaled/dk_<d>``, ``entropy/unscaled/dk_<d>`` and the ratio of the
        unscaled entropy at the largest to the smallest d_k; ``plot``.
    """
    g = torch.Generator().manual_seed(seed)
    summary: dict[str, Any] = {}
    curves: dict[str, list[float]] = {"scaled": [], "unscaled": []}
    for d in d_k:
        x = torch.randn(samples, length, d, generator=g)
        q = torch.randn(samples, length, d, generator=g)
        k = torch.randn(samples, length, d, generator=g)
        torch.manual_seed(seed + d)
        layer = MultiHeadAttention(d, 1, naive=True)
        for name, scale in (("scaled", True), ("unscaled", False)):
            if init == "layer":
                layer.scale = scale
                with torch.no_grad():
                    _, w = layer(x, x, x, need_weights=True)  # (samples, 1, T, T)
            else:
                _, w = attention(q, k, torch.zeros(samples, length, 1), scale=scale)  # (samples, T, T)
            e = normalised_entropy(w)
            curves[name].append(e)
            summary[f"entropy/{name}/dk_{d}"] = e
            ctx.log_metric(f"entropy/{name}", e, d)
    summary["unscaled_drop"] = curves["unscaled"][-1] / curves["unscaled"][0]
    summary["scaled_min"] = min(curves["scaled"])
    summary = P.flat(summary)
    P.log_summary(ctx, summary)
    plt = P.pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name, c in curves.items():
        ax.semilogx(d_k, c, "o-", base=2, label=name)
    ax.set(xlabel="d_k", ylabel="attention entropy / log T", ylim=(0, 1.05), title="softmax saturation at init")
    ax.legend()
    return {"summary": summary, "plot": P.save_figure(ctx, fig, "attention_entropy.png")}
