"""Where steps run: ``threads`` (one process), ``processes`` (local workers, the default) or
``dask`` (a ``dask.distributed`` cluster, local or at ``settings.cluster.address``).

Every executor takes the same ``StepPayload`` and gives back the same ``StepResult``; the parent
(``flows/execute/runner.py``) keeps Prefect, the cache and MLflow's parent run.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from typing import Callable

from flows.execute.pool import Claims, ProcessPool, Stopped
from flows.execute.worker import StepPayload, StepResult, run_step
from flows.plan.resources import visible_gpus
from flows.settings import EXECUTORS

Events = Callable[[dict], None]


class ExecutorError(Exception):
    """The executor cannot run this plan (no cluster at the address, a local store with a remote
    cluster); nothing was run."""


class ThreadExecutor:
    """Steps run in the parent's threads (tests, debugging); a stop takes effect at the step's
    next log or progress call. Nothing is pinned, but a GPU step holds the GPU ids it asked for
    (``payload.gpus``) while it runs, so two steps never hold one GPU at once."""

    name = "threads"

    def __init__(self, workers: int, gpus: list[str], threads: int):
        self.slots, self.gpus, self.threads = workers + len(gpus), gpus, threads
        self.gpu_capacity = len(gpus)
        self.claims: Claims[str] = Claims(list(gpus))
        self.stop = threading.Event()
        self._patching = threading.Lock()

    def run(self, payload: StepPayload, gpu: int, on_event: Events) -> StepResult:
        if self.stop.is_set():
            raise Stopped()
        from flows.execute import threadsafe

        with self._patching:  # when a step first computes: a cached run never imports matplotlib
            threadsafe.patch_matplotlib()
            threadsafe.patch_tqdm()
        payload.threads = payload.threads or self.threads
        held = self.claims.take(gpu, self.stop) if gpu and self.gpus else []
        payload.gpus = list(held)
        try:
            return run_step(payload, on_event, self.stop)
        finally:
            if held:
                self.claims.give(held)

    def close(self) -> None:
        self.stop.set()


class ProcessExecutor:
    """A local pool: ``workers`` CPU worker processes plus one worker per GPU."""

    name = "processes"

    def __init__(self, workers: int, gpus: list[str], threads: int, eager: tuple[int, int] = (0, 0)):
        self.pool = ProcessPool(workers, gpus, threads, eager)
        self.slots = len(self.pool.slots)
        self.gpu_capacity = len(gpus)  # the most GPUs one step can hold
        self.stop = self.pool.stop

    def run(self, payload: StepPayload, gpu: int, on_event: Events) -> StepResult:
        return self.pool.run(payload, gpu, on_event)

    def close(self) -> None:
        self.pool.close()


def held_gpus(gpu: int) -> list[str]:
    """The GPU ids a step asking for ``gpu`` holds on this Dask worker: the first ``gpu`` it sees
    (a worker offering several GPUs runs one such step at a time: ``--nthreads 1``); a ``ValueError``
    when it sees fewer than a multi-GPU step asks for."""
    seen = visible_gpus()
    if gpu > 1 and len(seen) < gpu:
        raise ValueError(
            f"the step asks for gpu: {gpu} but its Dask worker sees {len(seen)} GPU(s) "
            f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}); start the worker with "
            f"--resources GPU=N only for the N GPUs it can see"
        )
    return seen[:gpu]


def _dask_step(payload: StepPayload, topic: str, gpu: int = 0) -> StepResult:
    """Run a step on a Dask worker; events go back through the scheduler's event log."""
    from distributed import get_client, get_worker

    worker = get_worker()
    try:
        hosts = [w["host"] for w in get_client().scheduler_info()["workers"].values()]
        os.environ["BOTTLENECKS_WORKERS_PER_HOST"] = str(max(1, hosts.count(worker.ip)))
    except Exception:
        pass
    try:
        payload.gpus = held_gpus(gpu)
    except ValueError as e:
        return StepResult("failed", error=str(e), host=worker.ip, pid=os.getpid())
    return run_step(payload, lambda event: worker.log_event(topic, event))


