"""Optimisers and learning-rate schedules used by the papers."""

from __future__ import annotations

import math

import torch
from torch import nn

from components.train.build import TrainError

# eps where a run does not set it: PyTorch's Adam default, and Zeiler 2012 / Bahdanau 2015 for Adadelta
DEFAULT_EPS = {"adam": 1e-8, "adamw": 1e-8, "adadelta": 1e-6}
OPTIMIZERS = ("adam", "adamw", "sgd", "adadelta")


def make_optimizer(
    model: nn.Module,
    name: str,
    lr: float,
    weight_decay: float,
    betas: tuple[float, float],
    momentum: float,
    fused: bool = False,
    eps: float | None = None,
    rho: float = 0.95,
) -> torch.optim.Optimizer:
    """Return Adam, AdamW, SGD or Adadelta over the model's trainable parameters.

    ``eps`` None takes ``DEFAULT_EPS`` (Vaswani 2017 used Adam eps 1e-9). Adadelta (Zeiler 2012) is
    Bahdanau 2015's optimiser with rho 0.95 and eps 1e-6; its ``lr`` scales the update and is 1.0 there.
    ``fused``: one CUDA kernel for Adam.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise TrainError("the model has no trainable parameters")
    if name not in OPTIMIZERS:
        raise TrainError(f"unknown optimizer {name!r}; use one of {', '.join(repr(o) for o in OPTIMIZERS)}")
    if eps is not None and not eps > 0:
        raise TrainError(f"eps must be > 0 (it keeps the update finite), got {eps}")
    if not 0.0 <= rho < 1.0:
        raise TrainError(f"rho must be in [0, 1) (Adadelta's decay of its running averages), got {rho}")
    eps = DEFAULT_EPS.get(name) if eps is None else eps
    extra = {"fused": True} if fused else {}
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, **extra)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, **extra)
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
    return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)


def lr_factor(schedule: str, warmup: int, steps: int = 0):
    """Return step -> multiplier of the peak ``lr``.

    ``inverse_sqrt`` is the Transformer paper's (eq. 3) shape, d_model^-0.5 * min(s^-0.5, s *
    warmup^-1.5), rescaled so the peak at ``s = warmup`` equals ``lr``: linear warm-up, then
    ``sqrt(warmup / s)`` decay. ``cosine`` warms up linearly, then decays as half a cosine to 0 at
    ``steps`` (Loshchilov & Hutter 2017 without restarts): the run ends at a small learning rate, so
    its last steps settle instead of stopping mid-descent. ``constant`` warms up linearly when
    ``warmup > 0``.
    """
    if schedule not in SCHEDULES:
        raise TrainError(f"unknown schedule {schedule!r}; use one of {', '.join(repr(s) for s in SCHEDULES)}")
    if schedule == "inverse_sqrt" and warmup < 1:
        raise TrainError("schedule 'inverse_sqrt' needs warmup >= 1 (the paper used 4000 steps)")
    if schedule == "cosine" and steps <= warmup:
        raise TrainError(f"schedule 'cosine' decays after the warm-up: steps ({steps}) must exceed warmup ({warmup})")

    def factor(step: int) -> float:
        s = step + 1  # LambdaLR calls with 0 before the first update
        if schedule == "constant":
            return min(1.0, s / warmup) if warmup > 0 else 1.0
        if schedule == "cosine":
            if s <= warmup:
                return s / warmup
            done = min(1.0, (s - warmup) / (steps - warmup))
            return 0.5 * (1.0 + math.cos(math.pi * done))
        return min(s / warmup, math.sqrt(warmup / s))

    return factor


SCHEDULES = ("constant", "inverse_sqrt", "cosine")


def make_scheduler(opt: torch.optim.Optimizer, schedule: str, warmup: int, steps: int = 0):
    """Return a LambdaLR scheduler (its state_dict holds the step count for resume)."""
    return torch.optim.lr_scheduler.LambdaLR(opt, lr_factor(schedule, warmup, steps))


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
