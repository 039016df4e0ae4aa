"""The ``report.bleu_by_length`` component: every model's BLEU-by-length curve on one plot, with bands."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from components import outputs as P  # keys, summaries, figures (matplotlib when a plot is drawn)
from components.colours import colours
from components.context import Context
from components.registry import component
from components.report.refs import is_matrixed

_BUCKET = re.compile(r"^count/len_(?P<bucket>.+)$")


class BleuPlotError(ValueError):
    """The evaluations given to report.bleu_by_length cannot be drawn."""


def _seeds(source: Any) -> dict[str, dict[str, Any]]:
    """Instance label -> summary (a non-matrixed step counts as one unlabelled seed)."""
    return dict(source) if is_matrixed(source) else {"": source}


def _buckets(summary: dict[str, Any]) -> list[str]:
    """Bucket names ("4-8", ..., "19-inf") by their lower edge (a stored summary may sort its keys)."""
    return sorted((m["bucket"] for k in summary if (m := _BUCKET.match(k))), key=lambda b: int(b.split("-")[0]))


def curves(evaluations: dict[str, Any], models: list[str] | None = None) -> dict[str, Any]:
    """Collect per model and bucket the seeds' BLEU and 95% bootstrap intervals from eval.bleu summaries.

    Returns ``{"buckets": [...], "counts": [...], "models": {label: {"seeds": {seed: [bleu per
    bucket]}, "low": [...], "high": [...], "mean": [...]}}}``; ``low``/``high`` are the envelope of
    the seeds' intervals (sentence resampling and seed spread together).
    """
    buckets: list[str] | None = None
    counts: list[int] = []
    found: dict[str, dict[str, dict[str, list[float]]]] = {}
    for name, source in evaluations.items():
        for seed, summary in _seeds(source).items():
            if not isinstance(summary, dict):
                raise BleuPlotError(f"report.bleu_by_length: {name}[{seed}] is not an eval.bleu summary")
            these = _buckets(summary)
            if buckets is None:
                buckets, counts = these, [int(summary[f"count/len_{b}"]) for b in these]
            elif these != buckets:
                raise BleuPlotError(
                    f"report.bleu_by_length: {name} is bucketed {these}, the first "
                    f"evaluation {buckets}; evaluate every model with the same buckets"
                )
            labels = {k.split("/")[1] for k in summary if k.startswith("bleu/") and k.count("/") == 1}
            for label in labels:
                ys = [summary.get(f"bleu/{label}/len_{b}") for b in buckets]
                cis = [summary.get(f"bleu_ci/{label}/len_{b}") for b in buckets]
                entry = found.setdefault(label, {})
                entry[seed or name] = {
                    "bleu": [math.nan if y is None else float(y) for y in ys],
                    "ci": [0.0 if c is None else float(c) for c in cis],
                }
    if not found:
        raise BleuPlotError("report.bleu_by_length: the evaluations hold no bleu/<model> keys")
    order = models or sorted(found)
    unknown = [m for m in order if m not in found]
    if unknown:
        raise BleuPlotError(f"report.bleu_by_length: no evaluation scored {unknown}; scored: {sorted(found)}")
    out: dict[str, Any] = {"buckets": buckets, "counts": counts, "models": {}}
    for label in order:
        seeds = found[label]
        ys = np.array([s["bleu"] for s in seeds.values()])
        ci = np.array([s["ci"] for s in seeds.values()])
        with warnings.catch_warnings():  # a bucket no seed scored (no sentence that long) stays NaN: a gap
            warnings.filterwarnings("ignore", "Mean of empty slice|All-NaN slice encountered", RuntimeWarning)
            out["models"][label] = {
                "seeds": {k: s["bleu"] for k, s in seeds.items()},
                "mean": np.nanmean(ys, 0).tolist(),
                "low": np.nanmin(ys - ci, 0).tolist(),
                "high": np.nanmax(ys + ci, 0).tolist(),
            }
    return out


def draw(data: dict[str, Any], title: str):
    """Plot the mean curve per model, its band, and each seed as a dot; counts under the buckets."""
    plt = P.pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = np.arange(len(data["buckets"]))
    colour = colours(data["models"])  # each architecture's colour in every figure
    for label, m in data["models"].items():
        n = len(m["seeds"])
        (line,) = ax.plot(x, m["mean"], "o-", color=colour[label], label=f"{label} ({n} seed{'s' * (n != 1)})")
        ax.fill_between(x, m["low"], m["high"], color=line.get_color(), alpha=0.15, linewidth=0)
        for ys in m["seeds"].values():
            ax.plot(x, ys, ".", color=line.get_color(), alpha=0.5)
    ax.set_xticks(x, [f"{b}\n(n={c})" for b, c in zip(data["buckets"], data["counts"])], fontsize=8)
    ax.set(xlabel="source length (words); n = test sentences in the bucket", ylabel="BLEU", title=title)
    ax.legend(fontsize=8)
    return fig


@component("report.bleu_by_length", outputs=["plot", "summary", "examples"], bottleneck="B3")
def bleu_by_length(
    ctx: Context,
    *,
    evaluations: dict[str, Any],
    examples: dict[str, Any] | None = None,
    models: list[str] | None = None,  # plot order and subset; default every scored model
    title: str = "BLEU by source length: mean over seeds, band = 95% bootstrap intervals of the seeds",
) -> dict:
    """Draw every model's BLEU by source length from eval.bleu summaries on one plot, with bands.

    Args:
        evaluations: name -> an eval.bleu ``summary`` (or, matrixed over seeds, label -> summary).
            Every evaluation must use the same buckets. The band spans the seeds' sacrebleu
            bootstrap intervals (``n_bootstrap`` > 1 in eval.bleu), so it shows sentence
            resampling and seed spread together.
        examples: name -> an eval.bleu ``examples`` file (or label -> file); their outputs for the
            same source sentence are merged into one side-by-side example.

    Returns:
        ``plot`` (PNG), ``summary`` (``bleu/<model>/len_<bucket>`` means and ``seeds/<model>``), and
        ``examples`` (JSON: the long source sentence, its reference and each model's output).
    """
    data = curves(evaluations, models)
    (ctx.path("bleu_by_length.json")).write_text(json.dumps(data, indent=2) + "\n")
    ctx.log_artifact(ctx.path("bleu_by_length.json"))
    summary: dict[str, Any] = {}
    for label, m in data["models"].items():
        summary[P.key("seeds", label)] = len(m["seeds"])
        for b, y in zip(data["buckets"], m["mean"]):
            summary[P.key("bleu", label, f"len_{b}")] = y
    summary = P.flat(summary)
    P.log_summary(ctx, summary)
    merged = merge_examples(examples or {})
    path = ctx.path("examples.json")
    path.write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
    ctx.log_artifact(path)
    return {
        "plot": P.save_figure(ctx, draw(data, title), "bleu_by_length_all.png"),
        "summary": summary,
        "examples": str(path),
    }


def merge_examples(examples: dict[str, Any]) -> dict[str, Any]:
    """Merge eval.bleu example files for one source sentence; the first seed of each step wins."""
    paths = []
    for value in examples.values():
        paths += [value] if isinstance(value, str) else [value[k] for k in sorted(value, key=str)]
    merged: dict[str, Any] = {}
    for p in paths:
        ex = json.loads(Path(p).read_text())
        if not ex:
            continue
        if not merged:
            merged = {**ex, "hyps": {}}
        if ex["source"] != merged["source"]:
            continue  # another test set: not the same sentence
        for label, hyp in ex["hyps"].items():
            merged["hyps"].setdefault(label, hyp)
    return merged


__all__ = ["BleuPlotError", "bleu_by_length", "curves", "merge_examples"]
