"""The ``train.model`` component: train any registered model on any data folder, resumably.

The phases live in their own modules: ``config`` (the parameters), ``prepare`` (task, model,
optimiser, resume), ``loop`` (steps, logging, evaluation, checkpoints), ``finish`` (averaging,
evaluation, summary, the model file); ``launch`` runs them in several processes at once
(``distributed``: each rank's share and the collectives).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import torch

from components import Context, component
from components.train import distributed as D
from components.train import precision as P
from components.train.config import TrainConfig
from components.train.finish import finish
from components.train.launch import launch
from components.train.loop import train_loop
from components.train.prepare import prepare, resume


@component("train.model", outputs=["checkpoint", "summary"], config=TrainConfig)
def train_model(ctx: Context, cfg: TrainConfig) -> dict:
    """Train a model variant on a data folder; resume from the work dir's last checkpoint.

    Args:
        cfg: the ``with:`` parameters; ``TrainConfig`` defines and documents each (below).

    Returns:
        ``checkpoint`` (model file for ``load_model``) and ``summary`` (final valid/test loss and
        accuracy, diverged, diverged_step, steps, seconds, eval_seconds (the learning curve's
        share of them), params, tokens_per_s: source tokens, or examples, per second of
        training, over every process).
    """
    cfg.check()
    world = D.world_size(cfg.processes, tuple(getattr(ctx, "gpus", ())), ctx.device)
    if world > 1:  # one rank a process (a GPU each on CUDA), each running ``train`` below
        return launch(ctx, cfg, world)
    return train(ctx, cfg)


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
