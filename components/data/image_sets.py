"""Normalise, split and save image datasets in the ``images`` layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from components.data.io import save_splits, write_meta


def carve(x: np.ndarray, y: np.ndarray, fractions: dict[str, float], seed: int) -> dict[str, tuple]:
    """Split ``(x, y)`` into the named fractions for ``seed``; the rest is ``train``."""
    order = np.random.default_rng(seed).permutation(len(x))
    out, start = {}, 0
    for name, frac in fractions.items():
        idx = order[start : start + int(round(frac * len(x)))]
        out[name] = (x[idx], y[idx])
        start += len(idx)
    out["train"] = (x[order[start:]], y[order[start:]])
    return out


def write_images(ctx, splits: dict[str, tuple[np.ndarray, np.ndarray]], scale: float, meta: dict[str, Any]) -> Path:
    """Scale pixels to [0, 1], standardise with train mean/std, save ``(N, C, H, W)`` splits."""
    folder = ctx.path("dataset")
    train = splits["train"][0].astype(np.float32) / scale
    mean, std = float(train.mean()), float(train.std())
    tensors, counts = {}, {}
    for name, (x, y) in splits.items():
        x = torch.from_numpy(x.astype(np.float32) / scale)
        if x.dim() == 3:
            x = x[:, None]  # (N, 1, H, W)
        tensors[name] = {"x": (x - mean) / std, "y": torch.from_numpy(np.asarray(y, dtype=np.int64))}
        counts[name] = len(x)
    save_splits(folder, tensors)
    first = tensors["train"]["x"]
    meta = {
        "kind": "images",
        "image_size": list(first.shape[2:]),
        "channels": first.shape[1],
        "num_classes": 10,
        "mean": mean,
        "std": std,
        "counts": counts,
        "chance": 0.1,
        **meta,
    }
    write_meta(folder, meta)
    ctx.log_metrics({f"n_{k}": v for k, v in counts.items()})
    return folder
