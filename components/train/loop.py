"""The training loop: steps from the run's start to ``steps``, logging, evaluating and checkpointing."""

from __future__ import annotations

import time
from dataclasses import dataclass

from components import Context, Progress
from components.train import distributed as D
from components.train import precision as P
from components.train.compiled import for_step
from components.train.curves import eval_steps, log_point
from components.train.monitor import Divergence, Window
from components.train.optim import clip_gradients
from components.train.prefetch import Prefetcher
from components.train.prepare import Run
from components.train.step import StepPasses


@dataclass
class Trained:
    """How the loop ended in this process."""

    step: int  # optimiser steps done, the resumed ones included
    diverged_step: int | None
    passes: int  # forward/backward passes per step at the end
    tokens: int  # this process's tokens (or examples), for the summary's throughput
    seconds: float  # this process's wall time in the loop
    cpu_seconds: float  # this process's CPU time (all threads) in the loop
    eval_seconds: float  # of ``seconds``, the time spent evaluating the learning curve's points


def train_loop(ctx: Context, run: Run) -> Trained:
    """Train from ``run.start`` to ``cfg.steps``; stop early, as a result, when the loss diverges."""
    cfg, task, net = run.cfg, run.task, run.net
    net = D.wrap(net, run.world)  # with several processes, DistributedDataParallel
    step_fn, step_task = for_step(ctx, cfg.compile, net, task)  # eager, or forward + loss compiled
    backward = StepPasses(ctx, step_fn, step_task, run.opt, cfg, P.autocast(ctx.device, run.precision))
    # image shifts draw from the global RNG: only pure batch functions may run ahead on a thread
    depth = 0 if cfg.shift else _prefetch_depth(cfg.prefetch, run.cuda)
    watch = Divergence(ctx.device, cfg.max_loss, cfg.log_every if run.cuda else 1)
    window, tokens, diverged, evaluating = Window(ctx.device), 0, None, 0.0
    points = eval_steps(cfg.eval_every, cfg.steps)
    t0, cpu0 = time.perf_counter(), time.process_time()
    step = run.start
    loader = Prefetcher(run.batches, run.start * run.per_step, depth, pin=run.cuda)
    with loader, ctx.progress(total=cfg.steps, description=f"train {cfg.model}") as bar:
        bar.update(completed=run.start)
        net.train()
        while step < cfg.steps:
            micro = [next(loader) for _ in range(run.per_step)]
            loss, correct, count = backward(micro, step)
            diverged = watch.check(loss, step)
            if diverged is not None:
                ctx.log_metric("train/loss", diverged[1], diverged[0])
                ctx.log.warning("loss is %s at step %d: stopping (diverged)", diverged[1], diverged[0])
                break
            logging_step = (step + 1) % cfg.log_every == 0
            grad_norm = clip_gradients(net, cfg.clip, cfg.clip_value, measure=logging_step)
            run.opt.step()
            run.sched.step()
            step += 1
            n_tokens = int(D.all_sum(sum(task.tokens(b) for b in micro)))  # every process's
            window.add(loss, correct, count, n_tokens)
            tokens += n_tokens
            if logging_step:
                _log_train(ctx, run, window, grad_norm, step, bar)
            spent = _evaluate_and_save(ctx, run, step, run.elapsed + time.perf_counter() - t0, points)
            window.t0 += spent  # train/tokens_per_s counts training time only
            evaluating += spent
            bar.advance()
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
    return Trained(step, diverged[0] if diverged else None, backward.passes, tokens, seconds, cpu_seconds, evaluating)


def _log_train(ctx: Context, run: Run, window: Window, grad_norm, step: int, bar: Progress) -> None:
    """Log the window's training metrics and show them on the progress bar."""
    lr = run.sched.get_last_lr()[0]  # the learning rate after ``step`` updates: the next update's
    metrics = window.read(run.cfg.log_every) | {
        "train/lr": lr,
        # the same in thousandths, for MLflow's chart: it draws a series that never changes in the
        # middle of a +-1 axis (plotly's autorange), so a constant 0.003 reads as 0 there; 3.0 reads as 3
        "train/lr_x1000": lr * 1000,
        "train/grad_norm": None if grad_norm is None else float(grad_norm),
    }
    ctx.log_metrics(metrics, step)
    bar.update(
        description=f"train {run.cfg.model} loss {metrics['train/loss']:.4f} {metrics['train/tokens_per_s']:,.0f} tok/s"
    )


def _evaluate_and_save(ctx: Context, run: Run, step: int, seconds: float, points: frozenset[int]) -> float:
    """Log the learning curve's point at ``step`` if it is one of ``points``; save the state every
    ``checkpoint_every``. Return the seconds spent evaluating."""
    cfg, spent = run.cfg, 0.0
    if step in points and run.rank == 0:
        run.history["valid"], spent = log_point(ctx, run, step)
    if step in points:
        D.barrier()  # the other processes wait while rank 0 evaluates
    if cfg.checkpoint_every and step % cfg.checkpoint_every == 0 and step < cfg.steps:
        run.save(step, seconds)
    return spent


def _prefetch_depth(prefetch: int | None, cuda: bool) -> int:
    """Batches to collate ahead: as asked, else 2 on a GPU (its CPU is free while kernels run) and 0 on a CPU.

    On a CPU the training thread keeps the cores busy, and a collating thread only adds hand-offs
    with it: measured with ``benchmarks/train.py --families``, prefetching cost 2-5% of throughput
    for toy translation (seq2seq, the Transformer) and for in-memory tensor batches.
    """
    if prefetch is not None:
        return prefetch
    return 2 if cuda else 0
