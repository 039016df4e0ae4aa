"""Run ``train.model``'s phases in this process, as the only one or as one rank of several.

A module of its own so that the component (``trainer``) and each rank's entry point (``launch``)
both import it and neither imports the other.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import torch

from components import Context
from components.train import precision as P
from components.train.config import TrainConfig
from components.train.finish import finish
from components.train.loop import train_loop
from components.train.prepare import prepare, resume


def train(ctx: Context, cfg: TrainConfig, rank: int = 0, world: int = 1) -> dict:
    """Run the phases in this process, as the only one or as rank ``rank`` of ``world``."""
    with _determinism(cfg.deterministic, ctx.device), P.tf32(ctx.device.startswith("cuda")):
        run = prepare(ctx, cfg, rank, world)  # the data, the model on the seed, its optimiser; params logged
        resume(ctx, run)  # from the last checkpoint these parameters wrote, if any
        done = train_loop(ctx, run)
        return finish(ctx, run, done)


@contextmanager
def _determinism(on: bool, device: str):
    """Use deterministic kernels inside the block when ``on``; restore the global flags after."""
    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
    )
    if on:
        if device.startswith("cuda"):
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS needs it to be deterministic
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = before[1], before[2]
