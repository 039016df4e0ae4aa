"""Shared by the probes: resolve a model spec, pick inputs, fit slopes, save plots."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from components.train.build import build_model
from components.train.checkpoint import load_info, load_model


class ProbeError(ValueError):
    """A probe cannot run on the model or data it was given."""


def is_checkpoint(spec: str) -> bool:
    """True when ``spec`` names a checkpoint file rather than a model variant."""
    return spec.endswith(".pt") or Path(spec).is_file()


def resolve(
    spec: str, overrides: dict[str, Any] | None = None, seed: int = 0, device: str = "cpu"
) -> tuple[nn.Module, dict[str, Any]]:
    """Return (model in eval mode, info) for a checkpoint path or a variant name (built at init)."""
    if is_checkpoint(spec):
        if overrides:
            raise ProbeError(f"overrides apply to variant names, not to the checkpoint {spec}")
        return load_model(spec, device), load_info(spec)
    torch.manual_seed(seed)
    model = build_model(spec, overrides or {})
    return model.to(device).eval(), {"model": spec, "overrides": dict(overrides or {}), "meta": None, "data": None}


def fresh_copy(info: dict[str, Any], seed: int) -> nn.Module:
    """Rebuild a checkpoint's architecture at initialisation (same config, new weights)."""
    torch.manual_seed(seed)
    return build_model(info["model"], info["overrides"]).eval()


def config_value(model: nn.Module, *names: str, default: Any = None) -> Any:
    """Return the first of ``names`` found on ``model.config`` (or the default)."""
    cfg = getattr(model, "config", None)
    for n in names:
        if cfg is not None and hasattr(cfg, n):
            return getattr(cfg, n)
    return default


def random_inputs(model: nn.Module, batch: int, length: int, seed: int) -> torch.Tensor:
    """Draw inputs a sequence model accepts: token ids below vocab_size, or N(0, 1) features."""
    g = torch.Generator().manual_seed(seed)
    vocab = config_value(model, "vocab_size", "src_vocab_size", default=0)
    if vocab:
        pad = config_value(model, "pad_id", default=None)
        x = torch.randint(0, vocab, (batch, length), generator=g)
        if pad is not None and 0 <= pad < vocab and vocab > 1:  # avoid padding ids inside sequences
            x[x == pad] = (pad + 1) % vocab
        return x
    dim = config_value(model, "input_dim", default=0)
    if not dim:
        raise ProbeError(f"{type(model).__name__}: config has neither vocab_size nor input_dim; cannot draw inputs")
    return torch.randn(batch, length, dim, generator=g)


def loglinear_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of log(y) against x over the positive, finite y."""
    keep = np.isfinite(y) & (y > 0)
    if keep.sum() < 2:
        return math.nan
    return float(np.polyfit(np.asarray(x, float)[keep], np.log(y[keep]), 1)[0])


def loglog_exponent(x, y) -> float:
    """Fitted exponent k of y ~ x^k (least squares in log-log)."""
    return loglog_fit(x, y)[0]


def loglog_fit(x, y) -> tuple[float, float]:
    """``(k, half)`` for y ~ x^k on the points with y > 0: ``components.report.rules.loglog_fit``."""
    from components.report.rules import loglog_fit as fit

    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(y) & (y > 0) & (x > 0)
    return fit(list(x[keep]), list(y[keep]))


def key(*parts: Any) -> str:
    """Join parts into a metric key MLflow accepts ([A-Za-z0-9_./-])."""
    return "/".join(re.sub(r"[^A-Za-z0-9_.\-]", "_", str(p)) for p in parts if p != "")


def save_figure(ctx, fig, name: str) -> str:
    """Write a matplotlib figure as PNG in the work dir, log it, close it; return the path."""
    import matplotlib.pyplot as plt

    path = ctx.path(name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    ctx.log_artifact(path)
    return str(path)


def pyplot():
    """Return matplotlib.pyplot on the non-interactive backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def flat(summary: dict[str, Any]) -> dict[str, Any]:
    """Keep 6 significant digits and turn NaN / Inf into None so summaries are strict JSON."""
    out = {}
    for k, v in summary.items():
        if isinstance(v, (float, np.floating)):
            v = float(v)
            out[k] = float(f"{v:.6g}") if math.isfinite(v) else None
        elif isinstance(v, np.integer):
            out[k] = int(v)
        else:
            out[k] = v
    return out


def log_summary(ctx, summary: dict[str, Any]) -> None:
    """Log every numeric summary entry as a metric."""
    ctx.log_metrics(
        {
            k: float(v)
            for k, v in summary.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None
        }
    )
