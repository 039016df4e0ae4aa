"""probe.permutation (B4 / positions): self-attention without positions is permutation equivariant."""

from __future__ import annotations

from typing import Any, Literal

import torch

from components import Context, component
from components.bounds import Count, Size
from components.probes import common as P


def equivariance_error(model, x: torch.Tensor, perm: torch.Tensor) -> tuple[float, float]:
    """Return (max |f(x)[:, perm] - f(x[:, perm])|, that divided by mean |f(x)|) over hidden states."""
    with torch.no_grad():
        h = model.hidden_states(x)  # (B, T, H)
        hp = model.hidden_states(x[:, perm])  # (B, T, H)
    diff = float((h[:, perm] - hp).abs().max())
    return diff, diff / float(h.abs().mean().clamp_min(1e-30))


@component(
    "probe.permutation",
    outputs=["summary"],
    logged_before=["rel_error", "error"],
    summary=["error/{models}", "rel_error/{models}"],
)
def permutation(
    ctx: Context,
    *,
    models: dict[str, str],
    overrides: dict[str, dict[str, Any]] | None = None,
    length: Size = 16,
    batch: Size = 8,
    dtype: Literal["float32", "float64"] = "float64",  # float64 separates exact equality from round-off
    seed: Count = 0,
) -> dict:
    """Permute the input positions and compare with the permuted output, per model.

    Args:
        models: label -> variant name or checkpoint, e.g. ``{"no_pos": "transformer-encoder-small",
            "sinusoidal": "transformer-encoder-small"}`` with ``overrides: {no_pos: {positions: none}}``.

    Returns:
        ``summary``: ``error/<label>`` (max abs difference) and ``rel_error/<label>``.
    """
    summary: dict[str, Any] = {}
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(length, generator=g)
    for label, spec in models.items():
        net, _ = P.resolve(spec, (overrides or {}).get(label), seed)
        if not hasattr(net, "hidden_states"):
            raise P.ProbeError(f"{label}: {type(net).__name__} has no hidden_states(x); use a sequence model")
        net = net.to(getattr(torch, dtype))
        x = P.random_inputs(net, batch, length, seed)
        x = x.to(getattr(torch, dtype)) if x.dtype.is_floating_point else x
        summary[P.key("error", label)], summary[P.key("rel_error", label)] = equivariance_error(net, x, perm)
    summary = P.flat(summary)
    P.log_summary(ctx, summary)
    return {"summary": summary}
