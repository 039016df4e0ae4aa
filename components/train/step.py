"""One optimiser step's forward and backward passes over ``accumulate`` micro-batches."""

from __future__ import annotations

import torch


def accumulate_gradients(model, task, micro_batches: list[dict], autocast, label_smoothing: float):
    """Backpropagate every micro-batch, each weighted by its share of the step's targets.

    A micro-batch's mean loss times (its targets / the step's targets) sums to the mean over the
    whole step, so the gradients equal those of one big batch (up to float rounding). A single
    micro-batch (no accumulation) is its whole step: its loss is backpropagated as it is, with no
    weighting multiply in the graph (the same gradients, bit for bit: the weight would be 1.0).
    Returns the step's loss, correct and counted targets as device tensors (nothing is read back here).
    """
    if len(micro_batches) == 1:
        with autocast:
            loss, correct, counted = task.step_loss(model, micro_batches[0], label_smoothing)
        loss.backward()
        return loss.detach().float(), correct, counted
    shares = [task.targets(b) for b in micro_batches]  # counted on the CPU batches
    total = max(sum(shares), 1)
    loss_sum, correct, counted = 0.0, 0, 0
    for batch, n in zip(micro_batches, shares):
        with autocast:
            loss, c, k = task.step_loss(model, batch, label_smoothing)
        weighted = loss * (n / total)
        weighted.backward()
        loss_sum = loss_sum + weighted.detach().float()
        correct, counted = correct + c, counted + torch.as_tensor(k)
    return loss_sum, correct, counted
