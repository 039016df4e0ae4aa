"""Cut an images dataset into patch sequences, readable by any sequence model."""

from __future__ import annotations

from components.bounds import Size
from components.data.errors import DataError
from components.data.images import patchify
from components.data.io import SPLITS, load_meta, load_split, save_splits, write_meta
from components.registry import component


@component("data.patches", outputs=["dataset"], bottleneck="B4")
def patches(ctx, *, images: str, patch: Size = 4) -> dict:
    """Turn every image of an images dataset into ``(num_patches, C * patch * patch)`` vectors.

    Args:
        images: a single-label images dataset folder (``data.digits``, ``data.mnist``).
        patch: patch side in pixels; must divide the image height and width.

    Returns:
        ``dataset``: a ``sequence`` dataset with float inputs ``x (N, P, D)``, the source labels,
        and the patch grid in ``meta.json``.
    """
    src_meta = load_meta(images)
    if src_meta.get("kind") != "images":
        raise DataError(f"{images} holds a {src_meta.get('kind')!r} dataset: patches need an images dataset")
    if src_meta.get("digits_per_strip"):
        raise DataError(
            f"{images} holds digit strips (a label sequence per image): patch sequences carry one "
            f"label; give strips to an image captioner, or patch data.digits / data.mnist output"
        )
    h, w = src_meta["image_size"]
    if patch < 1 or h % patch or w % patch:
        fits = [p for p in range(1, min(h, w) + 1) if h % p == 0 and w % p == 0]
        raise DataError(f"patch {patch} does not divide the {h}x{w} images of {images}: use one of {fits}")
    out = {}
    for split in SPLITS:
        data = load_split(images, split)
        x = patchify(data["x"], patch)  # (N, P, C * patch * patch)
        out[split] = {"x": x, "y": data["y"], "lengths": x.new_full((len(x),), x.shape[1]).long()}
    folder = ctx.path("dataset")
    save_splits(folder, out)
    num_patches, patch_dim = out["train"]["x"].shape[1:]
    write_meta(
        folder,
        {
            "kind": "sequence",
            "task": "patches",
            "target": "classify",
            "vocab_size": 0,
            "input_dim": patch_dim,
            "pad_id": 0,
            "num_classes": src_meta["num_classes"],
            "seq_len": num_patches,
            "chance": src_meta.get("chance", 1 / src_meta["num_classes"]),
            "patch": patch,
            "grid": [h // patch, w // patch],
            "num_patches": num_patches,
            "patch_dim": patch_dim,
            "image_size": [h, w],
            "channels": src_meta["channels"],
            "mean": src_meta["mean"],
            "std": src_meta["std"],
            "counts": {s: len(out[s]["x"]) for s in SPLITS},
            "source": str(images),
            "label_rule": "y as in the source images; patches are row-major, each laid out (C, patch, patch)",
        },
    )
    return {"dataset": str(folder)}
