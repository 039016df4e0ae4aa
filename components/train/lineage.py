"""Describe the dataset a training run reads, for lineage: name, content digest, folder, sizes."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any


def digest(folder: Path) -> str:
    """Hash every file of a data folder (relative names and bytes), so equal data has one digest."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()[:16]


def describe(data: str | Path, meta: dict[str, Any]) -> dict[str, Any]:
    """Arguments for ``ctx.log_dataset`` from a prepared data folder and its meta.json."""
    folder = Path(data)
    name = meta.get("task") or meta.get("dataset")  # a generator's task, or the hub dataset
    if not name and meta.get("files"):  # local parallel files: the folder they sit in
        name = Path(str(meta["files"]["train"][0][0])).parent.name
    name = str(name or meta.get("kind") or folder.name)
    if meta.get("kind") == "translation":
        name += f" {meta.get('src_lang')}-{meta.get('tgt_lang')}"
    sizes = {str(k): int(v) for k, v in (meta.get("counts") or {}).items()}
    return {"name": name, "source": str(folder), "digest": digest(folder), "sizes": sizes}
