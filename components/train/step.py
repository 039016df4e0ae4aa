"""One optimiser step: forward and backward passes over its micro-batches, and the retry in more passes."""

from __future__ import annotations

import torch

from components.train import distributed as D


def accumulate_gradients(model, task, micro_batches: list[dict], autocast, label_smoothing: float):
    """Backpropagate every micro-batch, each weighted by its share of the step's targets.

    A micro-batch's mean loss times (its targets / the step's targets) sums to the mean over the
    whole step, so the gradients equal those of one big batch (up to float rounding); with several
    processes the targets are the step's over all of them (``distributed.accumulate_weights``). A single
    micro-batch (no accumulation) is its whole step: its loss is backpropagated as it is, with no
    weighting multiply in the graph (the same gradients, bit for bit: the weight would be 1.0).
    Returns the step's loss, correct and counted targets as device tensors (nothing is read back here).
    """
    if len(micro_batches) == 1 and D.world() == 1:
        with autocast:
            loss, correct, counted = task.step_loss(model, micro_batches[0], label_smoothing)
        loss.backward()
        return loss.detach().float(), correct, counted
    shares = [task.targets(b) for b in micro_batches]  # counted on the CPU batches
    weights, total = D.accumulate_weights(shares)  # with several processes, over all of them
    loss_sum, correct, counted = 0.0, 0, 0
    for i, (batch, n, w) in enumerate(zip(micro_batches, shares, weights)):
        with D.no_sync(model, last=i == len(micro_batches) - 1):  # DDP all-reduces in the last backward
            with autocast:
                loss, c, k = task.step_loss(model, batch, label_smoothing)
            (loss * w).backward()
        loss_sum = loss_sum + loss.detach().float() * (n / total)
        correct, counted = correct + c, counted + torch.as_tensor(k)
    if D.world() > 1:  # the step's figures over every process, the same on each (divergence agrees)
        return tuple(D.all_sum_tensors(loss_sum, correct, counted))
    return loss_sum, correct, counted


def first_passes(passes: int | None, accumulate: int, cuda: bool, merges: bool) -> int:
    """Passes per step to start with: as given; else on a GPU one where the task's batches merge
    (translation; a step that runs out of memory doubles it), elsewhere one per micro-batch."""
    if passes is not None:
        return passes
    return 1 if cuda and merges else accumulate


class StepPasses:
    """A step's forward/backward passes; a step that runs out of device memory is retried in more,
    smaller passes (nothing is lost: the same micro-batches, the same gradients)."""

    def __init__(self, ctx, model, task, opt, cfg, autocast):
        self.ctx, self.model, self.task, self.opt, self.autocast = ctx, model, task, opt, autocast
        self.accumulate, self.label_smoothing = cfg.accumulate // D.world(), cfg.label_smoothing  # this process's
        self.cuda = ctx.device.startswith("cuda")
        self.passes = first_passes(cfg.passes, self.accumulate, self.cuda, task.merges_passes)
        if cfg.accumulate > 1 and task.merges_passes:
            ctx.log.info(
                "%d micro-batches per step in %d pass(es)%s",
                cfg.accumulate,
                self.passes,
                " (as many as fit in the device's memory)" if cfg.passes is None and self.cuda else "",
            )

    def __call__(self, micro_batches: list[dict], step: int):
        """Zero the gradients and backpropagate step ``step + 1``; return its loss, correct and counted targets."""
        while True:
            self.opt.zero_grad(set_to_none=True)
            try:
                grouped = self.task.passes(micro_batches, self.passes)
                return accumulate_gradients(self.model, self.task, grouped, self.autocast, self.label_smoothing)
            except torch.OutOfMemoryError:
                # several processes: the others are inside this step's collectives, so the error stands
                if self.passes >= self.accumulate or not self.task.merges_passes or D.world() > 1:
                    raise
            grouped = None  # the failed pass's tensors go before the cache is emptied
            self._more_passes(step)

    def _more_passes(self, step: int) -> None:
        """Free what the failed step held and double the passes (up to one per micro-batch)."""
        self.opt.zero_grad(set_to_none=True)
        if self.cuda:
            torch.cuda.empty_cache()
        self.passes = min(self.accumulate, self.passes * 2)
        self.ctx.log.warning(
            "step %d ran out of device memory: %d passes of the %d micro-batches per step from now on",
            step + 1,
            self.passes,
            self.accumulate,
        )
