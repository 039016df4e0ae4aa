"""probe.attention_maps (B3): alignment heat maps and how much attention lies near the diagonal."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import torch

from components import Context, component
from components.bounds import Count, Size
from components.probes import common as P
from components.train.checkpoint import load_info, load_model
from components.train.tasks import Task, collate_translation


def diagonal_mass(attn: np.ndarray, window: int) -> tuple[float, float]:
    """Return (mean attention within ``window`` of the scaled diagonal, same for uniform attention).

    ``attn`` is (T, S) for one example; row i's diagonal position is i * (S - 1) / (T - 1).
    """
    T, S = attn.shape
    mass, uniform = [], []
    for i in range(T):
        centre = round(i * (S - 1) / max(T - 1, 1))
        lo, hi = max(0, centre - window), min(S, centre + window + 1)
        mass.append(attn[i, lo:hi].sum())
        uniform.append((hi - lo) / S)
    return float(np.mean(mass)), float(np.mean(uniform))


def region_columns(regions: int, height: int, width: int) -> tuple[int, int]:
    """Return the (rows, cols) of a conv feature grid with ``regions`` cells and the image's aspect."""
    rows = max(1, round(math.sqrt(regions * height / width)))
    if regions % rows:
        raise P.ProbeError(f"{regions} attention regions do not tile a {height}x{width} image")
    return rows, regions // rows


@torch.no_grad()
def teacher_forced(model, task: Task, idx: list[int], split: str) -> tuple[list[np.ndarray], dict[str, Any]]:
    """Return per-example attention (T, S or R) under the reference outputs, and the inputs used."""
    if task.kind == "translation":
        src, tgt = task.split(split)
        b = collate_translation([src[i] for i in idx], [tgt[i] for i in idx], task.pad_id)
        _, attn = model(b["src"], b["src_lengths"], b["tgt_in"])
        t_len = (b["tgt_out"] != -100).sum(1)
        maps = [attn[r, : int(t_len[r]) - 1, : int(b["src_lengths"][r])].float().numpy() for r in range(len(idx))]
        return maps, {"src": [src[i] for i in idx], "tgt": [tgt[i] for i in idx]}
    if task.kind == "image_seq":
        data = task.split(split)
        x, y = data["x"][idx], data["y"][idx]
        bos = torch.full((len(idx), 1), int(task.meta["bos_id"]), dtype=y.dtype)
        _, attn = model(x, None, torch.cat([bos, y], 1))  # attn (B, k + 1, R): step t emits digit t
        return [a[: y.shape[1]].float().numpy() for a in attn], {"images": x, "digits": y}
    raise P.ProbeError(f"attention maps need a translation or digit-strip model, got task {task.kind!r}")


def _diagonal(maps: list[np.ndarray], window: int) -> dict[str, float]:
    """Mean attention near the diagonal, the same for uniform attention, and their ratio."""
    pairs = [diagonal_mass(m, window) for m in maps]
    mass, uniform = float(np.mean([p[0] for p in pairs])), float(np.mean([p[1] for p in pairs]))
    return {"diag_mass": mass, "diag_mass_uniform": uniform, "diag_ratio": mass / uniform}


def _draw_alignments(plt, maps: list[np.ndarray], inputs: dict[str, Any], shown: list[int], folder: str):
    """Draw each shown example's (T, S) alignment, labelled with its source and target tokens."""
    from components.data.io import load_tokenizer

    words = lambda ids, side: [load_tokenizer(folder, side).id_to_token(int(t)) or "?" for t in ids]  # noqa: E731
    fig, axes = plt.subplots(1, max(len(shown), 1), figsize=(4.5 * max(len(shown), 1), 4.5), squeeze=False)
    for ax, i in zip(axes[0], shown):
        m = maps[i]
        ax.imshow(m, cmap="Greys", vmin=0, vmax=1)
        ax.set_xticks(range(m.shape[1]), words(inputs["src"][i][: m.shape[1]], "src"), rotation=90, fontsize=7)
        ax.set_yticks(range(m.shape[0]), words(inputs["tgt"][i][1 : m.shape[0] + 1], "tgt"), fontsize=7)
        ax.set(title=f"example {i}")
    return fig


