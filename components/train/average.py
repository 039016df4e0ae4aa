"""Checkpoint averaging (Vaswani 2017 sec. 6.1: the base model averages the last 5 checkpoints)."""

from __future__ import annotations

from pathlib import Path

import torch

from components.train import checkpoint as C
from components.train.build import TrainError


def average_state_dicts(states: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Return the element-wise mean of floating tensors; other entries (step counters) from the last."""
    if not states:
        raise TrainError("nothing to average: no checkpoints given")
    keys = list(states[-1])
    for i, s in enumerate(states):
        if list(s) != keys:
            raise TrainError(f"checkpoint {i} has other parameters than the last one: average one model's checkpoints")
    out = {}
    for k in keys:
        last = states[-1][k]
        if last.is_floating_point():
            out[k] = torch.stack([s[k].float() for s in states]).mean(0).to(last.dtype)
        else:
            out[k] = last.clone()
    return out


def average_checkpoints(paths: list[str | Path]) -> dict[str, torch.Tensor]:
    """Average the weights of model files or resume checkpoints written by ``train.model``."""
    return average_state_dicts([C.read(p)["state_dict"] for p in paths])


class Snapshots:
    """Keep the weights of the last ``keep`` checkpoints as model files in ``folder``."""

    def __init__(self, folder: Path, keep: int):
        self.folder, self.keep = folder, keep

    def paths(self) -> list[Path]:
        """Snapshot files, oldest first."""
        return sorted(self.folder.glob("step_*.pt"), key=lambda p: int(p.stem.split("_")[1]))

    def save(self, step: int, net, name: str, config: dict, **info) -> None:
        C.save_model(self.folder / f"step_{step:08d}.pt", net, name, config, **info, step=step)
        for old in self.paths()[: -self.keep]:
            old.unlink()
