"""Task kinds: how to batch a data folder, call a model on a batch and score its output.

Kinds (from meta.json): sequence classify / tag / regress, translation, images classify and
images-to-sequence (digit strips). ``step_loss`` returns the loss and (correct, counted) for
accuracy, so training and evaluation share one scoring path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from components.train import data as D
from components.train.build import TrainError

# Hochreiter & Schmidhuber (1997): an adding-problem answer counts as right within 0.04
# (meta.json's "tolerance" overrides it).
REGRESS_TOLERANCE = 0.04


def task_kind(meta: dict[str, Any], train: dict[str, torch.Tensor] | None = None) -> str:
    """Return one of seq_classify, seq_tag, seq_regress, seq_generate, translation, image_classify, image_seq."""
    kind = meta.get("kind")
    if kind == "sequence":
        target = meta.get("target", "classify")
        if target not in ("classify", "tag", "regress", "generate"):
            raise TrainError(f"meta.json target {target!r} is not one of classify, tag, regress, generate")
        return f"seq_{target}"
    if kind == "translation":
        return "translation"
    if kind == "images":
        if meta.get("digits_per_strip") or (train is not None and train["y"].dim() == 2):
            return "image_seq"
        return "image_classify"
    raise TrainError(f"meta.json kind {kind!r} is not one of sequence, translation, images")


def _last(out: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """Pick each sequence's last valid step from (B, T, ...) outputs."""
    if lengths is None:
        return out[:, -1]
    idx = (lengths.to(out.device) - 1).clamp(min=0)
    return out[torch.arange(out.size(0), device=out.device), idx]


def _logits(out):
    """Drop the attention weights encoder-decoders return next to the logits."""
    return out[0] if isinstance(out, (tuple, list)) else out


