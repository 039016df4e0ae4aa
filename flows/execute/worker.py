"""What runs a step on a worker: a picklable payload in, plain data out.

``run_step(payload, emit)`` resolves the component by name, gives it an MLflow-backed context
logging to the step's own run (created by the parent, which also finishes it) and returns a
``StepResult``. ``emit`` carries progress and log events back to the parent's live view; nothing
here touches the view, the cache index or the parent's locks. The same function runs in a thread
(``executor: threads``), in a local worker process (``serve``) or on a Dask
worker, so every executor gives the same results.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from flows.execute import torch_threads
from flows.execute.cache import no_room

Emit = Callable[[dict], None]


class Interrupted(Exception):
    """The run is stopping (Ctrl-C/SIGTERM); raised inside a step at its next log or progress call."""


@dataclass
class StepPayload:
    """Everything a worker needs for one step instance; small and picklable."""

    instance: str
    component: str
    params: dict[str, Any]
    key: str
    work_dir: str
    run_id: str
    seed: int
    tracking_uri: str
    home: str
    threads: int = 0  # 0: the cores this worker is given, divided among its host's workers
    device: str = ""  # "" : what the worker is pinned to (see ``worker_device``)
    inputs: list[str] = field(default_factory=list)  # producer files the step reads
    module: str = ""  # where the component is defined: imported first, so it registers
    gpus: list[str] = field(default_factory=list)  # the GPU ids the step holds, in order; the executor fills it
    run_command: str = ""  # the command that runs the pipeline again as this run was started (ctx.run_command)


@dataclass
class StepResult:
    """What came back: ``done`` with outputs, or ``failed``/``died`` with the error."""

    status: str
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    traceback: str = ""
    seconds: float = 0.0
    pid: int = 0
    host: str = ""
    device: str = "cpu"
    gpus: list[str] = field(default_factory=list)  # the GPU ids the step held


def worker_device() -> str:
    """``cuda`` in a worker pinned to a GPU, else ``cpu`` (``CUDA_VISIBLE_DEVICES=""`` hides GPUs)."""
    forced = os.environ.get("BOTTLENECKS_DEVICE")
    if forced:
        return forced
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return "cpu"
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def default_threads() -> int:
    """Torch threads for this worker: the cores it may use, shared among the workers on its host."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    share = int(os.environ.get("BOTTLENECKS_WORKERS_PER_HOST", "1") or 1)
    return max(1, cores // max(1, share))


def _missing_inputs(payload: StepPayload) -> list[str]:
    return [p for p in payload.inputs if not os.path.exists(p)]


def run_step(payload: StepPayload, emit: Emit, stop: threading.Event | None = None) -> StepResult:
    """Run one step instance; never raises for a failing component (the result says so)."""
    from flows.track.runs import Tracker

    host, pid = socket.gethostname(), os.getpid()
    started = time.monotonic()
    where = {"host": host, "pid": pid, "device": payload.device or worker_device(), "gpus": list(payload.gpus)}
    missing = _missing_inputs(payload)
    if missing:
        return StepResult("failed", error=_unseen(payload, missing[0], host), **where)
    tracker = Tracker.for_runs(payload.tracking_uri)
    ctx = _context(payload, tracker, emit, stop, where["device"])
    handler = _forward_logs(emit, payload.instance)
    try:
        outputs = _call(payload, tracker, ctx, where)
    except BaseException as e:  # noqa: BLE001 - a component's SystemExit is its failure too
        return _failure(e, payload, tracker, ctx, started, where)
    finally:
        logging.getLogger("bottlenecks").removeHandler(handler)
    seconds = time.monotonic() - started
    tracker.log(payload.run_id, tags={"seconds": f"{seconds:.2f}"})
    return StepResult("done", outputs=outputs, seconds=seconds, **where)


def _unseen(payload: StepPayload, path: str, host: str) -> str:
    """Why a worker that cannot see an upstream step's file fails the step."""
    return (
        f"worker on host {host} cannot see {path} (produced by an upstream step): the "
        f"state folder {payload.home} must be on a filesystem every worker mounts at the same "
        "path (set BOTTLENECKS_HOME to it on every host)"
    )


def _context(payload: StepPayload, tracker, emit: Emit, stop: threading.Event | None, device: str):
    """The component's context: logs to the step's run, progress as events to the parent."""
    return _WorkerContext(
        tracker=tracker,
        run_id=payload.run_id,
        view=_EventView(emit, stop),
        work_dir=Path(payload.work_dir),
        device=device,
        gpus=tuple(payload.gpus),
        seed=payload.seed,
        step_name=payload.instance,
        stop=stop,
        run_command=payload.run_command or None,
    )


def _call(payload: StepPayload, tracker, ctx, where: dict) -> dict[str, Any]:
    """Log the step's parameters and worker, call the component, and check its outputs travel."""
    from flows.track.runs import flatten

    tags = {"worker.host": where["host"], "worker.pid": str(where["pid"]), "device": where["device"]}
    if payload.gpus:  # how many GPUs the step held, and which (the cache key records only the count)
        tags.update({"gpus": str(len(payload.gpus)), "worker.gpus": ",".join(payload.gpus)})
    tracker.log(payload.run_id, params=flatten(payload.params), tags=tags)
    torch_threads.set_threads(payload.threads or default_threads())
    outputs = _component(payload)(ctx, **payload.params)
    json.dumps(outputs)  # outputs travel as JSON; big things are files in the work dir
    # a folder it wrote with meta.json is a dataset: it meets the data contract here, at the step that made it
    from components.data.contract import check_outputs

    check_outputs(outputs, ctx.work_dir)
    ctx.flush()
    return outputs


def _failure(e: BaseException, payload: StepPayload, tracker, ctx, started: float, where: dict) -> StepResult:
    """The result of a step that raised ``e`` (call while handling it), its error kept on its run."""
    trace = traceback.format_exc()
    message = f"{type(e).__name__}: {e}"
    if isinstance(e, OSError) and no_room(e, payload.work_dir):
        message = no_room(e, payload.work_dir)
    if isinstance(e, Interrupted):
        message = "stopped: the run was interrupted"
    _record_failure(tracker, payload.run_id, ctx, message, trace)
    status = "stopped" if isinstance(e, Interrupted) else "failed"
    seconds = time.monotonic() - started
    return StepResult(status, error=message, traceback=trace, seconds=seconds, **where)


def _component(payload: StepPayload):
    """The component, importing the module that registers it (a plugin, a test module) first."""
    import importlib

    from components.registry import ComponentError, get

    if payload.module and payload.module != "__main__":
        importlib.import_module(payload.module)
    try:
        return get(payload.component)
    except ComponentError:
        if payload.module == "__main__":
            raise ComponentError(
                f"component {payload.component!r} is defined in the script that started "
                "the run; worker processes cannot import it: move it to a module, or use "
                "settings.executor: threads"
            ) from None
        raise


def _record_failure(tracker, run_id: str, ctx, message: str, trace: str) -> None:
    """Keep what the step logged, its traceback and the error on the step's run."""
    path = ctx.work_dir / "error.txt"
    try:
        path.write_text(trace)
        ctx.flush()
        tracker.log(run_id, tags={"error": message[:4000]})
        tracker.client.log_artifact(run_id, str(path))
    except Exception:  # the tracking server itself may be what failed
        pass


def _forward_logs(emit: Emit, instance: str) -> logging.Handler:
    """Send components' warnings (a diverged run, say) to the parent's console."""

    class _Forward(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                emit({"kind": "log", "instance": instance, "level": record.levelno, "message": record.getMessage()})
            except Exception:
                pass

    handler = _Forward(level=logging.WARNING)
    logger = logging.getLogger("bottlenecks")
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.WARNING:
        logger.setLevel(logging.WARNING)
    return handler


class _EventView:
    """Stands in for the live view inside a worker: progress becomes events for the parent."""

    MIN_INTERVAL = 0.2  # seconds between progress events of one step

    def __init__(self, emit: Emit, stop: threading.Event | None):
        self.emit, self.stop = emit, stop

    def component_progress(self, iid: str, total: float | None, description: str):
        from contextlib import nullcontext

        from components.context import Progress

        last = 0.0

        def send(bar: Progress, force: bool = False) -> None:
            nonlocal last
            if self.stop is not None and self.stop.is_set():
                raise Interrupted()
            now = time.monotonic()
            if force or now - last >= self.MIN_INTERVAL or (bar.total and bar.completed >= bar.total):
                last = now
                self.emit(
                    {
                        "kind": "progress",
                        "instance": iid,
                        "completed": bar.completed,
                        "total": bar.total,
                        "description": bar.description,
                    }
                )

        bar = Progress(total, description, on_change=send)
        send(bar, force=True)
        return nullcontext(bar)


def _context_class():
    from flows.track.runs import MlflowContext

    class WorkerContext(MlflowContext):
        """An MLflow context that stops the step at its next log call once the run is stopping."""

        def __init__(self, *, stop: threading.Event | None = None, **kwargs):
            super().__init__(**kwargs)
            self._stop = stop

        def log_metric(self, key: str, value: float, step: int | None = None) -> None:
            if self._stop is not None and self._stop.is_set():
                raise Interrupted()
            super().log_metric(key, value, step)

    return WorkerContext


def _WorkerContext(**kwargs):  # noqa: N802 - built lazily so importing this module stays light
    return _context_class()(**kwargs)


# -- the local worker process ---------------------------------------------------------------------
# started by the pool (flows/execute/processes.py), forked from its process's forkserver or afresh


def _watch_parent() -> None:
    """Exit when the run's process is gone, however it ended (SIGKILL included): no worker outlives
    its run. Its end of multiprocessing's pipe to this worker closes when it exits; a process it
    forked meanwhile may hold a copy open, so its pid is checked too."""
    import multiprocessing
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None:  # not started by a pool: nothing to watch
        return
    while not wait([parent.sentinel], timeout=1.0) and _exists(parent.pid):
        pass
    os._exit(0)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: it exists
        pass
    return True


def _warm() -> None:
    """Import what every step needs and open the tracking store before the first payload is read
    (a worker started early, while the parent waits for its servers, is then ready to compute).
    A store that does not exist yet is left to the parent to create."""
    try:
        from flows.services.mlflow_db import database_file
        from flows.track.runs import Tracker

        uri = os.environ.get("MLFLOW_TRACKING_URI", "")
        db = database_file(uri)
        # only a store that exists: a new one is created once, by the parent, never migrated by several
        # workers at once (concurrent migrations of one SQLite file fail on "duplicate column")
        if db is not None and db.exists():
            Tracker.for_runs(uri).client.search_experiments(max_results=1)
    except Exception:  # the step itself reports a store that cannot be opened
        pass


def serve(fd: int) -> None:
    """Worker loop: receive payloads on ``fd``, send events and results back, until EOF."""
    import signal
    from multiprocessing.connection import Connection

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when workers stop
    threading.Thread(target=_watch_parent, name="parent-watch", daemon=True).start()
    from flows import home

    home.configure()
    conn = Connection(fd)
    lock = threading.Lock()

    def send(message) -> None:
        with lock:
            conn.send(message)

    send(("ready", {"pid": os.getpid(), "host": socket.gethostname()}))
    _warm()
    while True:
        try:
            payload = conn.recv()
        except (EOFError, OSError):
            return
        if payload is None:
            return
        result = run_step(payload, lambda event: send(("event", event)))
        send(("result", result))
