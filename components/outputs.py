"""What steps of every area write: metric keys MLflow accepts, strict-JSON summaries logged as
metrics, and PNG figures. Numpy only; matplotlib is imported when a figure is drawn. Below the
areas (data, models, report, train, probes), so the probes and the report's plots share it."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np


def key(*parts: Any) -> str:
    """Join parts into a metric key MLflow accepts ([A-Za-z0-9_./-])."""
    return "/".join(re.sub(r"[^A-Za-z0-9_.\-]", "_", str(p)) for p in parts if p != "")


def flat(summary: dict[str, Any]) -> dict[str, Any]:
    """Keep 6 significant digits and turn NaN / Inf into None so summaries are strict JSON."""
    out = {}
    for k, v in summary.items():
        if isinstance(v, (float, np.floating)):
            v = float(v)
            out[k] = float(f"{v:.6g}") if math.isfinite(v) else None
        elif isinstance(v, np.integer):
            out[k] = int(v)
        else:
            out[k] = v
    return out


def log_summary(ctx, summary: dict[str, Any]) -> None:
    """Log every numeric summary entry as a metric."""
    ctx.log_metrics(
        {
            k: float(v)
            for k, v in summary.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None
        }
    )


def pyplot():
    """Return matplotlib.pyplot on the non-interactive backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(ctx, fig, name: str) -> str:
    """Write a matplotlib figure as PNG in the work dir, log it, close it; return the path."""
    import matplotlib.pyplot as plt

    path = ctx.path(name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    ctx.log_artifact(path)
    return str(path)
