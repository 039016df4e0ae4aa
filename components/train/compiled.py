"""``train.model``'s ``compile`` option: the step's forward + loss through ``torch.compile``.

``compile: null`` (the default) compiles where it pays: on a CUDA device, for the teacher-forced
translation models whose eager step is many small kernels (RNNsearch/RNNencdec and seq2seq/Luong:
``reduce-overhead``, CUDA graphs) or large fusable ones (the Transformer: ``default``); never on a
CPU, so every CPU run is the eager run it was. ``false`` is eager; ``true`` / ``"default"``,
``"reduce-overhead"`` and ``"max-autotune"`` are ``torch.compile``'s modes (CUDA graphs need CUDA:
on a CPU those modes compile without them).

What is compiled is the part called once per micro-batch: the model's forward and the loss. So that
lengths repeat (a graph per bucket, not per length), translation batches are padded up to a multiple of
``BUCKET`` positions (source with the pad id, target input with the pad id, targets with -100): the
padding is masked and its targets are not scored, so the loss and gradients equal the eager step's
up to float rounding. The compiled model projects every target position (not only the scored ones,
as eager ``projects_kept`` models do), which keeps the shapes static; the ignored rows add nothing to
the loss. At most ``RECOMPILES`` batch shapes are compiled in a run; a new shape after that runs
eager, with one warning. When compiling fails, the run goes on eager with a warning.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from components.train.errors import TrainError

MODES = ("default", "reduce-overhead", "max-autotune")
BUCKET = 8  # translation lengths are padded up to a multiple of this when compiling
RECOMPILES = 64  # batch shapes compiled before new ones run eager (and torch's recompile_limit)


def check_value(value: Any) -> None:
    """Raise TrainError unless ``value`` is a ``compile`` setting: null, true, false or a mode."""
    if value is None or isinstance(value, bool) or value in MODES:
        return
    raise TrainError(
        f"compile: {value!r} is not a setting; use null (compile where it pays: CUDA, recurrent "
        f"decoders and the Transformer), false, true or one of {', '.join(MODES)}"
    )


def family(model: nn.Module) -> str | None:
    """``recurrent`` (RNNsearch/RNNencdec, seq2seq/Luong), ``transformer``, or None for other models."""
    from components.models.rnnsearch import RNNSearch
    from components.models.seq2seq import Seq2Seq
    from components.models.transformer import Transformer

    model = getattr(model, "module", model)  # the model inside DistributedDataParallel
    if isinstance(model, (RNNSearch, Seq2Seq)):
        return "recurrent"
    if isinstance(model, Transformer):
        return "transformer"
    return None


def resolve(value: bool | str | None, device: str, model: nn.Module) -> str | None:
    """The ``torch.compile`` mode a run uses, or None for eager.

    None: on CUDA, ``reduce-overhead`` for the recurrent decoders (their step is thousands of small
    kernels: a CUDA graph replays them with one launch) and ``default`` for the Transformer (fused
    kernels; its step is large enough that launches matter less, and a graph per shape would hold
    that much activation memory); eager for every other model and on every CPU.
    """
    check_value(value)
    if value is None:
        if not device.startswith("cuda"):
            return None
        return {"recurrent": "reduce-overhead", "transformer": "default"}.get(family(model) or "")
    if value is False:
        return None
    return "default" if value is True else value


def pad_to_bucket(batch: dict, pad_id: int, multiple: int | None = None) -> dict:
    """A collated translation batch with its source and target lengths padded up to ``multiple``
    (``BUCKET`` when None).

    The lengths (``src_lengths``) are unchanged, so the models mask the new positions, and the new
    targets are -100, which the loss ignores.
    """

    multiple = multiple or BUCKET

    def pad(t: torch.Tensor, fill: int) -> torch.Tensor:
        extra = -t.size(1) % multiple
        return F.pad(t, (0, extra), value=fill) if extra else t

    return {
        **batch,
        "src": pad(batch["src"], pad_id),
        "tgt_in": pad(batch["tgt_in"], pad_id),
        "tgt_out": pad(batch["tgt_out"], -100),
    }


class FullProjection(nn.Module):
    """The model, projecting every target position (static shapes), with the same parameters."""

    projects_kept = False

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, *args, **kwargs):
        return self.net(*args, **kwargs)


class CompiledTask:
    """The task as ``StepPasses`` sees it, with ``step_loss`` compiled; everything else is the task's."""

    def __init__(self, task, net: nn.Module, mode: str, log: logging.Logger):
        self.task, self.mode, self.log = task, mode, log
        kept = getattr(getattr(net, "module", net), "projects_kept", False)
        self.model = FullProjection(net) if kept else net
        self.shapes: set[tuple] = set()
        self.cuda_graphs = mode == "reduce-overhead" and next(net.parameters()).is_cuda
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILES)
        self.compiled = torch.compile(self._forward_loss, mode=None if mode == "default" else mode)

    def __getattr__(self, name: str):
        return getattr(self.task, name)

    def _forward_loss(self, batch: dict, label_smoothing: float):
        return self.task.step_loss(self.model, batch, label_smoothing)

    def step_loss(self, model: nn.Module, batch: dict, label_smoothing: float = 0.0):
        """(loss, correct, counted) of one micro-batch, compiled; ``model`` is the one compiled."""
        if self.task.pads_when_compiled:
            batch = pad_to_bucket(batch, self.task.pad_id)
        shape = tuple(tuple(v.shape) for v in batch.values() if isinstance(v, torch.Tensor))
        if self.compiled is None or (shape not in self.shapes and len(self.shapes) >= RECOMPILES):
            if self.compiled is not None and len(self.shapes) == RECOMPILES:
                self.shapes.add(None)  # warn once
                self.log.warning("compile: %d batch shapes compiled; new shapes run eager", RECOMPILES)
            return self.task.step_loss(self.model, batch, label_smoothing)
        self.shapes.add(shape)
        try:
            if self.cuda_graphs:  # the previous step's graph outputs are no longer read
                torch.compiler.cudagraph_mark_step_begin()
            loss, correct, counted = self.compiled(batch, label_smoothing)
        except torch._dynamo.exc.TorchDynamoException as e:
            cause = getattr(e, "inner_exception", None) or e  # the backend's own error, not dynamo's wrapper
            first = (str(cause).splitlines() or [""])[0]
            self.log.warning(
                "compile (%s) failed, training eager from here: %s: %s", self.mode, type(cause).__name__, first
            )
            self.compiled = None
            return self.task.step_loss(self.model, batch, label_smoothing)
        # CUDA-graph outputs live in memory the next replay overwrites: the caller keeps copies
        return loss.clone(), torch.as_tensor(correct).clone(), torch.as_tensor(counted).clone()


def for_step(ctx, value, net: nn.Module, task):
    """The model and task ``StepPasses`` calls: ``net`` and ``task`` as given when eager, else the
    task with its forward + loss compiled in the mode ``value`` resolves to on ``ctx.device``."""
    mode = resolve(value, ctx.device, net)
    if mode is None:
        return net, task
    step = CompiledTask(task, net, mode, ctx.log)
    ctx.log.info(
        "compile: forward + loss with torch.compile (mode %s%s)%s",
        mode,
        ", CUDA graphs" if step.cuda_graphs else "",
        f"; lengths padded to multiples of {BUCKET}" if task.pads_when_compiled else "",
    )
    return step.model, step
