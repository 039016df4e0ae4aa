"""probe.long_lag (B2): accuracy against time lag; the longest lag solved."""

from __future__ import annotations

import re
from typing import Any, Literal

import numpy as np

from components import Context, component
from components.bounds import Probability, Size
from components.probes import common as P
from components.train.checkpoint import load_info, load_model
from components.train.evaluate import evaluate
from components.train.tasks import Task


def lag_of(key: str, info: dict[str, Any]) -> int:
    """Return the lag stated in the checkpoint's data meta, else in the key (``50``, ``lag=50``)."""
    meta = info.get("meta") or {}
    for field in ("lag", "seq_len"):
        if meta.get(field):
            return int(meta[field])
    m = re.search(r"(?:lag\D*)?(\d+)", key)
    if not m:
        raise P.ProbeError(f"cannot tell the lag of {key!r}: its data meta has no 'lag' and the key no number")
    return int(m.group(1))


@component(
    "probe.long_lag",
    outputs=["summary", "plot"],
    bottleneck="B2",
    logged_before=["acc_by_lag", "acc_min", "longest_solved"],
    summary=[
        "threshold",
        "longest_solved",
        "chance",
        # the lag of each checkpoint's data: its data step's lag (seq_len for the adding problem)
        "acc/lag_{checkpoints.data.lag,seq_len}",
        "acc_min/lag_{checkpoints.data.lag,seq_len}",
        "converged/{checkpoints}",  # the trainings behind the checkpoints (probes/common.py trainings)
        "late_gain/{checkpoints}",
    ],
)
def long_lag(
    ctx: Context,
    *,
    checkpoints: dict[str, str],
    threshold: Probability = 0.95,  # "solved" (CALIBRATION: RNN fails <= 0.30, solves >= 0.95)
    split: Literal["valid", "test"] = "test",
    batch_size: Size = 512,
) -> dict:
    """Evaluate models trained at several lags on their own test data; report accuracy per lag.

    Args:
        checkpoints: key -> checkpoint, one per lag (and seed), e.g. the ``checkpoint`` outputs of a
            ``train.model`` step fanned out over lags; the lag is read from each data folder's meta
            (``lag``, else ``seq_len`` for the adding problem).

    Returns:
        ``summary``: ``acc/lag_<L>`` (mean over checkpoints at that lag), ``acc_min/lag_<L>``,
        ``longest_solved`` (largest lag with mean accuracy >= threshold; 0 if none), ``chance``.
    """
    by_lag: dict[int, list[float]] = {}
    chance = None
    for key, ckpt in checkpoints.items():
        info = load_info(ckpt)
        task = Task(info["data"], ctx.device)
        acc = evaluate(load_model(ckpt, ctx.device), task, split, batch_size)["acc"]
        by_lag.setdefault(lag_of(key, info), []).append(acc)
        chance = task.meta.get("chance", chance)
    lags = sorted(by_lag)
    summary: dict[str, Any] = {"threshold": threshold}
    for L in lags:
        summary[f"acc/lag_{L}"] = float(np.mean(by_lag[L]))
        summary[f"acc_min/lag_{L}"] = float(np.min(by_lag[L]))
        ctx.log_metric("acc_by_lag", summary[f"acc/lag_{L}"], L)
    solved = [L for L in lags if summary[f"acc/lag_{L}"] >= threshold]
    summary["longest_solved"] = max(solved) if solved else 0
    if chance is not None:
        summary["chance"] = chance
    summary = P.flat(summary)
    P.log_summary(ctx, summary)
    summary |= P.trainings(checkpoints)  # for the scorecard, not a metric
    plt = P.pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(lags, [summary[f"acc/lag_{L}"] for L in lags], "o-", label="accuracy (mean)")
    ax.axhline(threshold, ls="--", color="green", lw=0.8, label=f"solved ({threshold})")
    if chance is not None:
        ax.axhline(chance, ls=":", color="gray", label="chance")
    ax.set(xlabel="time lag", ylabel="test accuracy", ylim=(0, 1.02), title="accuracy against lag")
    ax.legend()
    return {"summary": summary, "plot": P.save_figure(ctx, fig, "long_lag.png")}
