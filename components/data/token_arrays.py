"""Token id sequences stored compactly: one flat array of ids and one of offsets (memory-mapped .npy).

Sequence i is ``ids[offsets[i]:offsets[i + 1]]``. Ids are uint16 when the vocabulary fits (WMT's
37k BPE does): 4.5M pairs of ~30 tokens take ~0.5 GB instead of ~10 GB of Python lists, and a
trainer maps them in no time instead of building lists at every start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from components.data.errors import DataError


def id_dtype(vocab_size: int) -> np.dtype:
    """Return the smallest unsigned dtype that holds ids below ``vocab_size``."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


class TokenArrays:
    """Variable-length id sequences as (flat ids, offsets); batches are padded without Python loops."""

    def __init__(self, ids: np.ndarray, offsets: np.ndarray):
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(ids):
            raise DataError(f"offsets must run from 0 to len(ids)={len(ids)}, got {offsets[:1]}...{offsets[-1:]}")
        self.ids, self.offsets = ids, offsets
        self.lengths = np.diff(offsets).astype(np.int64)

    @classmethod
    def from_lists(cls, seqs: Sequence[Sequence[int]], vocab_size: int) -> "TokenArrays":
        """Pack lists of ids (as the list path holds them)."""
        lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        ids = np.fromiter((i for s in seqs for i in s), dtype=id_dtype(vocab_size), count=int(offsets[-1]))
        return cls(ids, offsets)

    @classmethod
    def from_arrow(cls, column, vocab_size: int) -> "TokenArrays":
        """Take a ``datasets`` / pyarrow list column's values and offsets as they are (no Python lists)."""
        import pyarrow as pa

        arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        offsets = np.asarray(arr.offsets).astype(np.int64)
        ids = np.asarray(arr.values.to_numpy(zero_copy_only=False)).astype(id_dtype(vocab_size), copy=False)
        return cls(ids[offsets[0] : offsets[-1]], offsets - offsets[0])

    def save(self, folder: Path, name: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / f"{name}.ids.npy", self.ids)
        np.save(folder / f"{name}.offsets.npy", self.offsets)

    @classmethod
    def load(cls, folder: Path, name: str, mmap: bool = True) -> "TokenArrays":
        mode = "r" if mmap else None
        return cls(
            np.load(folder / f"{name}.ids.npy", mmap_mode=mode), np.load(folder / f"{name}.offsets.npy", mmap_mode=mode)
        )

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i: int) -> list[int]:
        return self.ids[self.offsets[i] : self.offsets[i + 1]].tolist()

    def max_id(self) -> int:
        return int(self.ids.max()) if len(self.ids) else -1

    def pad(self, idx, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Return the sequences ``idx`` right-padded (B, T) as int64, and their lengths (B,)."""
        idx = np.asarray(idx, dtype=np.int64)
        lengths = self.lengths[idx]
        T = int(lengths.max()) if len(idx) else 0
        pos = np.arange(T)[None, :]
        real = pos < lengths[:, None]  # (B, T)
        out = np.full((len(idx), T), pad_id, dtype=np.int64)
        out[real] = self.ids[(self.offsets[idx][:, None] + pos)[real]]
        return torch.from_numpy(out), torch.from_numpy(lengths)
