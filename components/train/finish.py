"""After the loop: save the final state, average the last checkpoints, evaluate, summarise and log."""

from __future__ import annotations

import json
import math
from typing import Any

from components import Context
from components.train import checkpoint as C
from components.train.average import average_checkpoints
from components.train.convergence import late_change
from components.train.curves import log_end
from components.train.evaluate import evaluate
from components.train.example import io_example
from components.train.loop import Trained
from components.train.prepare import Run


def finish(ctx: Context, run: Run, done: Trained) -> dict[str, Any]:
    """Save and evaluate the final (or averaged) model; return the component's outputs."""
    seconds = run.elapsed + done.seconds
    if done.diverged_step is None:
        run.save(done.step, seconds)
    if run.rank:  # with several processes, rank 0 alone evaluates, summarises and saves
        return {}
    summary = _summary(run, done, seconds)
    if run.snapshots is not None and done.diverged_step is None:
        paths = run.snapshots.paths()
        run.net.load_state_dict(average_checkpoints(paths))
        summary["averaged_steps"] = [int(p.stem.split("_")[1]) for p in paths]
    for split in ("valid", "test"):
        for k, v in evaluate(run.net, run.task, split, run.cfg.eval_batch_size).items():
            summary[f"{split}_{k}"] = v
    summary = _finite_or_none(summary)
    summary["eval_seconds"] = round(done.eval_seconds + log_end(ctx, run, done.step, summary), 3)
    summary |= late_change(run.history.get("curve", []), done.step, run.cfg.converge_tolerance)
    _log(ctx, run, done.step, summary)
    return _save(ctx, run, summary)


def _log(ctx: Context, run: Run, step: int, summary: dict[str, Any]) -> None:
    """Log the summary's numbers by docs/metrics.md: ``test/*`` at the last step, the run's facts as
    ``run/*``, and ``valid/*`` at the last step when no learning curve logged its end (``eval_every: 0``)."""
    numbers = {k: float(v) for k, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    split = {k.replace("_", "/", 1): v for k, v in numbers.items() if k.startswith(("valid_", "test_"))}
    ctx.log_metrics({k: v for k, v in split.items() if k.startswith("test/")}, step)
    if run.cfg.eval_every == 0:
        ctx.log_metrics({k: v for k, v in split.items() if k.startswith("valid/")}, step)
    facts = {f"vitals/{k}": v for k, v in numbers.items() if not k.startswith(("valid_", "test_"))}
    flags = {"vitals/diverged": float(summary["diverged"])}
    if summary.get("converged") is not None:  # the late gain's verdict (components/train/convergence.py)
        flags["vitals/converged"] = float(summary["converged"])
    ctx.log_metrics(facts | flags)


def _summary(run: Run, done: Trained, seconds: float) -> dict[str, Any]:
    """How the run went: steps, divergence, time and throughput, size and precision."""
    return {
        "diverged": done.diverged_step is not None,
        "diverged_step": done.diverged_step,
        "steps": done.step,
        "seconds": round(seconds, 3),
        "cpu_seconds": round(done.cpu_seconds, 3),  # this process's CPU time (all threads) in this run's loop
        "passes_per_step": done.passes,  # forward/backward passes over a step's micro-batches, at the end
        "params": run.n_params,
        "resumed_from_step": run.start,
        "precision": run.precision,
        # training throughput: the learning curve's evaluations left out
        "tokens_per_s": round(done.tokens / (done.seconds - done.eval_seconds), 1) if done.tokens else None,
    }


def _finite_or_none(summary: dict[str, Any]) -> dict[str, Any]:
    """Replace NaN / Inf by None so the summary is strict JSON."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in summary.items()}


def _save(ctx: Context, run: Run, summary: dict[str, Any]) -> dict[str, Any]:
    """Write the model file and summary.json, and log them with the model for MLflow."""
    out = ctx.path("model.pt")
    C.save_model(out, run.net, run.cfg.model, run.overrides, **run.info, summary=summary)
    (ctx.work_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    ctx.log_artifact(ctx.work_dir / "summary.json")
    net = run.net.cpu() if run.device != "cpu" else run.net
    ctx.log_model(net, "model", example=io_example(net, run.batches(0)))  # the signature MLflow shows
    return {"checkpoint": str(out), "summary": summary}
