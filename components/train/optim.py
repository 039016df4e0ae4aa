"""Optimisers and learning-rate schedules used by the papers."""

from __future__ import annotations

import math

import torch
from torch import nn

from components.train.build import TrainError


def make_optimizer(
    model: nn.Module,
    name: str,
    lr: float,
    weight_decay: float,
    betas: tuple[float, float],
    momentum: float,
    fused: bool = False,
) -> torch.optim.Optimizer:
    """Return Adam, AdamW or SGD over the model's trainable parameters (``fused``: one CUDA kernel for Adam)."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise TrainError("the model has no trainable parameters")
    extra = {"fused": True} if fused else {}
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, betas=betas, weight_decay=weight_decay, **extra)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=weight_decay, **extra)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    raise TrainError(f"unknown optimizer {name!r}; use 'adam', 'adamw' or 'sgd'")


def lr_factor(schedule: str, warmup: int):
    """Return step -> multiplier of the peak ``lr``.

    ``inverse_sqrt`` is the Transformer paper's (eq. 3) shape, d_model^-0.5 * min(s^-0.5, s *
    warmup^-1.5), rescaled so the peak at ``s = warmup`` equals ``lr``: linear warm-up, then
    ``sqrt(warmup / s)`` decay. ``constant`` warms up linearly when ``warmup > 0``.
    """
    if schedule not in ("constant", "inverse_sqrt"):
        raise TrainError(f"unknown schedule {schedule!r}; use 'constant' or 'inverse_sqrt'")
    if schedule == "inverse_sqrt" and warmup < 1:
        raise TrainError("schedule 'inverse_sqrt' needs warmup >= 1 (the paper used 4000 steps)")

    def factor(step: int) -> float:
        s = step + 1  # LambdaLR calls with 0 before the first update
        if schedule == "constant":
            return min(1.0, s / warmup) if warmup > 0 else 1.0
        return min(s / warmup, math.sqrt(warmup / s))

    return factor


def make_scheduler(opt: torch.optim.Optimizer, schedule: str, warmup: int):
    """Return a LambdaLR scheduler (its state_dict holds the step count for resume)."""
    return torch.optim.lr_scheduler.LambdaLR(opt, lr_factor(schedule, warmup))


def clip_gradients(model: nn.Module, how: str, value: float, measure: bool) -> float | None:
    """Clip by global norm or by value (or not at all); return the pre-clip norm when ``measure``."""
    params = [p for p in model.parameters() if p.grad is not None]
    norm = None
    if how == "norm":
        norm = torch.nn.utils.clip_grad_norm_(params, value)
    elif measure:
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params]))
    if how == "value":
        torch.nn.utils.clip_grad_value_(params, value)
    elif how not in ("norm", "none"):
        raise TrainError(f"unknown clip {how!r}; use 'norm', 'value' or 'none'")
    return norm if measure else None  # a tensor: the caller reads it when it logs
