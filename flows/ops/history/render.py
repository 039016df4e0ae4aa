"""History as text (metrics as rows, runs and missed slots as columns, oldest left), as a trend plot, and
the plot and table logged to the judged run."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pandas as pd

from flows.ops.history._model import Flag
from flows.ops.history.table import metric_columns


def _cell(values: tuple[float, ...] | None) -> str:
    """A run's value: the seeds' mean ± their standard deviation where there are seeds."""
    if not values:
        return ""
    finite = [v for v in values if math.isfinite(v)]
    if len(values) == 1:
        return f"{values[0]:.4g}"
    if len(finite) < len(values):
        return f"{len(values) - len(finite)}/{len(values)} diverged"
    return f"{statistics.fmean(finite):.4g} ± {statistics.stdev(finite):.2g}"


def _column(frame: pd.DataFrame, rid: str, metrics: list[str]) -> list[str]:
    seeds = frame.attrs.get("seeds", {}).get(rid, {})
    row = frame.loc[rid]
    cells = [row["status"], row.get("cached", "")]
    for m in metrics:
        cells.append(_cell(seeds.get(m)) if m in seeds else ("" if pd.isna(row[m]) else f"{row[m]:.4g}"))
    return cells


def render(frame: pd.DataFrame, flags: list[Flag]) -> str:
    """The table as text: a column per run and per slot that did not run, the flagged rows marked."""
    metrics = metric_columns(frame)
    columns: list[tuple[pd.Timestamp, str, list[str]]] = [
        (t, f"{t:%m-%d %H:%M} {rid[:6]}", _column(frame, rid, metrics))
        for rid, t in zip(frame.index, frame["start_time"])
    ]
    for slot in frame.attrs.get("slots", []):
        columns.append((slot.time, f"{slot.time:%m-%d %H:%M} {slot.kind}", [slot.kind, ""] + [""] * len(metrics)))
    columns.sort(key=lambda c: c[0])
    kinds = {}
    for f in flags:
        kinds.setdefault(f.metric, f.kind)
    body = pd.DataFrame({name: cells for _, name, cells in columns}, index=["(status)", "(cached steps)", *metrics])
    body["flag"] = ["", ""] + [f"<-- {kinds[m]}" if m in kinds else "" for m in metrics]
    if not any(frame.get("cached", pd.Series(dtype=str)).astype(bool)):
        body = body.drop(index="(cached steps)")
    with pd.option_context("display.max_rows", 500, "display.max_columns", 60, "display.width", 250):
        text = body.to_string()
    lines = [f"{s.kind} {s.time:%Y-%m-%d %H:%M} UTC: {s.reason}" for s in frame.attrs.get("slots", [])]
    return "\n".join([text, *lines])


def trend_plot(frame: pd.DataFrame, flags: list[Flag], path: Path, most: int = 12) -> Path:
    """Plot the metrics over time (flagged ones first, at most ``most``) into a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flagged = [f.metric for f in flags if f.metric in frame.columns]
    others = [c for c in metric_columns(frame) if c not in flagged]
    chosen = (flagged + others)[:most]
    cols = min(3, max(1, len(chosen)))
    rows = max(1, math.ceil(len(chosen) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.8 * rows), squeeze=False)
    for ax, metric in zip(axes.flat, chosen):
        ax.plot(
            frame["start_time"],
            frame[metric].astype(float),
            marker="o",
            color="tab:red" if metric in flagged else "tab:blue",
        )
        ax.set_title(metric, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.tick_params(axis="x", rotation=30)
    for ax in list(axes.flat)[len(chosen) :]:
        ax.axis("off")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def log_trend(run_id: str, png: Path, frame: pd.DataFrame) -> None:
    """Attach the plot and the table to the judged (finished) run under ``history/``."""
    import mlflow

    client = mlflow.MlflowClient()
    client.log_artifact(run_id, str(png), artifact_path="history")
    csv = png.with_suffix(".csv")
    frame.to_csv(csv)
    client.log_artifact(run_id, str(csv), artifact_path="history")
