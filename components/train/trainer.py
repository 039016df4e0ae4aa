"""The ``train.model`` component: train any registered model on any data folder, resumably.

The phases live in their own modules: ``config`` (the parameters), ``prepare`` (task, model,
optimiser, resume), ``loop`` (steps, logging, evaluation, checkpoints), ``finish`` (averaging,
evaluation, summary, the model file); ``phases`` runs them in this process, and ``launch`` in
several processes at once (``distributed``: each rank's share and the collectives).
"""

from __future__ import annotations

from components import Context, component
from components.train import distributed as D
from components.train.config import TrainConfig
from components.train.launch import launch
from components.train.phases import train


@component(
    "train.model",
    outputs=["checkpoint", "summary"],
    config=TrainConfig,
    resources={"gpu": 1},
    # its end-of-run facts, logged flat before the namespaces (now vitals/...), and its split metrics
    logged_before=[
        "steps",
        "seconds",
        "cpu_seconds",
        "passes_per_step",
        "params",
        "resumed_from_step",
        "tokens_per_s",
        "eval_seconds",
        "diverged",
        "diverged_step",
    ],
    renamed_before={"valid_": "valid/", "test_": "test/"},
    group_by={"architecture": "model", "task": "data"},  # tags of each run: MLflow's "Group by"
    summary=[
        # the run's facts (components/train/finish.py)
        "diverged",
        "diverged_step",
        "steps",
        "seconds",
        "cpu_seconds",
        "passes_per_step",
        "params",
        "resumed_from_step",
        "precision",
        "tokens_per_s",
        "eval_seconds",
        "averaged_steps",  # with average_last
        # the final evaluation of each split (MLflow's valid/<x> and test/<x>)
        "valid_loss",
        "valid_acc",
        "valid_acc_all",  # tasks with several outputs a step, and generate tasks
        "test_loss",
        "test_acc",
        "test_acc_all",
        # how much it was still learning at the end (components/train/convergence.py)
        "late_metric",
        "late_gain",
        "late_loss_change",
        "late_from_step",
        "converged",
    ],
)
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
    if world > 1:  # one rank a process (a GPU each on CUDA), each running ``phases.train``
        return launch(ctx, cfg, world)
    return train(ctx, cfg)
