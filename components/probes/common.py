"""Shared by the probes: resolve a model spec, pick inputs, fit slopes; keys, summaries and plots
are ``components/outputs.py``'s (the report's plots use them too), importable from here."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from components.outputs import flat, key, log_summary, pyplot, save_figure
from components.train.build import build_model
from components.train.checkpoint import load_info, load_model
from components.train.convergence import of_checkpoint

__all__ = [
    "ProbeError",
    "config_value",
    "flat",
    "fresh_copy",
    "is_checkpoint",
    "key",
    "log_summary",
    "loglinear_slope",
    "loglog_exponent",
    "loglog_fit",
    "pyplot",
    "random_inputs",
    "resolve",
    "save_figure",
    "trainings",
]


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


def trainings(checkpoints: str | dict[str, str]) -> dict[str, Any]:
    """The convergence of the trainings behind the checkpoints a probe read, for the scorecard (which
    names a claim's still-improving trainings): ``converged`` and ``late_gain`` for one checkpoint,
    ``converged/<label>`` and ``late_gain/<label>`` for a mapping. Not logged as metrics; a variant
    name (a model at initialisation) or a model file older than the record adds nothing."""
    one = isinstance(checkpoints, str)
    out: dict[str, Any] = {}
    for label, path in ({"": checkpoints} if one else checkpoints).items():
        if not isinstance(path, str) or not is_checkpoint(path):
            continue
        record = of_checkpoint(load_info(path))
        if record.get("converged") is None:
            continue
        out[key("converged", label) if label else "converged"] = bool(record["converged"])
        out[key("late_gain", label) if label else "late_gain"] = record.get("late_gain")
    return out


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
