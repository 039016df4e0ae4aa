"""Read image sets from disk: MNIST IDX (plain or gzipped) and CSV rows of pixels."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Literal

import numpy as np

from components.data.errors import DataError
from components.data.text import decode, read_bytes, resolve

_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(file: Path) -> np.ndarray:
    """Read an IDX file (LeCun's MNIST format) into an array of its declared shape."""
    raw = read_bytes(file)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise DataError(
            f"{file}: not an IDX file (magic bytes {raw[:4].hex()}): expected MNIST "
            f"*-idx3-ubyte / *-idx1-ubyte files, optionally gzipped"
        )
    ndim = raw[3]
    dims = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_IDX_TYPES[raw[2]])
    offset = 4 + 4 * ndim
    expected = offset + math.prod(dims) * dtype.itemsize
    if len(raw) != expected:
        raise DataError(
            f"{file}: header says shape {dims} ({expected} bytes) but the file has {len(raw)} bytes: "
            f"the file is truncated or corrupt, copy it again"
        )
    return np.frombuffer(raw, dtype=dtype, offset=offset).reshape(dims)


def labels_file_for(images: Path) -> Path:
    """The MNIST labels file next to an images file (``*-images-idx3-ubyte`` -> ``*-labels-idx1-ubyte``)."""
    if "images-idx3" not in images.name:
        raise DataError(f"{images}: cannot tell its labels file; IDX image files are named *-images-idx3-ubyte[.gz]")
    return images.with_name(images.name.replace("images-idx3", "labels-idx1"))


def read_mnist_idx(images: Path) -> tuple[np.ndarray, np.ndarray]:
    """Read MNIST images ``(N, 28, 28)`` uint8 and their labels ``(N,)`` from the IDX pair."""
    labels_path = labels_file_for(images)
    x = read_idx(images)
    y = read_idx(resolve(str(labels_path)))
    if x.ndim != 3 or y.ndim != 1:
        raise DataError(
            f"{images} / {labels_path}: expected images (N, H, W) and labels (N,), got {x.shape} and {y.shape}"
        )
    if len(x) != len(y):
        raise DataError(f"{images} has {len(x)} images but {labels_path} has {len(y)} labels: pair matching files")
    return x, y.astype(np.int64)


def read_csv_images(file: Path, label_column: Literal["first", "last"] = "last") -> tuple[np.ndarray, np.ndarray]:
    """Read CSV rows of square-image pixels plus a label column (a header row is skipped)."""
    import pandas as pd

    text = decode(file, read_bytes(file), "utf-8")
    first = text.split("\n", 1)[0].split(",")
    header = 0 if first and not first[0].strip().lstrip("-").replace(".", "", 1).isdigit() else None
    try:
        table = pd.read_csv(io.StringIO(text), header=header).to_numpy()
    except ValueError as e:
        raise DataError(f"{file}: not a CSV of numbers ({e})") from None
    if not np.issubdtype(table.dtype, np.number):
        raise DataError(f"{file}: found non-numeric cells: expected pixel values and an integer label per row")
    labels = table[:, 0] if label_column == "first" else table[:, -1]
    pixels = table[:, 1:] if label_column == "first" else table[:, :-1]
    side = math.isqrt(pixels.shape[1])
    if side * side != pixels.shape[1]:
        raise DataError(
            f"{file}: rows have {pixels.shape[1]} pixels, not a square image; "
            f"is the label column {label_column!r} right?"
        )
    return pixels.reshape(-1, side, side).astype(np.uint8), labels.astype(np.int64)
