"""An input example and the model's output on it, for the model's signature in MLflow."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def io_example(net: nn.Module, batch: dict, n: int = 2) -> tuple[np.ndarray, np.ndarray] | None:
    """``n`` inputs of ``batch`` and the model's outputs, when the model takes one tensor (what the
    MLflow PyTorch flavour passes at inference); None for models that need more (translation)."""
    x = batch.get("x")
    if not isinstance(x, torch.Tensor):
        return None
    x = x[:n].detach().cpu()
    was_training = net.training
    net.eval()
    try:
        with torch.no_grad():
            out = net(x)
    except (RuntimeError, TypeError, ValueError, IndexError):
        return None
    finally:
        net.train(was_training)
    out = out[0] if isinstance(out, (tuple, list)) else out
    return (x.numpy(), out.detach().cpu().numpy()) if isinstance(out, torch.Tensor) else None
