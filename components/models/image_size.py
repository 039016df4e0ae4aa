"""Image sizes given as one side or as [H, W] (data meta.json writes [H, W])."""

from __future__ import annotations

from components.models.registry import ModelError


def hw(size) -> tuple[int, int]:
    """Return (H, W) from an int or a pair."""
    if isinstance(size, int):
        return size, size
    if isinstance(size, (list, tuple)) and len(size) == 2 and all(isinstance(s, int) for s in size):
        return int(size[0]), int(size[1])
    raise ModelError(f"image_size must be an int or [H, W], got {size!r}")
