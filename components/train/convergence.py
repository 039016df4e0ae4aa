"""Was the model still learning when training stopped? The learning curve's late gain.

A run's convergence is read from its ``valid/*`` curve: the change of its headline metric
(``valid/bleu`` for translation, else ``valid/acc``; ``valid/loss`` where neither exists) between
the curve's last point at or before ``1 - LATE`` of the steps and its end, and the change of
``valid/loss`` over the same window. A run is ``converged`` when the headline metric gained at most
its tolerance over that window (2 BLEU, 0.01 accuracy, or a 2% fall of the loss: the criterion of
docs/scorecard.md, "Trained models"); a metric that fell counts as converged (overfitting is not
"still improving"). A curve without a point in the window's start leaves it unknown (``None``).
"""

from __future__ import annotations

from typing import Any

LATE = 0.2  # the last fifth of the steps (the reviewer's "last 20%")
TOLERANCE = {"bleu": 2.0, "acc": 0.01, "loss": 0.02}  # loss: relative fall; BLEU on 0-100, accuracy on 0-1


def window_start(steps: int) -> int:
    """The step the late window starts at (the curve gets a point there)."""
    return round((1 - LATE) * steps)


def late_change(
    curve: list[tuple[int, dict[str, float]]], steps: int, tolerance: float | None = None
) -> dict[str, Any]:
    """The convergence record of a learning curve of (step, {``valid/*``: value}) points, the
    last one the end: ``late_metric``, ``late_gain`` (its change over the window, in its units;
    for the loss, its relative fall), ``late_loss_change``, ``late_from_step``, ``converged``."""
    points = sorted((int(s), m) for s, m in curve if m)
    record: dict[str, Any] = {"late_metric": None, "late_gain": None, "late_loss_change": None}
    record |= {"late_from_step": None, "converged": None}
    if len(points) < 2:
        return record
    end_step, end = points[-1]
    earlier = [(s, m) for s, m in points[:-1] if s <= window_start(end_step)]
    if not earlier:
        return record
    start_step, start = earlier[-1]
    metric = next((m for m in ("bleu", "acc") if _num(end, m) is not None and _num(start, m) is not None), "loss")
    loss0, loss1 = _num(start, "loss"), _num(end, "loss")
    if loss0 is not None and loss1 is not None:
        record["late_loss_change"] = round(loss1 - loss0, 6)
    if metric == "loss":
        if loss0 is None or loss1 is None or loss0 <= 0:
            return record
        gain = (loss0 - loss1) / loss0
    else:
        gain = _num(end, metric) - _num(start, metric)
    limit = TOLERANCE[metric] if tolerance is None else tolerance
    return record | {
        "late_metric": metric,
        "late_gain": round(gain, 6),
        "late_from_step": start_step,
        "converged": bool(gain <= limit),
    }


def _num(point: dict[str, float], metric: str) -> float | None:
    v = point.get(f"valid/{metric}")
    return float(v) if isinstance(v, (int, float)) and v == v else None


def of_checkpoint(info: dict[str, Any]) -> dict[str, Any]:
    """The convergence record a model file's training summary holds (``checkpoint.load_info``), or
    {} for a model trained before it was recorded."""
    summary = info.get("summary") or {}
    return {k: summary[k] for k in ("converged", "late_gain", "late_metric") if k in summary}
