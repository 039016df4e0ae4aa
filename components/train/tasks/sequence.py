"""Sequence task kinds (meta.json kind ``sequence``), one per ``target``: classify (many-to-one),
tag (many-to-many), regress (the adding problem) and generate (one-to-many)."""

from __future__ import annotations

from typing import Any, Callable, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from components.train.errors import TrainError
from components.train.tasks.base import Task, logits
from components.train.tasks.registry import register

# Hochreiter & Schmidhuber (1997): an adding-problem answer counts as right within 0.04
# (meta.json's "tolerance" overrides it).
REGRESS_TOLERANCE = 0.04


def last_step(out: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """Pick each sequence's last valid step from (B, T, ...) outputs."""
    if lengths is None:
        return out[:, -1]
    idx = (lengths.to(out.device) - 1).clamp(min=0)
    return out[torch.arange(out.size(0), device=out.device), idx]


class Sequence(Task):
    """Token (or real-valued) sequences ``x`` with ``lengths``, targets ``y`` as ``target`` says."""

    reads = "sequence"
    target: ClassVar[str]  # meta.json's "target" (classify when absent)
    keys = ("vocab_size", "input_dim", "num_classes", "pad_id")

    @classmethod
    def fits(cls, meta: dict[str, Any], train: Callable[[], dict] | None) -> bool:
        return meta.get("target", "classify") == cls.target

    @classmethod
    def config_from(cls, meta: dict[str, Any]) -> dict[str, Any]:
        found = super().config_from(meta)
        if meta.get("input_dim"):
            found["vocab_size"] = 0  # real-valued inputs (adding problem): no embedding table
        if meta.get("num_outputs", 1) > 1 and "num_classes" in found:
            found["num_classes"] *= meta["num_outputs"]  # one C-way softmax per output: (B, T, J * C)
        return found

    def outputs(self, model: nn.Module, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        b = self.on_device(batch)
        x, y, lengths = b["x"], b["y"], b.get("lengths")
        if lengths is not None:
            t = int(batch["lengths"].max())  # from the CPU copy: no device sync
            x, y = x[:, :t], self.trim(y, t)
        return self.forward(model, x, y, lengths)

    def trim(self, y: torch.Tensor, t: int) -> torch.Tensor:
        """The targets of a batch whose inputs were cut to its longest sequence, ``t`` steps."""
        return y

    def forward(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor, lengths: torch.Tensor | None):
        """(outputs, targets) of the model on inputs ``x``, as ``outputs`` returns them."""
        raise NotImplementedError


@register
class SeqClassify(Sequence):
    """Many-to-one: one class per sequence, from its last valid step."""

    kind, target = "seq_classify", "classify"

    def forward(self, model, x, y, lengths):
        out = logits(model(x, lengths=lengths))
        return (last_step(out, lengths) if out.dim() == 3 else out), y


@register
class SeqTag(Sequence):
    """Many-to-many: a class per step (-100 = unscored), or several per step (multi-lookup, y (B, T, J))."""

    kind, target = "seq_tag", "tag"

    def trim(self, y, t):
        return y[:, :t]

    def forward(self, model, x, y, lengths):
        out = logits(model(x, lengths=lengths))
        if y.dim() == 3:  # several outputs per step (multi-lookup)
            out = out.reshape(*out.shape[:2], y.shape[2], -1)  # (B, T, J, C)
        return out, y

    def all_right(self, out, y):
        """Steps where every scored output is right (multi-lookup only)."""
        if y.dim() != 3:
            return 0, 0
        right = (out.argmax(-1) == y) | (y == -100)  # (B, T, J)
        scored = (y != -100).any(-1)  # (B, T)
        return int((right.all(-1) & scored).sum()), int(scored.sum())


@register
class SeqRegress(Sequence):
    """One real number per sequence (the adding problem), right within a tolerance."""

    kind, target = "seq_regress", "regress"

    @classmethod
    def config_from(cls, meta):
        return super().config_from(meta) | {"num_classes": 1}

    def forward(self, model, x, y, lengths):
        out = logits(model(x, lengths=lengths))
        out = last_step(out, lengths) if out.dim() == 3 else out
        return out.reshape(out.size(0), -1)[:, -1], y

    def score(self, out, y, label_smoothing=0.0):
        pred = out.float()
        loss = F.mse_loss(pred, y.float())
        tolerance = float(self.meta.get("tolerance", REGRESS_TOLERANCE))
        return loss, ((pred - y).abs() < tolerance).sum(), y.numel()


@register
class SeqGenerate(Sequence):
    """One-to-many: one input per example, ``out_len`` outputs; a sequence is right when every step is."""

    kind, target = "seq_generate", "generate"

    @classmethod
    def config_from(cls, meta):
        return super().config_from(meta) | {"out_len": meta["out_len"]}  # the generator unrolls this many steps

    def forward(self, model, x, y, lengths):
        T = int(self.meta["out_len"])
        hint = (
            f"a generate task (one input, {T} outputs) needs a one-to-many model such as "
            f"lstm-generator-small returning (B, {T}, C)"
        )
        try:
            out = logits(model(x))
        except (ValueError, RuntimeError, TypeError, IndexError) as e:
            raise TrainError(f"{hint}; this model failed on one input per example: {e}") from None
        if out.dim() != 3 or out.shape[1] != T:
            raise TrainError(f"{hint}; this model returned {tuple(out.shape)}")
        return out, y

    def all_right(self, out, y):
        return int((out.argmax(-1) == y).all(-1).sum()), y.shape[0]
