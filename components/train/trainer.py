"""The ``train.model`` component: train any registered model on any data folder, resumably."""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from contextlib import contextmanager
from typing import Any, Literal

import torch

from components import Context, component
from components.model_names import ModelName
from components.train import checkpoint as C
from components.train import precision as P
from components.train.average import Snapshots, average_checkpoints
from components.train.build import TrainError, build_model, data_overrides
from components.train.evaluate import evaluate
from components.train.example import io_example
from components.train.lineage import describe
from components.train.optim import clip_gradients, make_optimizer, make_scheduler
from components.train.prefetch import Prefetcher
from components.train.step import accumulate_gradients
from components.train.tasks import Task

# Parameters that may change between a killed run and its restart without invalidating the state.
_RESUMABLE_CHANGES = {"steps", "eval_every", "checkpoint_every", "log_every", "compile", "prefetch"}


def _fingerprint(params: dict[str, Any]) -> str:
    kept = {k: v for k, v in params.items() if k not in _RESUMABLE_CHANGES}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _finite_or_none(summary: dict[str, Any]) -> dict[str, Any]:
    """Replace NaN / Inf by None so the summary is strict JSON."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in summary.items()}


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


@component("train.model", outputs=["checkpoint", "summary"])
def train_model(
    ctx: Context,
    *,
    data: str,
    model: ModelName,
    overrides: dict[str, Any] | None = None,
    steps: int = 1000,
    batch_size: int = 64,
    max_tokens: int | None = None,  # translation: batch by token count instead of batch_size
    accumulate: int = 1,  # micro-batches per optimiser step (gradient accumulation)
    passes: int | None = None,  # forward/backward passes per step over them; None: fit to the device
    optimizer: Literal["adam", "adamw", "sgd", "adadelta"] = "adam",  # adadelta: Bahdanau 2015 (lr 1.0)
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    betas: list[float] = [0.9, 0.999],  # noqa: B006 - the Transformer paper used [0.9, 0.98]
    momentum: float = 0.0,
    eps: float | None = None,  # Adam/AdamW 1e-8, Adadelta 1e-6 when None; Vaswani 2017 used Adam eps 1e-9
    rho: float = 0.95,  # Adadelta's decay (Bahdanau 2015)
    schedule: Literal["constant", "inverse_sqrt"] = "constant",
    warmup: int = 0,
    label_smoothing: float = 0.0,
    shift: int = 0,  # images: random translation by up to +-shift pixels (ViT positions need it)
    clip: Literal["norm", "value", "none"] = "norm",
    clip_value: float = 1.0,
    max_loss: float | None = None,  # also count a loss above this as divergence (CE rarely hits Inf)
    seed: int = 0,
    eval_every: int = 0,  # 0: evaluate only at the end
    eval_batch_size: int = 256,
    checkpoint_every: int = 100,
    log_every: int = 10,
    bf16: bool = False,  # on CUDA, recurrent models train in fp32 + TF32 instead (see precision.choose)
    compile: bool = False,
    deterministic: bool = False,
    average_last: int = 0,  # > 1: the final model averages the weights of the last N checkpoints
    prefetch: int | None = None,  # batches collated ahead on a thread; None: 2 on a GPU, 0 on a CPU
) -> dict:
    """Train a model variant on a data folder; resume from the work dir's last checkpoint.

    Args:
        data: a data folder (the ``dataset`` output of a data step); its meta.json decides the
            task kind and fills vocab sizes / class counts into the model config.
        model: a registered variant name (or ``package.module:function`` factory).
        overrides: config fields to replace on top of the variant (and the data's values).
        clip: ``none`` lets gradients explode (B2); a NaN/Inf loss (or one above ``max_loss``)
            then ends the run as ``diverged`` (a result, not an error).
        seed: initialisation, dropout and data order.
        accumulate: each step sums the gradients of this many consecutive batches, weighted by their
            target tokens, so ``max_tokens=3125, accumulate=8`` is a 25k-token step.
        passes: translation: the step's ``accumulate`` micro-batches are merged into this many padded
            batches, one forward/backward pass each (the same gradients up to float rounding; the same
            data and order whatever the device). None: on a GPU, one pass, doubled each time the
            device runs out of memory (the step is retried, nothing is lost); on a CPU, one pass per
            micro-batch. A given number also doubles on running out of memory. The summary's
            ``passes_per_step`` says what was used.
        average_last: keep the weights of the last N checkpoints (every ``checkpoint_every`` steps,
            the final one included) and evaluate and save their average.

    Returns:
        ``checkpoint`` (model file for ``load_model``) and ``summary`` (final valid/test loss and
        accuracy, diverged, diverged_step, steps, seconds, params, tokens_per_s: source
        tokens, or examples, per second of this process's training).
    """
    params = {k: v for k, v in locals().items() if k != "ctx"}
    if steps < 0 or batch_size < 1 or checkpoint_every < 0 or eval_every < 0 or log_every < 1:
        raise TrainError("steps, eval_every and checkpoint_every must be >= 0; batch_size and log_every >= 1")
    if accumulate < 1 or average_last < 0 or (prefetch is not None and prefetch < 0):
        raise TrainError(
            f"accumulate must be >= 1 and average_last, prefetch >= 0; got accumulate={accumulate}, "
            f"average_last={average_last}, prefetch={prefetch}"
        )
    if passes is not None and not 1 <= passes <= accumulate:
        raise TrainError(
            f"passes must be between 1 and accumulate={accumulate} (or null to fit the device); got {passes}"
        )
    if average_last > 1 and not checkpoint_every:
        raise TrainError(f"average_last={average_last} averages checkpoints: set checkpoint_every > 0")
    if len(betas) != 2:
        raise TrainError(f"betas must be two numbers like [0.9, 0.98], got {betas}")
    device = ctx.device
    cuda = device.startswith("cuda")
    with _determinism(deterministic, device), P.tf32(cuda):
        task = Task(data, device)
        ctx.log_dataset(**describe(data, task.meta))  # MLflow's Dataset column and lineage
        config = {**data_overrides(task.meta, model), **(overrides or {})}
        torch.manual_seed(seed)
        net = build_model(model, config).to(device)
        task.check_ids(net)  # here, on the CPU, rather than a device sync in every step
        opt = make_optimizer(net, optimizer, lr, weight_decay, tuple(betas), momentum, fused=cuda, eps=eps, rho=rho)
        sched = make_scheduler(opt, schedule, warmup)
        precision = P.choose(net, device, bf16)
        n_params = sum(p.numel() for p in net.parameters())
        ctx.log_params(
            {k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in params.items()}
            | {"params": n_params, "task_kind": task.kind, "precision": precision}
        )

        resume_path = ctx.path("checkpoints/last.pt")
        fingerprint = _fingerprint(params)
        start, elapsed, resumed_from, history = 0, 0.0, 0, {}
        if resume_path.exists():
            state = C.read(resume_path)
            if state.get("fingerprint") == fingerprint:
                net.load_state_dict(state["state_dict"])
                opt.load_state_dict(state["optimizer"])
                sched.load_state_dict(state["scheduler"])
                C.set_rng_state(state["rng"])
                start = resumed_from = state["step"]
                elapsed, history = state["seconds"], state["history"]
                ctx.log.info("resumed from step %d", start)
            else:
                ctx.log.warning("ignoring %s: written by a run with other parameters", resume_path)
        if start == 0:
            torch.manual_seed(seed)  # dropout draws start from the seed, whatever building consumed

        step_fn = torch.compile(net) if compile else net
        autocast = P.autocast(device, precision)
        batches = task.train_batches(seed, batch_size, max_tokens, shift)
        # image shifts draw from the global RNG: only pure batch functions may run ahead on a thread
        depth = 0 if shift else _prefetch_depth(prefetch, cuda)
        info = {"data": str(data), "meta": task.meta, "task_kind": task.kind, "seed": seed}
        snapshots = Snapshots(ctx.path("checkpoints/average"), average_last) if average_last > 1 else None

        def save_state(step: int, seconds: float) -> None:
            C.atomic_save(
                {
                    **C.model_record(net, model, config, **info),
                    "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(),
                    "rng": C.rng_state(),
                    "step": step,
                    "seconds": seconds,
                    "history": history,
                    "fingerprint": fingerprint,
                },
                resume_path,
            )
            if snapshots is not None:
                snapshots.save(step, net, model, config, **info)

        # CPU kernels run synchronously, so reading the loss costs nothing there; on a GPU the loss is
        # read every log_every steps and a divergence is found at most log_every - 1 steps late
        check_every = log_every if cuda else 1
        diverged_step, first_bad = None, torch.zeros((), dtype=torch.long, device=device)
        window = _Window(device)
        run_tokens = 0  # this process's tokens, for the summary's throughput (a resumed run counts its part)
        t0, cpu0 = time.perf_counter(), time.process_time()
        step = start
        loader = Prefetcher(batches, start * accumulate, depth, pin=cuda)
        n_passes = _first_passes(passes, accumulate, cuda, task.kind)
        if accumulate > 1 and task.kind == "translation":
            ctx.log.info(
                "%d micro-batches per step in %d pass(es)%s",
                accumulate,
                n_passes,
                " (as many as fit in the device's memory)" if passes is None and cuda else "",
            )
        with loader, ctx.progress(total=steps, description=f"train {model}") as bar:
            bar.update(completed=start)
            net.train()
            while step < steps:
                micro = [next(loader) for _ in range(accumulate)]
                while True:  # a step that runs out of device memory is retried in more, smaller passes
                    opt.zero_grad(set_to_none=True)
                    try:
                        grouped = task.passes(micro, n_passes)
                        loss, correct, count = accumulate_gradients(step_fn, task, grouped, autocast, label_smoothing)
                        break
                    except torch.OutOfMemoryError:
                        if n_passes >= accumulate or task.kind != "translation":
                            raise
                    grouped = None  # the failed pass's tensors go before the cache is emptied
                    opt.zero_grad(set_to_none=True)
                    if cuda:
                        torch.cuda.empty_cache()
                    n_passes = min(accumulate, n_passes * 2)
                    ctx.log.warning(
                        "step %d ran out of device memory: %d passes of the %d micro-batches per step from now on",
                        step + 1,
                        n_passes,
                        accumulate,
                    )
                if device == "cpu":  # the loss is already computed: one read, and the check in Python
                    value = float(loss)
                    if not math.isfinite(value) or (max_loss is not None and value > max_loss):
                        diverged_step = step + 1
                else:  # no device sync: remember the first bad step on the GPU, read it every check_every
                    bad = ~torch.isfinite(loss) if max_loss is None else ~torch.isfinite(loss) | (loss > max_loss)
                    first_bad = torch.where((first_bad == 0) & bad, step + 1, first_bad)
                    if (step + 1) % check_every == 0 and int(first_bad):
                        diverged_step = int(first_bad)
                        value = float(loss) if diverged_step == step + 1 else float("nan")
                if diverged_step is not None:
                    ctx.log_metric("train/loss", value, diverged_step)
                    ctx.log.warning("loss is %s at step %d: stopping (diverged)", value, diverged_step)
                    break
                logging_step = (step + 1) % log_every == 0
                grad_norm = clip_gradients(net, clip, clip_value, measure=logging_step)
                opt.step()
                sched.step()
                step += 1
                n_tokens = sum(task.tokens(b) for b in micro)
                window.add(loss, correct, count, n_tokens)
                run_tokens += n_tokens
                if logging_step:
                    metrics = window.read(log_every) | {
                        "train/lr": sched.get_last_lr()[0],
                        "train/grad_norm": _item(grad_norm),
                    }
                    ctx.log_metrics(metrics, step)
                    bar.update(
                        description=f"train {model} loss {metrics['train/loss']:.4f} "
                        f"{metrics['train/tokens_per_s']:,.0f} tok/s"
                    )
                if eval_every and step % eval_every == 0:
                    valid = evaluate(net, task, "valid", eval_batch_size)
                    net.train()  # evaluate left it in eval mode
                    ctx.log_metrics({f"valid/{k}": v for k, v in valid.items()}, step)
                    history["valid"] = valid
                if checkpoint_every and step % checkpoint_every == 0 and step < steps:
                    save_state(step, elapsed + time.perf_counter() - t0)
                bar.advance()
        run_seconds, run_cpu = time.perf_counter() - t0, time.process_time() - cpu0
        seconds = elapsed + run_seconds
        if diverged_step is None:
            save_state(step, seconds)

        summary: dict[str, Any] = {
            "diverged": diverged_step is not None,
            "diverged_step": diverged_step,
            "steps": step,
            "seconds": round(seconds, 3),
            "cpu_seconds": round(run_cpu, 3),  # this process's CPU time (all threads) in this run's loop
            "passes_per_step": n_passes,  # forward/backward passes over a step's micro-batches, at the end
            "params": n_params,
            "resumed_from_step": resumed_from,
            "precision": precision,
            "tokens_per_s": round(run_tokens / run_seconds, 1) if run_tokens else None,
        }
        if snapshots is not None and diverged_step is None:
            paths = snapshots.paths()
            net.load_state_dict(average_checkpoints(paths))
            summary["averaged_steps"] = [int(p.stem.split("_")[1]) for p in paths]
        for split in ("valid", "test"):
            for k, v in evaluate(net, task, split, eval_batch_size).items():
                summary[f"{split}_{k}"] = v
        summary = _finite_or_none(summary)
        ctx.log_metrics(
            {
                k: float(v)
                for k, v in summary.items()
                if isinstance(v, (int, float)) and v is not None and not isinstance(v, bool)
            }
            | {"diverged": float(summary["diverged"])}
        )
        out = ctx.path("model.pt")
        C.save_model(out, net, model, config, **info, summary=summary)
        (ctx.work_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        ctx.log_artifact(ctx.work_dir / "summary.json")
        net = net.cpu() if device != "cpu" else net
        ctx.log_model(net, "model", example=io_example(net, batches(0)))  # the signature MLflow shows
        return {"checkpoint": str(out), "summary": summary}


def _first_passes(passes: int | None, accumulate: int, cuda: bool, kind: str) -> int:
    """Passes per step to start with: as given; else on a GPU one (translation batches merge, and
    a step that runs out of memory doubles it), elsewhere one per micro-batch."""
    if passes is not None:
        return passes
    return 1 if cuda and kind == "translation" else accumulate


def _prefetch_depth(prefetch: int | None, cuda: bool) -> int:
    """Batches to collate ahead: as asked, else 2 on a GPU (its CPU is free while kernels run) and 0 on a CPU.

    On a CPU the training thread keeps the cores busy, and a collating thread only adds hand-offs
    with it: measured with ``benchmarks/train.py --families``, prefetching cost 2-5% of throughput
    for toy translation (seq2seq, the Transformer) and for in-memory tensor batches.
    """
    if prefetch is not None:
        return prefetch
    return 2 if cuda else 0


def _item(x) -> float | None:
    return None if x is None else float(x)


class _Window:
    """Sums of loss, correct and counted targets since the last log, kept on the device."""

    def __init__(self, device: str):
        self.device = device
        self.reset()

    def reset(self) -> None:
        zero = lambda: torch.zeros((), device=self.device)  # noqa: E731
        self.loss, self.correct, self.count, self.tokens, self.t0 = zero(), zero(), zero(), 0, time.perf_counter()

    def add(self, loss, correct, count, tokens: int) -> None:
        self.loss += loss
        self.correct += correct
        self.count += count
        self.tokens += tokens

    def read(self, steps: int) -> dict[str, float]:
        """Return the window's means (one device read) and start a new window."""
        loss, correct, count = torch.stack([self.loss, self.correct.float(), self.count.float()]).tolist()
        now = time.perf_counter()
        out = {
            "train/loss": loss / steps,
            "train/acc": correct / max(count, 1),
            "train/tokens_per_s": self.tokens / max(now - self.t0, 1e-9),
        }
        self.reset()
        return out
