"""What steps of every area write: metric keys MLflow accepts, strict-JSON summaries logged as
metrics, and PNG figures. Numpy only; matplotlib is imported when a figure is drawn. Below the
areas (data, models, report, train, probes), so the probes and the report's plots share it."""

from __future__ import annotations

import json
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


# A summary key that names one point of an axis (``time_s/lstm/T_64``, ``bleu/lstm/len_1-10``,
# ``acc/lag_50``, ``grad/d_5``, ``entropy/scaled/dk_16``) or a value's own uncertainty (``bleu_ci/lstm``,
# ``time_s_df/...``): a row of the step's table, not a chart of its own (the probes log such axes as
# one curve over the axis, e.g. ``time_s/lstm`` at step T).
_TABLE_ONLY = re.compile(r"(^|/)[A-Za-z]+_\d[\d\-]*(/|$)|_(ci|df)(/|$)")


def charted(key: str) -> bool:
    """Whether a summary key is logged as a metric: not a point of an axis nor an uncertainty."""
    return _TABLE_ONLY.search(key) is None


def log_summary(ctx, summary: dict[str, Any]) -> None:
    """Write the whole summary as ``summary.json`` (the step's table) and log its headline numbers
    (``charted`` keys) as metrics, so the chart view has one section per quantity, not per point."""
    path = ctx.path("summary.json")
    path.write_text(json.dumps(flat(summary), indent=1, sort_keys=True, default=str))
    ctx.log_artifact(path)
    ctx.log_metrics(
        {
            k: float(v)
            for k, v in summary.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and charted(k)
        }
    )


def pyplot():
    """Return matplotlib.pyplot on the non-interactive backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _fit_title(ax) -> None:
    """Wrap an axes' title to the axes' width, so that two panels' titles neither meet nor leave the figure."""
    import textwrap

    title = ax.get_title()
    if not title:
        return
    points = ax.get_position().width * ax.figure.get_figwidth() * 72
    chars = max(int(points / (0.55 * ax.title.get_fontsize())), 12)  # an average character's width
    if len(title) > chars:
        # a $...$ formula stays on one line: a break inside it leaves mathtext that cannot be drawn
        parts = title.split("$")
        kept = "$".join(p.replace(" ", "\0") if i % 2 else p for i, p in enumerate(parts)) if len(parts) % 2 else title
        lines = textwrap.wrap(kept, chars, break_long_words=False, break_on_hyphens=False)
        ax.set_title("\n".join(line.replace("\0", " ") for line in lines))


def _legend_of_drawn(ax) -> None:
    """Keep in an axes' legend only the lines that draw something: a series with no finite value
    (a model not measured) is named nowhere else on the plot, so it is left out of the legend."""
    legend = ax.get_legend()
    if legend is None:
        return
    handles, labels = ax.get_legend_handles_labels()
    kept = [(h, label) for h, label in zip(handles, labels) if _draws(h)]
    if not kept:
        legend.remove()
    elif len(kept) < len(handles):  # the same legend, where it was placed, without the others
        title = legend.get_title().get_text()
        anchor = getattr(legend, "_bbox_to_anchor", None)  # a TransformedBbox of what the author gave
        ax.legend(
            *zip(*kept),
            fontsize=legend.get_texts()[0].get_fontsize(),
            loc=getattr(legend, "_loc", "best"),
            bbox_to_anchor=getattr(anchor, "_bbox", None),
            bbox_transform=getattr(anchor, "_transform", None),
            ncols=getattr(legend, "_ncols", 1),
            title=title or None,
        )


def _draws(artist) -> bool:
    ys = getattr(artist, "get_ydata", None)
    if ys is None:
        return True  # a band or a patch: drawn
    values = np.asarray(ys(), dtype=float)
    return bool(values.size and np.isfinite(values).any())


def save_figure(ctx, fig, name: str) -> str:
    """Write a matplotlib figure as PNG in the work dir, log it, close it; return the path."""
    import matplotlib.pyplot as plt

    path = ctx.path(name)
    for ax in fig.axes:
        _fit_title(ax)
        _legend_of_drawn(ax)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")  # a title or legend past the axes' edge is kept, not clipped
    plt.close(fig)
    ctx.log_artifact(path)
    return str(path)