def _gaze(maps: list[np.ndarray], k: int, cols: int) -> dict[str, float]:
    """Attention on the emitted digit's column band, chance, and the step-column correlation."""
    col = np.arange(maps[0].shape[1]) % cols
    band = (col * k) // cols  # which digit each region column covers
    on, corr = [], []
    for m in maps:  # m: (k, R)
        on.append(np.mean([m[t, band == t].sum() for t in range(k)]))
        centre = m @ col  # expected attended column per emission step
        if np.std(centre) > 0:
            corr.append(np.corrcoef(np.arange(k), centre)[0, 1])
    return {
        "gaze_on_digit": float(np.mean(on)),
        "gaze_uniform": 1.0 / k,
        "gaze_corr": float(np.mean(corr)) if corr else float("nan"),
    }


def _draw_gaze(plt, maps: list[np.ndarray], images, digits, shown: list[int], grid: tuple[int, int]):
    """Draw each shown digit strip, then the gaze at every emission step over it."""
    H, W = images.shape[-2:]
    k = digits.shape[1]
    fig, axes = plt.subplots(
        max(len(shown), 1), k + 1, figsize=(2.2 * (k + 1), 1.6 * max(len(shown), 1)), squeeze=False
    )
    for r, i in enumerate(shown):
        axes[r][0].imshow(images[i, 0], cmap="gray")
        axes[r][0].set_title("".join(str(int(d)) for d in digits[i]), fontsize=8)
        for t in range(k):
            axes[r][t + 1].imshow(images[i, 0], cmap="gray")
            heat = torch.tensor(maps[i][t]).view(1, 1, *grid)
            up = torch.nn.functional.interpolate(heat, size=(H, W), mode="nearest")[0, 0]
            axes[r][t + 1].imshow(up, cmap="jet", alpha=0.5)
            axes[r][t + 1].set_title(f"digit {t + 1}", fontsize=8)
    for ax in np.ravel(axes):
        ax.axis("off")
    return fig


@component(
    "probe.attention_maps",
    outputs=["summary", "plot"],
    bottleneck="B3",
    logged_before=["diag_mass", "diag_mass_uniform", "diag_ratio"],
    summary=[
        "n",
        "diag_mass",  # translation models
        "diag_mass_uniform",
        "diag_ratio",
        "gaze_on_digit",  # the captioner over digit strips
        "gaze_uniform",
        "gaze_corr",
        "converged",  # the training behind the checkpoint (probes/common.py trainings)
        "late_gain",
    ],
)
def attention_maps(
    ctx: Context,
    *,
    checkpoint: str,
    data: str | None = None,
    split: Literal["valid", "test"] = "test",
    show: list[Count] = [0, 1, 2],  # noqa: B006 - example indices to draw (< n_stat)
    n_stat: Size = 200,  # the first n_stat examples are averaged in the statistics
    window: Count = 1,  # diagonal band half-width (source positions)
) -> dict:
    """Draw attention heat maps for chosen examples and measure how diagonal they are.

    Works on encoder-decoders that return attention (Bahdanau, Luong, Transformer cross-attention)
    and on the Show-Attend-Tell captioner over digit strips (gaze over image columns).

    Returns:
        ``summary``: translation: ``diag_mass``, ``diag_mass_uniform``, ``diag_ratio``; captioner:
        ``gaze_on_digit`` (attention on the emitted digit's column band), ``gaze_uniform`` and
        ``gaze_corr`` (correlation of emission step with the attended column); ``plot`` (PNG).
    """
    info = load_info(checkpoint)
    task = Task(data or info["data"], "cpu")
    model = load_model(checkpoint)
    n = len(task.split(split)[0] if task.kind == "translation" else task.split(split)["y"])
    stat_idx = list(range(min(n_stat, n)))
    maps, inputs = teacher_forced(model, task, stat_idx, split)
    if any(m is None for m in maps) or not maps:
        raise P.ProbeError(f"{info['model']} returns no attention weights")
    summary: dict[str, Any] = {"n": len(maps)}
    plt = P.pyplot()
    shown = [i for i in show if i < len(maps)]  # drawn examples come from the statistics' batch
    if task.kind == "translation":
        summary |= _diagonal(maps, window)
        fig = _draw_alignments(plt, maps, inputs, shown, str(data or info["data"]))
    else:
        images, digits = inputs["images"], inputs["digits"]
        grid = region_columns(maps[0].shape[1], *images.shape[-2:])
        summary |= _gaze(maps, digits.shape[1], grid[1])
        fig = _draw_gaze(plt, maps, images, digits, shown, grid)
    summary = P.flat(summary)
    P.log_summary(ctx, summary)
    summary |= P.trainings(checkpoint)  # for the scorecard, not a metric
    return {"summary": summary, "plot": P.save_figure(ctx, fig, "attention_maps.png")}