class Task:
    """One data folder read for training and evaluation."""

    def __init__(self, path: str | Path, device: str):
        self.path = Path(path)
        self.meta = D.load_meta(self.path)
        self.device = device
        self._splits: dict[str, Any] = {}
        if self.meta.get("kind") == "translation":
            from components.data.io import load_translation

            self.dataset, _ = load_translation(self.path)
            self.kind = "translation"
            self.pad_id = int(self.meta["pad_id"])
        else:
            self.kind = "tensors"  # refined below, once the train split shows its target shape
            self.kind = task_kind(self.meta, self.split("train"))

    def split(self, name: str):
        """Return a split (tensors, or (src_ids, tgt_ids) lists for translation)."""
        if name not in self._splits:
            if self.kind == "translation":
                self._splits[name] = self._translation_split(name)
            else:
                self._splits[name] = D.load_split(self.path, name)
        return self._splits[name]

    def _translation_split(self, name: str):
        """Memory-mapped id arrays when the folder has them; else lists from the Arrow columns (older folders)."""
        from components.data.token_arrays import TokenArrays

        arrays = self.path / "arrays"
        if (arrays / f"{name}.src.ids.npy").exists():
            return TokenArrays.load(arrays, f"{name}.src"), TokenArrays.load(arrays, f"{name}.tgt")
        ds = self.dataset[name]
        return list(ds["src_ids"]), list(ds["tgt_ids"])

    # -- batches -----------------------------------------------------------------------------------
    def train_batches(
        self, seed: int, batch_size: int, max_tokens: int | None, shift: int = 0
    ) -> Callable[[int], dict]:
        """Return step -> batch for the training split (images shifted by up to ``shift`` pixels)."""
        if self.kind == "translation":
            return TranslationBatches(*self.split("train"), self.pad_id, seed, batch_size, max_tokens)
        batches = D.TensorBatches(self.split("train"), batch_size, seed)
        if shift and self.kind.startswith("image"):
            return lambda step: {**(b := batches(step)), "x": shift_images(b["x"], shift)}
        if shift:
            raise TrainError(f"shift augments images; this is a {self.kind!r} task")
        return batches

    def eval_batches(self, split: str, batch_size: int) -> Iterator[dict]:
        """Yield the batches of a split in order."""
        if self.kind == "translation":
            src, tgt = self.split(split)
            for start in range(0, len(src), batch_size):
                yield collate_rows(src, tgt, range(start, min(start + batch_size, len(src))), self.pad_id)
        else:
            yield from D.chunks(self.split(split), batch_size)

    # -- scoring -----------------------------------------------------------------------------------
    def outputs(self, model: nn.Module, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (logits (..., C) or predictions (N,) for regress, aligned targets with -100 = ignore)."""
        # translation source lengths stay on the CPU: packing and length checks read them there, and
        # reading a device tensor would wait for the GPU
        b = {k: v if k == "src_lengths" else v.to(self.device, non_blocking=True) for k, v in batch.items()}
        if self.kind.startswith("seq_"):
            lengths = b.get("lengths")
            x, y = b["x"], b["y"]
            if lengths is not None:
                t = int(batch["lengths"].max())  # from the CPU copy: no device sync
                x = x[:, :t]
                if self.kind == "seq_tag":
                    y = y[:, :t]
            if self.kind == "seq_generate":
                return self._generate(model, x), y
            out = _logits(model(x, lengths=lengths))
            if self.kind == "seq_regress":
                out = _last(out, lengths) if out.dim() == 3 else out
                return out.reshape(out.size(0), -1)[:, -1], y
            if self.kind == "seq_classify" and out.dim() == 3:
                out = _last(out, lengths)
            if self.kind == "seq_tag" and y.dim() == 3:  # several outputs per step (multi-lookup)
                out = out.reshape(*out.shape[:2], y.shape[2], -1)  # (B, T, J, C)
            return out, y
        if self.kind == "image_classify":
            return _logits(model(b["x"])), b["y"]
        if self.kind == "image_seq":
            bos, eos = int(self.meta["bos_id"]), int(self.meta["eos_id"])
            y = b["y"]
            col = lambda v: torch.full((y.size(0), 1), v, dtype=y.dtype, device=y.device)  # noqa: E731
            tgt = torch.cat([col(bos), y, col(eos)], dim=1)  # (B, k + 2)
            return _logits(model(b["x"], None, tgt[:, :-1])), tgt[:, 1:]
        if getattr(model, "projects_kept", False):
            # only scored positions reach the output layer; the indices come from the CPU copy (no sync)
            keep = (batch["tgt_out"].reshape(-1) != -100).nonzero().squeeze(1)
            y = b["tgt_out"].reshape(-1).index_select(0, keep.to(self.device, non_blocking=True))
            return _logits(model(b["src"], b["src_lengths"], b["tgt_in"], keep=keep)), y
        return _logits(model(b["src"], b["src_lengths"], b["tgt_in"])), b["tgt_out"]

    def _generate(self, model: nn.Module, x: torch.Tensor) -> torch.Tensor:
        """One-to-many: one input per example, ``out_len`` outputs (B, T, C)."""
        T = int(self.meta["out_len"])
        hint = (
            f"a generate task (one input, {T} outputs) needs a one-to-many model such as "
            f"lstm-generator-small returning (B, {T}, C)"
        )
        try:
            out = _logits(model(x))
        except (ValueError, RuntimeError, TypeError, IndexError) as e:
            raise TrainError(f"{hint}; this model failed on one input per example: {e}") from None
        if out.dim() != 3 or out.shape[1] != T:
            raise TrainError(f"{hint}; this model returned {tuple(out.shape)}")
        return out

    def step_loss(self, model: nn.Module, batch: dict, label_smoothing: float = 0.0):
        """Return (loss, correct, counted) for one batch."""
        return self.score(*self.outputs(model, batch), label_smoothing)

    def score(self, out: torch.Tensor, y: torch.Tensor, label_smoothing: float = 0.0):
        """Return (loss, correct, counted) for outputs and targets from ``outputs``."""
        if self.kind == "seq_regress":
            pred = out.float()
            loss = F.mse_loss(pred, y.float())
            tolerance = float(self.meta.get("tolerance", REGRESS_TOLERANCE))
            return loss, ((pred - y).abs() < tolerance).sum(), y.numel()
        return _ce(out, y, label_smoothing)

    def passes(self, micro_batches: list[dict], passes: int) -> list[dict]:
        """The step's micro-batches as ``passes`` forward/backward passes: translation batches are
        merged into that many padded batches (consecutive ones together); other kinds pass as given."""
        if self.kind != "translation" or passes >= len(micro_batches):
            return micro_batches
        groups = np.array_split(np.arange(len(micro_batches)), passes)
        return [merge_translation([micro_batches[i] for i in g], self.pad_id) for g in groups]

    def targets(self, batch: dict) -> int:
        """Count the scored targets of a (CPU) batch: real target tokens for translation, else examples.

        Gradient accumulation weights each micro-batch by this share, so an accumulated step equals
        the step on the concatenated batch.
        """
        if self.kind == "translation":
            return int((batch["tgt_out"] != -100).sum())
        return len(batch["y"])

    def check_ids(self, model: nn.Module) -> None:
        """Check every token id of the translation splits against the model's vocabularies (on the CPU, once)."""
        if self.kind != "translation":
            return
        cfg = getattr(model, "config", None)
        for side in ("src", "tgt"):
            vocab = getattr(cfg, f"{side}_vocab_size", None)
            if vocab is None:
                continue
            for name in ("train", "valid", "test"):
                top = max_id(self.split(name)[0 if side == "src" else 1])
                if top >= vocab:
                    raise TrainError(
                        f"{name} split: {side} id {top} is out of range for the model's "
                        f"{side}_vocab_size {vocab}; drop the vocab-size override or re-prepare the data"
                    )

    def tokens(self, batch: dict) -> int:
        """Count the input tokens (or examples) in a batch, for throughput."""
        if self.kind == "translation":
            return int(batch["src_lengths"].sum())
        if "lengths" in batch:
            return int(batch["lengths"].sum())
        return len(batch["y"])


def _ce(logits: torch.Tensor, y: torch.Tensor, label_smoothing: float):
    """Cross-entropy over (..., C) logits with -100 as ignore; return (loss, correct, counted)."""
    flat = logits.reshape(-1, logits.size(-1)).float()
    target = y.reshape(-1)
    if flat.size(0) != target.size(0):
        raise TrainError(f"model output {tuple(logits.shape)} does not match targets {tuple(y.shape)}")
    loss = F.cross_entropy(flat, target, ignore_index=-100, label_smoothing=label_smoothing)
    # an ignored target (-100) never equals an argmax (0..C-1), so no mask is needed for correct
    correct = (flat.argmax(-1) == target).sum()
    return loss, correct, (target != -100).sum()  # tensors on the device: callers read them when they log


def max_id(seqs) -> int:
    """Largest id in a split's sequences (-1 when empty)."""
    if hasattr(seqs, "max_id"):
        return seqs.max_id()
    return max((max(s) for s in seqs if len(s)), default=-1)


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


def collate_translation(src: list[list[int]], tgt: list[list[int]], pad_id: int) -> dict:
    """Pad a batch of id lists: src (B, S), tgt_in / tgt_out (B, T) with -100 after EOS."""
    from components.data.batching import pad

    return _shifted(*pad(src, pad_id), *pad(tgt, pad_id))


def collate_rows(src, tgt, idx, pad_id: int) -> dict:
    """Collate rows ``idx`` of id lists or ``TokenArrays`` (the arrays pad without a Python loop)."""
    if hasattr(src, "pad"):
        return _shifted(*src.pad(idx, pad_id), *tgt.pad(idx, pad_id))
    return collate_translation([src[i] for i in idx], [tgt[i] for i in idx], pad_id)


def merge_translation(batches: list[dict], pad_id: int) -> dict:
    """One padded batch holding the rows of ``batches`` (collated translation batches): what one
    forward pass over them computes equals their accumulated passes up to float rounding (padding is
    masked, and -100 targets are not scored)."""
    if len(batches) == 1:
        return batches[0]

    def cat(key: str, fill: int) -> torch.Tensor:
        width = max(b[key].size(1) for b in batches)
        return torch.cat([F.pad(b[key], (0, width - b[key].size(1)), value=fill) for b in batches])

    return {
        "src": cat("src", pad_id),
        "src_lengths": torch.cat([b["src_lengths"] for b in batches]),
        "tgt_in": cat("tgt_in", pad_id),
        "tgt_out": cat("tgt_out", -100),
    }


def _shifted(src_t, src_len, tgt_t, tgt_len) -> dict:
    tgt_in, tgt_out = tgt_t[:, :-1], tgt_t[:, 1:].clone()
    steps = torch.arange(tgt_out.size(1)).unsqueeze(0)
    tgt_out[steps >= (tgt_len - 1).unsqueeze(1)] = -100
    return {"src": src_t, "src_lengths": src_len, "tgt_in": tgt_in, "tgt_out": tgt_out}


def pair_lengths(src, tgt):
    """max(len(src_i), len(tgt_i)) per pair, the size a token budget counts."""
    if hasattr(src, "lengths"):
        return np.maximum(src.lengths, tgt.lengths)
    return [max(len(s), len(t)) for s, t in zip(src, tgt)]


class TranslationBatches:
    """Length-bucketed translation batches by global step (one shuffle per epoch).

    ``src`` and ``tgt`` are lists of id lists or ``TokenArrays``; both give the same batches.
    """

    def __init__(self, src, tgt, pad_id: int, seed: int, batch_size: int, max_tokens: int | None):
        self.src, self.tgt, self.pad_id = src, tgt, pad_id
        self.seed, self.batch_size, self.max_tokens = seed, batch_size, max_tokens
        self.lengths = pair_lengths(src, tgt)
        self.epoch, self.start, self.batches = -1, 0, []  # current epoch, its first step, its batches

    def _epoch(self, e: int) -> list[list[int]]:
        if self.max_tokens:
            from components.data.batching import bucket_batches

            batches = bucket_batches(self.lengths, self.max_tokens, self.seed * 1_000_003 + e, True)
        else:
            order = D.epoch_order(len(self.src), self.seed, e).tolist()
            n = max(1, len(order) // self.batch_size)
            batches = [order[i * self.batch_size : (i + 1) * self.batch_size] for i in range(n)]
        if not batches:
            raise TrainError("the translation training split produced no batches")
        return batches

    def __call__(self, step: int) -> dict:
        if step < self.start or self.epoch < 0:  # (re)start from epoch 0: batch counts vary by epoch
            self.epoch, self.start, self.batches = 0, 0, self._epoch(0)
        while step >= self.start + len(self.batches):
            self.start += len(self.batches)
            self.epoch += 1
            self.batches = self._epoch(self.epoch)
        return collate_rows(self.src, self.tgt, self.batches[step - self.start], self.pad_id)
