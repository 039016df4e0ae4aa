"""eval.classify: accuracy and confusion matrix of a trained classifier or tagger."""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch

from components import Context, component
from components.bounds import Size
from components.probes import common as P
from components.train.checkpoint import load_info, load_model
from components.train.evaluate import evaluate
from components.train.tasks import Task


@torch.no_grad()
def predictions(model, task: Task, split: str, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (predicted, true) class ids over a split, ignored positions dropped."""
    preds, trues = [], []
    for batch in task.eval_batches(split, batch_size):
        out, y = task.outputs(model, batch)
        y = y.reshape(-1)
        keep = y != -100
        preds.append(out.reshape(-1, out.size(-1)).argmax(-1)[keep].cpu())
        trues.append(y[keep].cpu())
    return torch.cat(preds).numpy(), torch.cat(trues).numpy()


@component(
    "eval.classify",
    outputs=["summary", "confusion", "plot"],
    summary=[
        "acc",
        "loss",
        "n",
        "chance",  # where the data states it
        "converged",  # the training behind the checkpoint (probes/common.py trainings)
        "late_gain",
    ],
)
def classify(
    ctx: Context,
    *,
    checkpoint: str,
    data: str | None = None,  # default: the data folder the checkpoint was trained on
    split: Literal["train", "valid", "test"] = "test",
    batch_size: Size = 256,
) -> dict:
    """Score a classifier (sequence, tagger or image) on a split: accuracy, loss, confusion matrix.

    Returns:
        ``summary`` (``acc``, ``loss``, ``n``, ``chance`` where the data states it), ``confusion``
        (CSV, rows = true class, columns = predicted) and ``plot`` (PNG heat map).
    """
    info = load_info(checkpoint)
    task = Task(data or info["data"], ctx.device)
    if task.kind == "seq_regress" or task.kind == "translation":
        raise P.ProbeError(
            f"eval.classify needs a classification task, got {task.kind!r}; use eval.bleu for translation"
        )
    model = load_model(checkpoint, ctx.device)
    scores = evaluate(model, task, split, batch_size)
    pred, true = predictions(model, task, split, batch_size)
    n_classes = int(task.meta.get("num_classes") or max(pred.max(), true.max()) + 1)
    matrix = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(matrix, (true, pred), 1)
    summary = P.flat(
        {
            "acc": float((pred == true).mean()) if len(true) else float("nan"),
            "loss": scores["loss"],
            "n": int(len(true)),
            "chance": task.meta.get("chance"),
        }
    )
    summary = {k: v for k, v in summary.items() if v is not None or k in ("acc", "loss")}
    P.log_summary(ctx, summary)
    summary |= P.trainings(checkpoint)  # for the scorecard, not a metric
    import pandas as pd

    conf = ctx.path("confusion.csv")
    pd.DataFrame(
        matrix, index=[f"true_{i}" for i in range(n_classes)], columns=[f"pred_{i}" for i in range(n_classes)]
    ).to_csv(conf)
    ctx.log_artifact(conf)
    plt = P.pyplot()
    fig, ax = plt.subplots(figsize=(4 + n_classes * 0.15, 3.5 + n_classes * 0.15))
    im = ax.imshow(matrix, cmap="Blues")
    fig.colorbar(im, ax=ax)
    ax.set(xlabel="predicted", ylabel="true", title=f"{split}: acc {summary['acc']}")
    return {"summary": summary, "confusion": str(conf), "plot": P.save_figure(ctx, fig, "confusion.png")}
