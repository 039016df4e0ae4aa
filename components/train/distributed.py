"""One training across several processes: each rank's share, DDP and the collectives.

With W processes (``train.model``'s ``processes``; by default one per GPU the step holds; the launch
is ``launch.py``'s), as in fairseq and torchtitan, every rank builds the same model from the same
seed and DistributedDataParallel averages the gradients; each optimiser step's micro-batches are
split across the ranks, and the update equals the single process's at the same global batch (the
rule is ``accumulate_weights``'s). Outside a process group every helper here is the identity (one
process), so the trainer calls them unconditionally. This module imports no other trainer module
(they import it).
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from typing import Any, Callable

import torch
import torch.distributed as dist

from components.train.config import split_disagreement
from components.train.errors import TrainError

RANK_SEED = 1_000_003  # rank r draws dropout and shifts from seed + r * RANK_SEED


# -- how many ranks, on which devices ------------------------------------------------------------
def world_size(processes: int | None, gpus: tuple[str, ...], device: str) -> int:
    """The ranks a run uses: ``processes``, else one per GPU the step holds (1 without GPUs)."""
    if processes is None:
        return len(gpus) if device.startswith("cuda") and gpus else 1
    return processes


def rank_gpus(world: int, gpus: tuple[str, ...]) -> list[str]:
    """The GPU id each rank sees: the step's GPUs, else the ones this process sees; refuse too few."""
    ids = list(gpus) or _visible_gpus()
    if world > len(ids):
        raise TrainError(
            f"processes={world} needs {world} GPUs, one a rank, and the step holds {len(ids)} "
            f"({', '.join(ids) or 'none'}): ask for them with `resources: {{gpu: {world}}}` "
            f"or set processes <= {len(ids)}"
        )
    return ids[:world]


def _visible_gpus() -> list[str]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g.strip() for g in visible.split(",") if g.strip()]
    return [str(i) for i in range(torch.cuda.device_count())]


def check_split(accumulate: int, passes: int | None, world: int) -> None:
    """Refuse a step whose micro-batches cannot be split evenly across the ranks."""
    problem = split_disagreement(accumulate, passes, world)
    if problem:
        raise TrainError(problem)


# -- inside a rank ----------------------------------------------------------------------------------
def world() -> int:
    """The ranks of this process's group (1 outside one)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def shard(batches: Callable[[int], dict], accumulate: int, rank: int, world: int) -> Callable[[int], dict]:
    """This rank's micro-batches, indexed 0, 1, ...: of each step's ``accumulate`` micro-batches of
    the single-process order, rank r reads r, r + W, r + 2W, ... (``accumulate / W`` of them)."""
    if world == 1:
        return batches
    per = accumulate // world

    def mine(i: int) -> dict:
        step, k = divmod(i, per)
        return batches(step * accumulate + rank + k * world)

    return mine


def wrap(net: torch.nn.Module, world: int) -> torch.nn.Module:
    """``net`` in DistributedDataParallel across the group (as it is with one process)."""
    if world == 1:
        return net
    from torch.nn.parallel import DistributedDataParallel

    cuda = next(net.parameters()).is_cuda
    return DistributedDataParallel(net, device_ids=[torch.cuda.current_device()] if cuda else None)


def accumulate_weights(shares: list[int]) -> tuple[list[float], float]:
    """Each micro-batch's loss weight and the step's target count, over all ranks.

    The rule: with T the step's real targets summed over every rank's micro-batches (one
    all-reduce), micro-batch i with n_i targets is backpropagated with weight ``n_i / T * W``.
    DDP averages the W ranks' gradients, so the update is ``sum_i n_i / T * grad_i`` over the whole
    step: the single process's with the same ``accumulate``. The reported loss uses ``n_i / T``.
    """
    total = max(all_sum(sum(shares)), 1)
    return [n / total * world() for n in shares], total


def all_sum(value: float) -> float:
    """``value`` summed over the group's ranks (itself with one process)."""
    if world() == 1:
        return value
    t = torch.tensor([float(value)], dtype=torch.float64, device=_collective_device())
    dist.all_reduce(t)
    return t.item()


def all_sum_tensors(*values) -> list[torch.Tensor]:
    """Tensors (or numbers) summed over the ranks, in one all-reduce, as float tensors."""
    device = _collective_device()
    t = torch.stack([torch.as_tensor(v, device=device).detach().double().reshape(()) for v in values])
    dist.all_reduce(t)
    return [x.float() for x in t]


def _collective_device() -> str:
    return "cuda" if dist.get_backend() == "nccl" else "cpu"


def no_sync(model, last: bool):
    """DDP's ``no_sync`` for every micro-batch but the step's last (one gradient all-reduce a step)."""
    return model.no_sync() if not last and hasattr(model, "no_sync") else nullcontext()


def barrier() -> None:
    """Wait for every rank (nothing with one process)."""
    if world() > 1:
        dist.barrier()


def gather(obj: Any) -> list[Any]:
    """Every rank's ``obj``, by rank (``[obj]`` with one process)."""
    if world() == 1:
        return [obj]
    out: list[Any] = [None] * world()
    dist.all_gather_object(out, obj)
    return out
