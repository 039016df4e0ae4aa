"""Evaluate a model on one split of its task: mean loss and accuracy."""
from __future__ import annotations

import torch
from torch import nn

from components.train.tasks import Task


@torch.no_grad()
def evaluate(model: nn.Module, task: Task, split: str, batch_size: int = 256) -> dict[str, float]:
    """Return {"loss", "acc"} averaged over the split (token-weighted for sequence outputs)."""
    was_training = model.training
    model.eval()
    total_loss, correct, counted = 0.0, 0, 0
    for batch in task.eval_batches(split, batch_size):
        loss, c, n = task.step_loss(model, batch)
        total_loss += float(loss) * n
        correct += int(c)
        counted += n
    model.train(was_training)
    if counted == 0:
        return {"loss": float("nan"), "acc": float("nan")}
    return {"loss": total_loss / counted, "acc": correct / counted}
