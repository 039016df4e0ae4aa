"""Cut images into non-overlapping patches (ViT) and put them back."""

from __future__ import annotations

import torch

from components.data.errors import DataError


def _check_divides(h: int, w: int, patch: int) -> None:
    if patch < 1 or h % patch or w % patch:
        fits = [p for p in range(1, min(h, w) + 1) if h % p == 0 and w % p == 0]
        raise DataError(f"patch size {patch} does not divide the image size {h}x{w}: use one of {fits}")


def patchify(x: torch.Tensor, patch: int) -> torch.Tensor:
    """Cut ``(N, C, H, W)`` images into ``(N, num_patches, C * patch * patch)`` row-major patches.

    A patch vector is laid out ``(C, patch, patch)``, the layout of a Conv2d patch-embedding weight.
    """
    if x.dim() != 4:
        raise DataError(f"patchify expects images (N, C, H, W), got shape {tuple(x.shape)}")
    n, c, h, w = x.shape
    _check_divides(h, w, patch)
    gh, gw = h // patch, w // patch
    x = x.reshape(n, c, gh, patch, gw, patch)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (N, gh, gw, C, p, p)
    return x.reshape(n, gh * gw, c * patch * patch)


def unpatchify(patches: torch.Tensor, patch: int, image_size: tuple[int, int] | list[int]) -> torch.Tensor:
    """Invert ``patchify``: ``(N, num_patches, C * patch * patch)`` back to ``(N, C, H, W)``."""
    h, w = int(image_size[0]), int(image_size[1])
    _check_divides(h, w, patch)
    n, p, d = patches.shape
    gh, gw = h // patch, w // patch
    if p != gh * gw or d % (patch * patch):
        raise DataError(
            f"patches of shape {tuple(patches.shape)} do not fit a {h}x{w} image with patch {patch}: "
            f"expected {gh * gw} patches of C*{patch * patch} values"
        )
    c = d // (patch * patch)
    x = patches.reshape(n, gh, gw, c, patch, patch).permute(0, 3, 1, 4, 2, 5)  # (N, C, gh, p, gw, p)
    return x.reshape(n, c, h, w)
