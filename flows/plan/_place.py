"""Placement: how many GPUs each step instance holds, refused where this cluster offers fewer; and
re-placement for a cluster known only at run start, its cache keys following."""

from __future__ import annotations

from flows.language.errors import Collector
from flows.plan._keys import assign_keys
from flows.plan._model import Instance, Plan
from flows.plan.resources import gpus, offers, wants_gpu
from flows.settings import Settings


def place(instances: dict[str, Instance], settings: Settings, errors: Collector) -> None:
    """Give each instance its GPU count; refuse requests no worker of this cluster can meet."""
    remote = settings.executor == "dask" and settings.address
    offered = len(gpus(settings.devices)) if settings.executor != "dask" else 0
    for inst in instances.values():
        if inst.component is None:
            continue
        inst.gpu, explicit = wants_gpu(inst.component, inst.step.resources, offered)
        if explicit and inst.gpu > offered and not remote:  # a remote cluster is asked at run start
            local = settings.executor == "dask"
            where = "a local Dask cluster (CPU workers only)" if local else f"devices: {settings.devices}"
            fix = "ask for gpu: 0" if not offered else f"ask for at most gpu: {offered} (or gpu: all)"
            errors.add(
                inst.step.node.vpos("resources"),
                f"step {inst.step.id} asks for gpu: {inst.gpu} but this cluster offers {offers(offered)} "
                f"({where}); set settings.devices, run on a GPU machine, or {fix}",
            )


def place_on(plan: Plan, offered: int) -> None:
    """Re-place the steps for a cluster known only at run start (``offered``: the most GPUs one step
    can hold there, e.g. a remote Dask cluster's largest GPU worker): component defaults and
    ``gpu: all`` follow it, and the cache keys follow them."""
    changed = False
    for inst in plan.instances.values():
        gpu, _ = wants_gpu(inst.component, inst.step.resources, offered)
        changed |= gpu != inst.gpu
        inst.gpu = gpu
    if changed:
        assign_keys(plan.instances, plan.settings)
