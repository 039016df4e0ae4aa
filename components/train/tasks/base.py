"""``Task``: one data folder read for training and evaluation; each task kind is a subclass.

``step_loss`` returns the loss and (correct, counted) for accuracy, so training and evaluation
share one scoring path. What a kind does not override is the tensor-folder default below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator

import torch
import torch.nn.functional as F
from torch import nn

from components.train import data as D
from components.train.errors import TrainError
from components.train.tasks.registry import choose


class Task:
    """One data folder read for training and evaluation, as its task kind reads it.

    ``Task(path, device)`` opens the folder as the kind its meta.json chooses (``registry.choose``),
    as ``pathlib.Path(...)`` gives a ``PosixPath``.
    """

    kind: ClassVar[str]  # the registry name, logged as ``task_kind``
    reads: ClassVar[str]  # meta.json's "kind" of the folders it reads: sequence, translation, images
    keys: ClassVar[tuple[str, ...]] = ()  # meta.json values that are model config fields
    merges_passes: ClassVar[bool] = False  # its micro-batches merge into fewer, wider passes (step.py)
    pads_when_compiled: ClassVar[bool] = False  # a compiled step pads its lengths to buckets (compiled.py)

    def __new__(cls, path: str | Path | None = None, device: str | None = None):
        if cls is not Task:  # a kind's class, named directly
            return super().__new__(cls)
        folder, splits = Path(path), {}

        def train() -> dict:
            if "train" not in splits:
                splits["train"] = D.load_split(folder, "train")
            return splits["train"]

        task = super().__new__(choose(D.load_meta(folder), train))
        task._splits = splits  # a split read to choose the kind is not read again
        return task

    def __init__(self, path: str | Path, device: str):
        self.path = Path(path)
        self.meta = D.load_meta(self.path)
        self.device = device
        self._splits: dict[str, Any] = getattr(self, "_splits", {})
        self.open()

    @classmethod
    def fits(cls, meta: dict[str, Any], train: Callable[[], dict] | None) -> bool:
        """Whether this kind reads a folder of its ``reads`` with this meta (``train`` loads its train split)."""
        return True

    @classmethod
    def config_from(cls, meta: dict[str, Any]) -> dict[str, Any]:
        """Model config values the data decides (vocab sizes, classes, pad id)."""
        # a size of 0 means "not this kind of input" (vocab_size 0 for float inputs, input_dim 0 for
        # tokens); an id of 0 (pad_id) is an id like any other, given as the data states it
        return {k: meta[k] for k in cls.keys if meta.get(k) is not None and (meta[k] != 0 or k.endswith("_id"))}

    def open(self) -> None:
        """Read what the kind needs up front (the train split)."""
        self.split("train")

    def split(self, name: str):
        """Return a split (tensors, or (src_ids, tgt_ids) for translation), read once."""
        if name not in self._splits:
            self._splits[name] = self.load(name)
        return self._splits[name]

    def load(self, name: str):
        return D.load_split(self.path, name)

    # -- batches -----------------------------------------------------------------------------------
    def train_batches(
        self, seed: int, batch_size: int, max_tokens: int | None, shift: int = 0
    ) -> Callable[[int], dict]:
        """Return step -> batch for the training split (images shifted by up to ``shift`` pixels)."""
        batches = D.TensorBatches(self.split("train"), batch_size, seed)
        if shift:
            raise TrainError(f"shift augments images; this is a {self.kind!r} task")
        return batches

    def eval_batches(self, split: str, batch_size: int) -> Iterator[dict]:
        """Yield the batches of a split in order."""
        yield from D.chunks(self.split(split), batch_size)

    def passes(self, micro_batches: list[dict], passes: int) -> list[dict]:
        """The step's micro-batches as ``passes`` forward/backward passes (as given, unless the kind merges them)."""
        return micro_batches

    def targets(self, batch: dict) -> int:
        """Count the scored targets of a (CPU) batch.

        Gradient accumulation weights each micro-batch by this share, so an accumulated step equals
        the step on the concatenated batch.
        """
        return len(batch["y"])

    def tokens(self, batch: dict) -> int:
        """Count the input tokens (or examples) in a batch, for throughput."""
        if "lengths" in batch:
            return int(batch["lengths"].sum())
        return len(batch["y"])

    def check_ids(self, model: nn.Module) -> None:
        """Check the data's ids against the model's vocabularies (on the CPU, once); nothing to check here."""

    # -- scoring -----------------------------------------------------------------------------------
    def on_device(self, batch: dict) -> dict:
        # translation source lengths stay on the CPU: packing and length checks read them there, and
        # reading a device tensor would wait for the GPU
        return {k: v if k == "src_lengths" else v.to(self.device, non_blocking=True) for k, v in batch.items()}

    def outputs(self, model: nn.Module, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (logits (..., C) or predictions (N,) for regress, aligned targets with -100 = ignore)."""
        raise NotImplementedError

    def step_loss(self, model: nn.Module, batch: dict, label_smoothing: float = 0.0):
        """Return (loss, correct, counted) for one batch."""
        return self.score(*self.outputs(model, batch), label_smoothing)

    def score(self, out: torch.Tensor, y: torch.Tensor, label_smoothing: float = 0.0):
        """Return (loss, correct, counted) for outputs and targets from ``outputs``."""
        return cross_entropy(out, y, label_smoothing)

    def all_right(self, out: torch.Tensor, y: torch.Tensor) -> tuple[int, int]:
        """(units with every output right, units scored) for ``acc_all``; (0, 0) where the kind has none."""
        return 0, 0

    def curve_points(self, net: nn.Module, n: int, device: str) -> dict[str, float]:
        """The kind's own ``valid/*`` curve points besides loss and accuracy (none here)."""
        return {}


def cross_entropy(logits: torch.Tensor, y: torch.Tensor, label_smoothing: float):
    """Cross-entropy over (..., C) logits with -100 as ignore; return (loss, correct, counted)."""
    flat = logits.reshape(-1, logits.size(-1)).float()
    target = y.reshape(-1)
    if flat.size(0) != target.size(0):
        raise TrainError(f"model output {tuple(logits.shape)} does not match targets {tuple(y.shape)}")
    loss = F.cross_entropy(flat, target, ignore_index=-100, label_smoothing=label_smoothing)
    # an ignored target (-100) never equals an argmax (0..C-1), so no mask is needed for correct
    correct = (flat.argmax(-1) == target).sum()
    return loss, correct, (target != -100).sum()  # tensors on the device: callers read them when they log


def logits(out):
    """Drop the attention weights encoder-decoders return next to the logits."""
    return out[0] if isinstance(out, (tuple, list)) else out
