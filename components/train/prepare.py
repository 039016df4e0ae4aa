"""Before the loop: build a run's task, model and optimiser, and resume from its last checkpoint."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from components import Context
from components.train import checkpoint as C
from components.train import distributed as D
from components.train import precision as P
from components.train.average import Snapshots
from components.train.build import build_model, data_overrides
from components.train.config import TrainConfig
from components.train.lineage import describe
from components.train.optim import make_optimizer, make_scheduler
from components.train.tasks import Task


@dataclass
class Run:
    """What one run trains and where it saves: the task, the model with its optimiser and schedule."""

    cfg: TrainConfig
    device: str
    task: Task
    net: nn.Module
    opt: torch.optim.Optimizer
    sched: Any
    overrides: dict[str, Any]  # the model's config: the data's values, then the user's overrides
    precision: str
    last: Path  # the resumable state
    snapshots: Snapshots | None  # the checkpoints average_last averages
    start: int = 0  # the step the loop starts from (a resumed run's)
    elapsed: float = 0.0  # training seconds of the runs before this process
    history: dict[str, Any] = field(default_factory=dict)
    rank: int = 0  # this process's rank among ``world`` (distributed.py); rank 0 alone writes files
    world: int = 1

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def per_step(self) -> int:
        """This process's micro-batches per optimiser step (its share of ``accumulate``)."""
        return self.cfg.accumulate // self.world

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.net.parameters())

    @property
    def info(self) -> dict[str, Any]:
        """What a model file records besides the weights."""
        return {"data": str(self.cfg.data), "meta": self.task.meta, "task_kind": self.task.kind, "seed": self.cfg.seed}

    @functools.cached_property
    def batches(self) -> Callable[[int], dict]:
        """This process's micro-batch i -> training batch; made once (translation buckets the whole
        split by length). One process reads micro-batch i of the single order; rank r of W its share."""
        c = self.cfg
        batches = self.task.train_batches(c.seed, c.batch_size, c.max_tokens, c.shift)
        return D.shard(batches, c.accumulate, self.rank, self.world)

    def save(self, step: int, seconds: float) -> None:
        """Write the resumable state (and a snapshot for averaging); with several processes every
        rank calls it (their random states are gathered) and rank 0 writes."""
        rngs = D.gather(C.rng_state())
        if self.rank:
            return
        C.atomic_save(
            {
                **C.model_record(self.net, self.cfg.model, self.overrides, **self.info),
                "optimizer": self.opt.state_dict(),
                "scheduler": self.sched.state_dict(),
                "rng": rngs[0],
                "rng_ranks": rngs,  # each rank's, by rank
                "step": step,
                "seconds": seconds,
                "history": self.history,
                "fingerprint": self.cfg.fingerprint(),
            },
            self.last,
        )
        if self.snapshots is not None:
            self.snapshots.save(step, self.net, self.cfg.model, self.overrides, **self.info)


def prepare(ctx: Context, cfg: TrainConfig, rank: int = 0, world: int = 1) -> Run:
    """Read the data, build the model and its optimiser on the seed (the same on every rank), and
    log the run's params."""
    task = Task(cfg.data, ctx.device)
    ctx.log_dataset(**describe(cfg.data, task.meta))  # MLflow's Dataset column and lineage
    overrides = {**data_overrides(task.meta, cfg.model), **(cfg.overrides or {})}
    torch.manual_seed(cfg.seed)
    net = build_model(cfg.model, overrides).to(ctx.device)
    task.check_ids(net)  # here, on the CPU, rather than a device sync in every step
    cuda = ctx.device.startswith("cuda")
    opt = make_optimizer(
        net,
        cfg.optimizer,
        cfg.lr,
        cfg.weight_decay,
        tuple(cfg.betas),
        cfg.momentum,
        fused=cuda,
        eps=cfg.eps,
        rho=cfg.rho,
    )
    sched = make_scheduler(opt, cfg.schedule, cfg.warmup, cfg.steps)
    precision = P.choose(net, ctx.device, cfg.bf16)
    snapshots = Snapshots(ctx.path("checkpoints/average"), cfg.average_last) if cfg.average_last > 1 else None
    last = ctx.path("checkpoints/last.pt")
    run = Run(cfg, ctx.device, task, net, opt, sched, overrides, precision, last, snapshots, rank=rank, world=world)
    ctx.log_params(cfg.logged() | {"params": run.n_params, "task_kind": task.kind, "precision": precision})
    return run


def resume(ctx: Context, run: Run) -> None:
    """Continue from the last checkpoint when the same parameters wrote it; else start on the seed."""
    if run.last.exists():
        state = C.read(run.last)
        if state.get("fingerprint") == run.cfg.fingerprint():
            run.net.load_state_dict(state["state_dict"])
            run.opt.load_state_dict(state["optimizer"])
            run.sched.load_state_dict(state["scheduler"])
            rngs = state.get("rng_ranks", [state["rng"]])  # each rank's, by rank
            C.set_rng_state(rngs[min(run.rank, len(rngs) - 1)])
            if run.rank >= len(rngs):  # more processes than wrote the checkpoint: a stream of its own
                torch.manual_seed(run.cfg.seed + D.RANK_SEED * run.rank + state["step"])
            run.start, run.elapsed, run.history = state["step"], state["seconds"], state["history"]
            ctx.log.info("resumed from step %d", run.start)
        else:
            ctx.log.warning("ignoring %s: written by a run with other parameters", run.last)
    if run.start == 0:
        # dropout draws start from the seed, whatever building consumed; each rank draws its own
        torch.manual_seed(run.cfg.seed + D.RANK_SEED * run.rank)
