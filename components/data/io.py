"""Read and write prepared datasets: ``meta.json``, tensor splits, translation folders.

Every data step returns a folder with ``meta.json`` (see docs/contracts.md, "Data on disk").
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from components.data.errors import DataError

SPLITS = ("train", "valid", "test")


def _folder(path: str | Path) -> Path:
    folder = Path(path)
    if not (folder / "meta.json").is_file():
        raise DataError(f"{folder} is not a prepared dataset (no meta.json): pass the folder a data step returned")
    return folder


def load_meta(path: str | Path) -> dict[str, Any]:
    """Return the ``meta.json`` of a prepared dataset folder."""
    return json.loads((_folder(path) / "meta.json").read_text())


def write_meta(folder: str | Path, meta: dict[str, Any]) -> Path:
    """Write ``meta.json`` into ``folder`` (created if needed)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "meta.json"
    out.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return out


def load_split(path: str | Path, split: str) -> dict[str, torch.Tensor]:
    """Load one split (``train``, ``valid`` or ``test``) of a sequence or images dataset."""
    folder = _folder(path)
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")
    file = folder / f"{split}.pt"
    if not file.is_file():
        kind = load_meta(folder).get("kind")
        raise DataError(
            f"{file} not found: a {kind!r} dataset keeps its splits elsewhere (translation: use load_translation)"
        )
    return torch.load(file, weights_only=True)


def save_splits(folder: str | Path, splits: dict[str, dict[str, torch.Tensor]]) -> None:
    """Save each split's tensors as ``<split>.pt`` in ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, tensors in splits.items():
        torch.save({k: v.contiguous() for k, v in tensors.items()}, folder / f"{name}.pt")


def load_translation(path: str | Path):
    """Load a translation dataset: ``(DatasetDict with train/valid/test, meta)``."""
    from datasets import load_from_disk

    folder = _folder(path)
    meta = load_meta(folder)
    if meta.get("kind") != "translation":
        raise DataError(f"{folder} holds a {meta.get('kind')!r} dataset, not a translation dataset")
    return load_from_disk(str(folder / "data")), meta


@lru_cache(maxsize=16)
def load_tokenizer(path: str | Path, side: str = "tgt"):
    """Load the tokenizer of a translation dataset for ``side`` (``src`` or ``tgt``)."""
    from tokenizers import Tokenizer

    if side not in ("src", "tgt"):
        raise DataError(f"side must be 'src' or 'tgt', got {side!r}")
    folder = _folder(path)
    joint = folder / "tokenizer.json"
    file = joint if joint.is_file() else folder / f"tokenizer.{side}.json"
    if not file.is_file():
        raise DataError(
            f"{folder} has no tokenizer.json or tokenizer.{side}.json: prepare it with a translation data step"
        )
    return Tokenizer.from_file(str(file))


def detokenize(path: str | Path, ids_batch, side: str = "tgt") -> list[str]:
    """Turn token ids back into raw text, stopping at EOS and dropping BOS and padding."""
    meta = load_meta(path)
    tok = load_tokenizer(str(Path(path)), side)
    bos, eos, pad = meta["bos_id"], meta["eos_id"], meta["pad_id"]
    if isinstance(ids_batch, torch.Tensor):
        ids_batch = ids_batch.tolist()
    texts = []
    for ids in ids_batch:
        ids = [int(i) for i in ids]
        if eos in ids:
            ids = ids[: ids.index(eos)]
        texts.append(tok.decode([i for i in ids if i not in (bos, pad)], skip_special_tokens=True))
    return texts
