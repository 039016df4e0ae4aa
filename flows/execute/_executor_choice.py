"""Which executor a run gets: the plan's ``settings`` (kind, workers, devices, cluster address),
checked against what the cluster offers, with the workers its uncached steps need started early."""

from __future__ import annotations

import os

from flows import home
from flows.execute import executors
from flows.execute.cache import StepCache
from flows.plan.build import Plan, place_on
from flows.plan.resources import gpus as selected_gpus
from flows.plan.resources import offers


def torch_threads(plan: Plan) -> int:
    """Threads per step so parallel branches share the cores instead of oversubscribing them."""
    if plan.settings.torch_threads:
        return int(plan.settings.torch_threads)
    return max(1, (os.cpu_count() or 1) // max(1, int(plan.settings.workers)))


def to_compute(plan: Plan, cache: StepCache, use_cache: bool) -> tuple[int, int]:
    """(CPU, GPU) step instances without a cache record: how many workers to start at once."""
    todo = [i for i in plan.instances.values() if not (use_cache and i.cacheable and cache.get(i.key) is not None)]
    return sum(1 for i in todo if not i.gpu), sum(1 for i in todo if i.gpu)


def start_executor(plan: Plan, use_cache: bool = True):
    """The run's executor, with the workers its uncached steps need already starting (the CLI calls
    this before waiting for the Prefect server, so the workers' imports overlap its start)."""
    return choose(plan, to_compute(plan, StepCache(home.home()), use_cache))


def choose(plan: Plan, eager: tuple[int, int] = (0, 0)):
    """The executor ``plan.settings`` names, ``eager`` (CPU, GPU) workers starting; an
    ``ExecutorError`` when a step asks for more GPUs than the cluster offers."""
    gpus = [] if str(plan.settings.device) == "cpu" else selected_gpus(plan.settings.devices)
    address = plan.settings.address
    name = plan.settings.executor
    if name == "dask" and address:
        _require_servers(address)
    executor = executors.make(
        name, workers=int(plan.settings.workers), gpus=gpus, threads=torch_threads(plan), address=address, eager=eager
    )
    offered = getattr(executor, "gpu_capacity", len(gpus))  # the most GPUs one step can hold
    place_on(plan, offered)  # the cluster may differ from what the plan assumed (remote, overridden)
    wanting = [i for i in plan.instances.values() if i.gpu > offered]
    if wanting:
        executor.close()
        step = wanting[0].step
        line, col = step.node.vpos("resources") if "resources" in step.node else step.node.pos
        which = "has the resource GPU" if not offered else f"has more than GPU={offered}"
        raise executors.ExecutorError(
            f"{plan.pipeline.file}:{line}:{col}: step {step.id} asks for gpu: "
            f"{wanting[0].gpu} but this cluster offers {offers(offered)} (no worker of the "
            f"{name} cluster {which})"
        )
    return executor


def _require_servers(address: str) -> None:
    """Remote workers cannot reach this machine's SQLite store or ephemeral Prefect API."""
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    if uri.startswith(("sqlite:", "file:")) or "://" not in uri:
        raise executors.ExecutorError(
            f"executor dask at {address} needs an MLflow tracking server its workers can reach, not "
            f"{uri or 'a local store'}: set MLFLOW_TRACKING_URI=http://HOST:5000 (see docs/deployment.md)"
        )
    if not os.environ.get("PREFECT_API_URL"):
        raise executors.ExecutorError(
            f"executor dask at {address} needs a Prefect server: set PREFECT_API_URL=http://HOST:4200/api "
            "(see docs/deployment.md)"
        )
