"""Image task kinds (meta.json kind ``images``): one class per image, and a digit strip read as a
sequence of digits (images-to-sequence)."""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F

from components.train.tasks.base import Task, logits
from components.train.tasks.registry import register


def shift_images(x: torch.Tensor, k: int) -> torch.Tensor:
    """Translate each image by a random (dy, dx) in [-k, k], filling with its edge pixels.

    Draws from the global torch RNG, which checkpoints save, so a resumed run shifts alike.
    """
    if k <= 0:
        return x
    B, _, H, W = x.shape
    padded = F.pad(x, (k, k, k, k), mode="replicate")  # (B, C, H + 2k, W + 2k)
    off = torch.randint(0, 2 * k + 1, (B, 2))
    return torch.stack([padded[i, :, dy : dy + H, dx : dx + W] for i, (dy, dx) in enumerate(off.tolist())])


def is_strip(meta: dict[str, Any], train: Callable[[], dict] | None) -> bool:
    """A digit strip: meta.json says so, or (older folders) the train targets are (N, k)."""
    return bool(meta.get("digits_per_strip")) or (train is not None and train()["y"].dim() == 2)


class Images(Task):
    """Images ``x`` (N, C, H, W); training batches may be shifted by a few pixels (``shift``)."""

    reads = "images"
    keys = ("num_classes", "channels", "image_size")

    def train_batches(self, seed, batch_size, max_tokens, shift=0):
        batches = super().train_batches(seed, batch_size, max_tokens)
        if shift:
            return lambda step: {**(b := batches(step)), "x": shift_images(b["x"], shift)}
        return batches


@register
class ImageClassify(Images):
    """One class per image."""

    kind = "image_classify"

    @classmethod
    def fits(cls, meta, train):
        return not is_strip(meta, train)

    def outputs(self, model, batch):
        b = self.on_device(batch)
        return logits(model(b["x"])), b["y"]


@register
class ImageSeq(Images):
    """A strip of ``k`` digits read as a sequence: the caption between BOS and EOS, teacher-forced."""

    kind = "image_seq"

    @classmethod
    def fits(cls, meta, train):
        return is_strip(meta, train)

    @classmethod
    def config_from(cls, meta):
        found = super().config_from(meta)
        if meta.get("digits_per_strip"):
            found["tgt_vocab_size"] = meta["vocab_size"]  # digits + BOS + EOS for a caption decoder
        return found

    def outputs(self, model, batch):
        b = self.on_device(batch)
        bos, eos = int(self.meta["bos_id"]), int(self.meta["eos_id"])
        y = b["y"]
        col = lambda v: torch.full((y.size(0), 1), v, dtype=y.dtype, device=y.device)  # noqa: E731
        tgt = torch.cat([col(bos), y, col(eos)], dim=1)  # (B, k + 2)
        return logits(model(b["x"], None, tgt[:, :-1])), tgt[:, 1:]
