"""probe.capacity (B1 / B3): recall from a fixed-size state against input length, with and without attention."""

from __future__ import annotations

from typing import Any, Literal

from components import Context, component
from components.bounds import Count, Edges, Size
from components.colours import colours
from components.data.io import load_translation
from components.models.decoding import translate
from components.probes import common as P
from components.probes.decode import bucket_names, bucket_of
from components.train.checkpoint import load_info, load_model


def recall(hyp: list[int], ref: list[int]) -> float:
    """Fraction of reference tokens reproduced at their position."""
    return sum(h == r for h, r in zip(hyp, ref)) / max(len(ref), 1)


def _decode(ctx: Context, bar, label: str, ckpt: str, data, split: str, max_examples: int, batch_size: int):
    """Decode a split greedily with one checkpoint; return hypotheses, references (no BOS/EOS) and
    source lengths (no EOS)."""
    ds, meta = load_translation(data or load_info(ckpt)["data"])
    part = ds[split]
    n = len(part) if max_examples <= 0 else min(max_examples, len(part))
    src, tgt = list(part["src_ids"][:n]), list(part["tgt_ids"][:n])
    bar.update(total=(bar.total or 0) + n, description=f"recall {label}")
    hyps = translate(
        load_model(ckpt, ctx.device), src, meta, batch_size=batch_size, device=ctx.device, on_batch=bar.advance
    )
    bos, eos = int(meta["bos_id"]), int(meta["eos_id"])
    refs = [[t for t in ids if t not in (bos, eos)] for ids in tgt]
    lengths = [len([t for t in ids if t != eos]) for ids in src]
    return hyps, refs, lengths


def _score(summary: dict, label: str, hyps, refs, lengths: list[int], buckets: list[int]) -> list[float]:
    """Add one model's recall overall and per bucket, exact matches and the longest/shortest ratio;
    return its recall per bucket."""
    accs = [recall(h, r) for h, r in zip(hyps, refs)]
    exact = [float(h == r) for h, r in zip(hyps, refs)]
    summary[P.key("acc", label)] = sum(accs) / max(len(accs), 1)
    curve = []
    for b in bucket_names(buckets):
        idx = [i for i, L in enumerate(lengths) if bucket_of(L, buckets) == b]
        summary[P.key("count", f"len_{b}")] = len(idx)
        a = sum(accs[i] for i in idx) / len(idx) if idx else float("nan")
        summary[P.key("acc", label, f"len_{b}")] = a
        summary[P.key("exact", label, f"len_{b}")] = sum(exact[i] for i in idx) / len(idx) if idx else float("nan")
        curve.append(a)
    filled = [a for a in curve if a == a]
    summary[P.key("ratio", label)] = filled[-1] / filled[0] if len(filled) > 1 and filled[0] > 0 else float("nan")
    return curve


def _plot(curves: dict[str, list[float]], names: list[str]):
    """Draw token recall against source length, one line per model."""
    plt = P.pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    colour = colours(curves)  # each architecture's colour in every figure
    for label, ys in curves.items():
        ax.plot(range(len(names)), ys, "o-", color=colour[label], label=label)
    ax.set_xticks(range(len(names)), names)
    ax.set(xlabel="source length (tokens)", ylabel="token recall", ylim=(0, 1.02), title="recall against input length")
    ax.legend()
    return fig


@component(
    "probe.capacity",
    outputs=["summary", "plot"],
    bottleneck="B1",
    logged_before=["exact", "ratio"],
    summary=[
        "count/len_{buckets|bucket_names}",
        "acc/{checkpoints}",
        "ratio/{checkpoints}",
        "acc/{checkpoints}/len_{buckets|bucket_names}",
        "exact/{checkpoints}/len_{buckets|bucket_names}",
        "converged/{checkpoints}",  # the trainings behind the checkpoints (probes/common.py trainings)
        "late_gain/{checkpoints}",
    ],
)
def capacity(
    ctx: Context,
    *,
    checkpoints: dict[str, str] | list[dict[str, str]],
    data: str | None = None,  # default: each checkpoint's own data folder
    split: Literal["valid", "test"] = "test",
    buckets: Edges = [5, 11, 21, 31],  # noqa: B006 - source tokens
    max_examples: Count = 0,
    batch_size: Size = 128,
) -> dict:
    """Decode greedily and score token recall per source-length bucket, per model.

    Args:
        checkpoints: label -> encoder-decoder checkpoint, e.g. ``{"seq2seq": ..., "attention": ...}``, or a
            list of such maps merged in order (two training steps' checkpoints), as ``eval.bleu`` takes.

    Returns:
        ``summary``: ``acc/<label>/len_<a-b>``, ``exact/<label>/len_<a-b>``, ``count/len_<a-b>``,
        ``acc/<label>`` overall and ``ratio/<label>`` = longest-bucket / shortest-bucket recall.
    """
    from components.probes.bleu import merge_checkpoints

    checkpoints = merge_checkpoints(checkpoints)
    summary: dict[str, Any] = {}
    curves = {}
    with ctx.progress(total=None, description="recall") as bar:  # sentences of every model
        for label, ckpt in checkpoints.items():
            hyps, refs, lengths = _decode(ctx, bar, label, ckpt, data, split, max_examples, batch_size)
            curves[label] = _score(summary, label, hyps, refs, lengths, buckets)
    summary = P.flat(summary)
    P.log_summary(ctx, summary)
    summary |= P.trainings(checkpoints)  # for the scorecard, not a metric
    fig = _plot(curves, bucket_names(buckets))
    return {"summary": summary, "plot": P.save_figure(ctx, fig, "capacity.png")}
