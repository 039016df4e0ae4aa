"""Numeric precision per device and model family: TF32 matmuls, bf16 autocast where it is safe."""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

import torch
from torch import nn


def is_recurrent(model: nn.Module) -> bool:
    """True when the model runs RNN layers or cells (cuDNN RNN kernels)."""
    return any(isinstance(m, (nn.RNNBase, nn.RNNCellBase)) for m in model.modules())


def choose(model: nn.Module, device: str, bf16: bool) -> str:
    """Return the precision a run uses: ``bf16``, ``fp32`` or ``fp32+tf32``.

    On CUDA, matmuls use TF32 and ``bf16`` autocasts only models without recurrent layers: cuDNN
    RNNs under autocast run in reduced precision with no loss scaling, so recurrent models train
    in fp32 with TF32 instead (the matrix units still do the work). On CPU ``bf16`` is honoured
    for every model, as before.
    """
    cuda = device.startswith("cuda")
    if bf16 and not (cuda and is_recurrent(model)):
        return "bf16"
    return "fp32+tf32" if cuda else "fp32"


def autocast(device: str, precision: str):
    """Return the autocast context for ``precision`` (a no-op for fp32)."""
    if precision == "bf16":
        return torch.autocast(device.split(":")[0], dtype=torch.bfloat16)
    return nullcontext()


@contextmanager
def tf32(on: bool):
    """Allow TF32 in matmuls and cuDNN inside the block; restore the global flags after."""
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    if on:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before
