"""A training run opens on its learning curves: its description says whether it converged and shows
the curves.

MLflow's run page opens on its Overview, whose first block is the run's description (Markdown, an
image included); its Model metrics tab lays sections out alphabetically, so a training's one-point
``test/*`` values come before its ``train/`` and ``valid/`` curves. So when a training step run
(one that logged ``vitals/late_gain``, components/train/convergence.py) finishes, its run gets:

- ``figures/curves.png``: the training and validation loss, and the headline validation metric
  (``valid/bleu`` or ``valid/acc``), against the step, with the late window (the last 20% of the
  steps, where convergence is read) shaded;
- a description: the convergence line (``converged: valid/bleu +0.4 over the last 20% of steps``)
  and that figure, served by the tracking server's artifact endpoint (a link relative to the UI).

It runs in the coordinator after the step, from what the run logged: no component code changes,
so no cached result is invalidated.
"""

from __future__ import annotations

import os
import tempfile

from components.train.convergence import LATE, TOLERANCE  # no torch: the package imports lazily

FIGURE = "figures/curves.png"


def _history(client, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def headline(metrics: dict[str, float]) -> str | None:
    """The validation metric a training's convergence is read on: BLEU, else accuracy, else the loss."""
    return next((k for k in ("valid/bleu", "valid/acc", "valid/loss") if k in metrics), None)


def convergence_line(metrics: dict[str, float], key: str) -> str:
    """``**converged**: valid/bleu +0.4 over the last 20% of steps (at most +2 allowed; ...)``."""
    gain = metrics.get("vitals/late_gain")
    flag = metrics.get("vitals/converged")
    state = "converged" if flag == 1 else "still improving" if flag == 0 else "convergence unknown"
    if gain is None:
        return f"**{state}**"
    what = "relative fall of valid/loss" if key == "valid/loss" else key
    limit = TOLERANCE[key.removeprefix("valid/")]
    return (
        f"**{state}**: {what} {gain:+.3g} over the last {LATE:.0%} of steps "
        f"(at most {limit:+g} allowed; components/train/convergence.py)"
    )


def draw(curves: dict[str, list[tuple[int, float]]], key: str, path: str) -> None:
    """Two panels: the losses, and the headline metric, each with the late window shaded."""
    # a Figure on its own Agg canvas, not pyplot: the coordinator's threads draw at once (two trainings
    # that finish together), pyplot's registry of figures is not thread-safe, and the backend of a
    # process that embeds the runner stays its own
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 2.3))  # about 580 px wide: within the description column
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2)
    end = max((s for points in curves.values() for s, _ in points), default=0)
    panels = ((axes[0], ("train/loss", "valid/loss"), "loss"), (axes[1], (key,), key))
    for ax, keys, title in panels:
        for k in keys:
            if curves.get(k):
                steps, values = zip(*curves[k])
                ax.plot(steps, values, label=k, marker="." if len(steps) < 30 else None)
        if end:
            ax.axvspan((1 - LATE) * end, end, color="0.9", zorder=0)
        ax.set_title(title)
        ax.set_xlabel("step")
        if ax.lines:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches="tight")


def describe(client, run_id: str) -> bool:
    """Give a finished training run its curves figure and description; False for a run that is no
    training (logged no ``vitals/late_gain``)."""
    metrics = client.get_run(run_id).data.metrics
    key = headline(metrics)
    if "vitals/late_gain" not in metrics or key is None:
        return False
    curves = {k: _history(client, run_id, k) for k in {"train/loss", "valid/loss", key}}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, os.path.basename(FIGURE))
        draw(curves, key, path)
        client.log_artifact(run_id, path, os.path.dirname(FIGURE))
    # relative: the page is the UI's root with a #-route, so the image comes from whichever server (and
    # port) shows the run, a team's server or `bottlenecks ui` on a port of its own
    image = f"get-artifact?path={FIGURE}&run_uuid={run_id}"
    client.set_tag(run_id, "mlflow.note.content", f"{convergence_line(metrics, key)}\n\n![learning curves]({image})\n")
    return True
