"""Learning curves: the steps the loop evaluates at, and the ``valid/*`` points it logs.

Every point logs ``valid/loss`` and ``valid/acc`` (and ``valid/acc_all`` where the task has it),
and translation adds ``valid/bleu``: the same keys for every architecture and task, so MLflow's
chart view overlays runs. The loop logs the points before the end on the first ``eval_batches``
valid batches; the end's point is the summary's own full-split numbers, logged by ``finish``.
Evaluating draws no random numbers and leaves the model in train mode: training is unchanged.
"""

from __future__ import annotations

import time

import torch

from components import Context
from components.train.convergence import window_start
from components.train.evaluate import evaluate
from components.train.prepare import Run

DEFAULT_POINTS = 6  # eval_every: null evaluates at 5 evenly spaced steps, and the end


def eval_steps(eval_every: int | None, steps: int) -> frozenset[int]:
    """The steps before the end at which the loop evaluates (none for ``eval_every: 0``); the
    default points include the start of the convergence window (``convergence.window_start``)."""
    if eval_every == 0:
        return frozenset()
    if eval_every is None:
        even = {round(k * steps / DEFAULT_POINTS) for k in range(1, DEFAULT_POINTS)}
        return frozenset(even | {window_start(steps)}) - {0, steps}
    return frozenset(range(eval_every, steps, eval_every))


def log_point(ctx: Context, run: Run, step: int) -> tuple[dict[str, float], float]:
    """Evaluate on (the first ``eval_batches`` batches of) the valid split and log ``valid/*`` at
    ``step``; return the loss and accuracy, and the seconds it took."""
    if run.cuda:
        torch.cuda.synchronize()  # the queued training steps are not evaluation time
    t0 = time.perf_counter()
    cfg = run.cfg
    valid = evaluate(run.net, run.task, "valid", cfg.eval_batch_size, cfg.eval_batches or None)
    point = {f"valid/{k}": v for k, v in valid.items()} | _kind_points(run)
    ctx.log_metrics(point, step)
    run.history.setdefault("curve", []).append([step, point])  # kept in the checkpoint: a resumed run has it
    return valid, time.perf_counter() - t0


def log_end(ctx: Context, run: Run, step: int, summary: dict) -> float:
    """Log the end's ``valid/*`` point from the summary's full-split numbers (and BLEU) at ``step``;
    return the seconds it took (nothing when ``eval_every`` is 0: only the summary, as before)."""
    if run.cfg.eval_every == 0:
        return 0.0
    t0 = time.perf_counter()
    valid = {f"valid/{k[len('valid_') :]}": v for k, v in summary.items() if k.startswith("valid_")}
    point = {k: v for k, v in (valid | _kind_points(run)).items() if v is not None}
    ctx.log_metrics(point, step)
    run.history.setdefault("curve", []).append([step, point])
    return time.perf_counter() - t0


def _kind_points(run: Run) -> dict[str, float]:
    """The task kind's own points (``valid/bleu`` for translation: ``Task.curve_points``)."""
    return run.task.curve_points(run.net, run.cfg.eval_bleu, run.device)
