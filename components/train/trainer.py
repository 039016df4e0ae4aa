"""The ``train.model`` component: train any registered model on any data folder, resumably."""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Literal

import torch

from components import Context, component
from components.train import checkpoint as C
from components.train.build import TrainError, build_model, data_overrides
from components.train.evaluate import evaluate
from components.train.optim import clip_gradients, make_optimizer, make_scheduler
from components.train.tasks import Task

# Parameters that may change between a killed run and its restart without invalidating the state.
_RESUMABLE_CHANGES = {"steps", "eval_every", "checkpoint_every", "log_every", "compile"}


def _fingerprint(params: dict[str, Any]) -> str:
    kept = {k: v for k, v in params.items() if k not in _RESUMABLE_CHANGES}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _finite_or_none(summary: dict[str, Any]) -> dict[str, Any]:
    """Replace NaN / Inf by None so the summary is strict JSON."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in summary.items()}


@contextmanager
def _determinism(on: bool, device: str):
    """Use deterministic kernels inside the block when ``on``; restore the global flags after."""
    before = (torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.deterministic,
              torch.backends.cudnn.benchmark)
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
    model: str,
    overrides: dict[str, Any] | None = None,
    steps: int = 1000,
    batch_size: int = 64,
    max_tokens: int | None = None,  # translation: batch by token count instead of batch_size
    optimizer: Literal["adam", "adamw", "sgd"] = "adam",
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    betas: list[float] = [0.9, 0.999],  # noqa: B006 - the Transformer paper used [0.9, 0.98]
    momentum: float = 0.0,
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
    bf16: bool = False,
    compile: bool = False,
    deterministic: bool = False,
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

    Returns:
        ``checkpoint`` (model file for ``load_model``) and ``summary`` (final valid/test loss and
        accuracy, diverged, diverged_step, steps, seconds, params, tokens_per_s: source
        tokens, or examples, per second of this process's training).
    """
    params = {k: v for k, v in locals().items() if k != "ctx"}
    if steps < 0 or batch_size < 1 or checkpoint_every < 0 or eval_every < 0 or log_every < 1:
        raise TrainError("steps, eval_every and checkpoint_every must be >= 0; batch_size and log_every >= 1")
    if len(betas) != 2:
        raise TrainError(f"betas must be two numbers like [0.9, 0.98], got {betas}")
    device = ctx.device
    with _determinism(deterministic, device):
        task = Task(data, device)
        config = {**data_overrides(task.meta, model), **(overrides or {})}
        torch.manual_seed(seed)
        net = build_model(model, config).to(device)
        opt = make_optimizer(net, optimizer, lr, weight_decay, tuple(betas), momentum)
        sched = make_scheduler(opt, schedule, warmup)
        n_params = sum(p.numel() for p in net.parameters())
        ctx.log_params({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in params.items()}
                       | {"params": n_params, "task_kind": task.kind})

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
        autocast = torch.autocast(device.split(":")[0], dtype=torch.bfloat16) if bf16 else nullcontext()
        batches = task.train_batches(seed, batch_size, max_tokens, shift)
        info = {"data": str(data), "meta": task.meta, "task_kind": task.kind, "seed": seed}

        def save_state(step: int, seconds: float) -> None:
            C.atomic_save({**C.model_record(net, model, config, **info), "optimizer": opt.state_dict(),
                           "scheduler": sched.state_dict(), "rng": C.rng_state(), "step": step,
                           "seconds": seconds, "history": history, "fingerprint": fingerprint}, resume_path)

        diverged_step = None
        window_loss, window_correct, window_count, window_tokens = 0.0, 0, 0, 0
        run_tokens = 0  # this process's tokens, for the summary's throughput (a resumed run counts its part)
        t0, window_t0 = time.perf_counter(), time.perf_counter()
        step = start
        with ctx.progress(total=steps, description=f"train {model}") as bar:
            bar.update(completed=start)
            while step < steps:
                batch = batches(step)
                net.train()
                with autocast:
                    loss, correct, count = task.step_loss(step_fn, batch, label_smoothing)
                loss_value = float(loss.detach())
                if not math.isfinite(loss_value) or (max_loss is not None and loss_value > max_loss):
                    diverged_step = step + 1
                    ctx.log_metric("train/loss", loss_value, step + 1)
                    ctx.log.warning("loss is %s at step %d: stopping (diverged)", loss_value, step + 1)
                    break
                opt.zero_grad(set_to_none=True)
                loss.backward()
                logging_step = (step + 1) % log_every == 0
                grad_norm = clip_gradients(net, clip, clip_value, measure=logging_step)
                opt.step()
                sched.step()
                step += 1
                window_loss += loss_value
                window_correct += int(correct)
                window_count += count
                n_tokens = task.tokens(batch)
                window_tokens += n_tokens
                run_tokens += n_tokens
                if logging_step:
                    now = time.perf_counter()
                    rate = window_tokens / max(now - window_t0, 1e-9)
                    ctx.log_metrics({"train/loss": window_loss / log_every,
                                     "train/acc": window_correct / max(window_count, 1), "train/grad_norm": grad_norm, "train/lr": sched.get_last_lr()[0],
                                     "train/tokens_per_s": rate}, step)
                    bar.update(description=f"train {model} loss {window_loss / log_every:.4f} {rate:,.0f} tok/s")
                    window_loss, window_correct, window_count, window_tokens, window_t0 = 0.0, 0, 0, 0, now
                if eval_every and step % eval_every == 0:
                    valid = evaluate(net, task, "valid", eval_batch_size)
                    ctx.log_metrics({f"valid/{k}": v for k, v in valid.items()}, step)
                    history["valid"] = valid
                if checkpoint_every and step % checkpoint_every == 0 and step < steps:
                    save_state(step, elapsed + time.perf_counter() - t0)
                bar.advance()
        run_seconds = time.perf_counter() - t0
        seconds = elapsed + run_seconds
        if diverged_step is None:
            save_state(step, seconds)

        summary: dict[str, Any] = {"diverged": diverged_step is not None, "diverged_step": diverged_step,
                                   "steps": step, "seconds": round(seconds, 3), "params": n_params,
                                   "resumed_from_step": resumed_from,
                                   "tokens_per_s": round(run_tokens / run_seconds, 1) if run_tokens else None}
        for split in ("valid", "test"):
            for k, v in evaluate(net, task, split, eval_batch_size).items():
                summary[f"{split}_{k}"] = v
        summary = _finite_or_none(summary)
        ctx.log_metrics({k: float(v) for k, v in summary.items() if isinstance(v, (int, float)) and v is not None
                         and not isinstance(v, bool)} | {"diverged": float(summary["diverged"])})
        out = ctx.path("model.pt")
        C.save_model(out, net, model, config, **info, summary=summary)
        (ctx.work_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        ctx.log_artifact(ctx.work_dir / "summary.json")
        ctx.log_model(net.cpu() if device != "cpu" else net, "model")
        return {"checkpoint": str(out), "summary": summary}