class DaskExecutor:
    """Steps as Dask tasks; step resources map to worker resources (``GPU``, ``CPU``)."""

    name = "dask"

    def __init__(self, workers: int, gpus: list[str], threads: int, address: str | None = None):
        try:
            import dask
            from distributed import Client, LocalCluster
        except ImportError as e:  # pragma: no cover - a dependency of the project
            raise ExecutorError(f"executor 'dask' needs dask[distributed]: {e}") from None
        dask.config.set({"distributed.scheduler.allowed-failures": 0})  # Prefect owns retries
        self.cluster = None
        if address:
            try:
                self.client = Client(address, timeout="20s")
            except (OSError, TimeoutError) as e:
                raise ExecutorError(
                    f"no Dask scheduler answers at {address}: {e}; start one with "
                    f"`dask scheduler` and workers with `dask worker {address}`"
                ) from None
        else:
            env = {
                "CUDA_VISIBLE_DEVICES": "",
                "BOTTLENECKS_DEVICE": "cpu",
                "BOTTLENECKS_WORKERS_PER_HOST": str(max(1, workers)),
            }
            self.cluster = LocalCluster(
                n_workers=max(1, workers),
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                resources={"CPU": 1},
                env=env,
            )
            self.client = Client(self.cluster)
        self.topic = f"bottlenecks-{uuid.uuid4().hex[:12]}"
        self.handlers: dict[str, Events] = {}
        self.client.subscribe_topic(self.topic, self._dispatch)
        info = self.client.scheduler_info()["workers"].values()
        # the most GPUs one step can hold: a step runs on one worker, so its largest GPU resource
        self.gpu_capacity = int(max((w.get("resources", {}).get("GPU", 0) for w in info), default=0))
        self.cpu_tagged = any(w.get("resources", {}).get("CPU", 0) >= 1 for w in info)
        self.slots = max(1, len(info))
        self.threads = threads
        self.stop = threading.Event()
        self.futures: set = set()

    def _dispatch(self, event) -> None:
        _, body = event if isinstance(event, tuple) else (None, event)
        handler = self.handlers.get(body.get("instance", "")) if isinstance(body, dict) else None
        if handler is not None:
            handler(body)

    def run(self, payload: StepPayload, gpu: int, on_event: Events) -> StepResult:
        from distributed import KilledWorker

        if self.stop.is_set():
            raise Stopped()
        resources = {"GPU": gpu} if gpu else ({"CPU": 1} if self.cpu_tagged else None)
        self.handlers[payload.instance] = on_event
        future = self.client.submit(
            _dask_step,
            payload,
            self.topic,
            gpu,
            resources=resources,
            pure=False,
            retries=0,
            key=f"{payload.instance}-{uuid.uuid4().hex[:8]}",
        )
        self.futures.add(future)
        try:
            while not future.done():
                if self.stop.is_set():
                    future.cancel()
                    raise Stopped()
                time.sleep(0.1)
            try:
                return future.result()
            except KilledWorker as e:
                return StepResult("died", error=f"died: its Dask worker was lost ({e})")
            except Exception as e:  # the task could not even start on the worker
                return StepResult("failed", error=f"{type(e).__name__}: {e}")
        finally:
            self.futures.discard(future)
            self.handlers.pop(payload.instance, None)

    def close(self) -> None:
        self.stop.set()
        for future in list(self.futures):
            future.cancel()
        try:
            self.client.close(timeout=5)
        finally:
            if self.cluster is not None:
                self.cluster.close(timeout=10)


def make(
    name: str, *, workers: int, gpus: list[str], threads: int, address: str | None, eager: tuple[int, int] = (0, 0)
):
    """Build the executor ``name`` for a run; ``eager``: (CPU, GPU) workers to start right away."""
    if name == "threads":
        return ThreadExecutor(workers, gpus, threads)
    if name == "processes":
        return ProcessExecutor(workers, gpus, threads, eager)
    if name == "dask":
        return DaskExecutor(workers, gpus, threads, address)
    raise ExecutorError(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")
