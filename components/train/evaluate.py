"""Evaluate a model on one split of its task: mean loss and accuracy."""

from __future__ import annotations

from itertools import islice

import torch
from torch import nn

from components.train.tasks import Task


@torch.no_grad()
def evaluate(
    model: nn.Module, task: Task, split: str, batch_size: int = 256, max_batches: int | None = None
) -> dict[str, float]:
    """Return {"loss", "acc"} averaged over the split, or its first ``max_batches`` batches
    (token-weighted for sequence outputs).

    Tasks with several outputs per step (targets (B, T, J)) also get ``acc_all``: the fraction of
    steps where every scored output is right; generate tasks (one-to-many) get it per sequence
    (``Task.all_right``).
    """
    was_training = model.training
    model.eval()
    total_loss, correct, counted, all_right, steps = 0.0, 0, 0, 0, 0
    for batch in islice(task.eval_batches(split, batch_size), max_batches):
        out, y = task.outputs(model, batch)
        loss, c, n = task.score(out, y)
        n = int(n)
        total_loss += float(loss) * n
        correct += int(c)
        counted += n
        right, units = task.all_right(out, y)  # steps or sequences with every output right (acc_all)
        all_right += right
        steps += units
    model.train(was_training)
    if counted == 0:
        return {"loss": float("nan"), "acc": float("nan")}
    result = {"loss": total_loss / counted, "acc": correct / counted}
    if steps:
        result["acc_all"] = all_right / steps
    return result
