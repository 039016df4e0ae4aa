"""Checkpoints: a resumable training state and a model file probes load with ``load_model``.

Both are ``torch.save`` dicts written atomically (temp file, then rename), so a run killed
mid-write keeps its previous checkpoint. A model file holds the variant name and the overrides
it was built with, so ``load_model`` rebuilds the same architecture before loading weights.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from components.train.build import TrainError, build_model

FORMAT = "bottlenecks.checkpoint/1"


def atomic_save(obj: Any, path: Path) -> None:
    """Write ``obj`` to ``path`` so readers never see a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def rng_state() -> dict[str, Any]:
    """Capture python, numpy and torch (CPU and CUDA) random states."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``rng_state`` captured."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def model_record(model: nn.Module, name: str, overrides: dict[str, Any], **info: Any) -> dict[str, Any]:
    """Return what ``load_model`` needs: format, variant name, overrides and weights."""
    return {"format": FORMAT, "model": name, "overrides": dict(overrides), "state_dict": model.state_dict(), **info}


def save_model(path: Path, model: nn.Module, name: str, overrides: dict[str, Any], **info: Any) -> None:
    """Save a model file (no optimiser state)."""
    atomic_save(model_record(model, name, overrides, **info), path)


def read(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint dict and check its format."""
    path = Path(path)
    if not path.exists():
        raise TrainError(f"checkpoint {path} does not exist; pass the 'checkpoint' output of train.model")
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise TrainError(f"{path} is not a bottlenecks checkpoint (expected format {FORMAT!r})")
    return ckpt


def load_model(path: str | Path, device: str = "cpu") -> nn.Module:
    """Rebuild the model saved at ``path`` (model file or resume checkpoint) in eval mode."""
    ckpt = read(path)
    model = build_model(ckpt["model"], ckpt["overrides"])
    model.load_state_dict(ckpt["state_dict"])
    return model.to(device).eval()


def load_info(path: str | Path) -> dict[str, Any]:
    """Return a checkpoint's metadata (model name, overrides, data path and meta, summary)."""
    ckpt = read(path)
    return {k: v for k, v in ckpt.items() if k not in ("state_dict", "optimizer", "scheduler", "rng")}
