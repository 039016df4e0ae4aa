"""Multi-digit strips: k digit images side by side, labelled with the digit sequence."""

from __future__ import annotations

import torch

from components.bounds import Count, Size
from components.data.errors import DataError
from components.data.io import SPLITS, load_meta, load_split, save_splits, write_meta
from components.data.tasks import check_counts, split_rng
from components.registry import component


@component("data.digit_strips", outputs=["dataset"], bottleneck="B3")
def digit_strips(
    ctx,
    *,
    images: str,
    digits: Size = 3,
    n_train: Count = 5000,
    n_valid: Count = 500,
    n_test: Count = 1000,
    seed: Count = 0,
) -> dict:
    """Glue ``digits`` random images of one split side by side; the label is their digit sequence.

    Args:
        images: an images dataset folder (``data.digits`` or ``data.mnist`` output); strips of a
            split only use that split's images.
        digits: digits per strip (k).
        n_train, n_valid, n_test: strips per split.
        seed: sampling seed.

    Returns:
        ``dataset``: folder with ``x (N, C, H, k * W)``, ``y (N, k)``, ``index (N, k)`` (source
        images) and ``meta.json`` with ``bos_id`` 10 and ``eos_id`` 11 for a caption decoder.
    """
    src_meta = load_meta(images)
    if src_meta.get("kind") != "images":
        raise DataError(f"{images} holds a {src_meta.get('kind')!r} dataset: digit strips need an images dataset")
    if digits < 1:
        raise DataError(f"digits must be >= 1, got {digits}")
    check_counts(n_train=n_train, n_valid=n_valid, n_test=n_test)
    counts = {"train": n_train, "valid": n_valid, "test": n_test}
    out = {}
    for split in SPLITS:
        src = load_split(images, split)
        g = torch.Generator().manual_seed(int(split_rng(seed, split).integers(2**62)))
        index = torch.randint(len(src["x"]), (counts[split], digits), generator=g)  # (N, k)
        x = src["x"][index]  # (N, k, C, H, W)
        n, k, c, h, w = x.shape
        out[split] = {"x": x.permute(0, 2, 3, 1, 4).reshape(n, c, h, k * w), "y": src["y"][index], "index": index}
    folder = ctx.path("dataset")
    save_splits(folder, out)
    h, w = src_meta["image_size"]
    write_meta(
        folder,
        {
            "kind": "images",
            "image_size": [h, digits * w],
            "channels": src_meta["channels"],
            "num_classes": 10,
            "digits_per_strip": digits,
            "bos_id": 10,
            "eos_id": 11,
            "vocab_size": 12,
            "mean": src_meta["mean"],
            "std": src_meta["std"],
            "counts": counts,
            "chance": 0.1,
            "seed": seed,
            "source": str(images),
            "label_rule": "y[:, j] = label of the image in columns j*W..(j+1)*W",
        },
    )
    ctx.log_metrics({f"n_{k}": v for k, v in counts.items()})
    return {"dataset": str(folder)}
