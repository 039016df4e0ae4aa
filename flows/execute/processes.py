"""How the pool's worker processes start: forked from this process's forkserver, or afresh.

Starting a worker interpreter costs seconds of CPU, almost all of it importing MLflow and its
store's modules (docs/performance.md). A worker is therefore forked from ``multiprocessing``'s
forkserver, which imports ``PRELOAD`` once (never torch, never a user's module); this process starts
it with its first worker and keeps it until it exits. Each worker is still a process of its own,
with the environment, folder, import path and standard output and error the run has when it starts
the worker, and its own socket to the run; it imports the step's module itself.
``BOTTLENECKS_WORKER_TEMPLATE=off`` starts each worker as a fresh interpreter instead
(``multiprocessing``'s ``spawn``), as does a platform without a forkserver or a forkserver that
cannot fork here (this process was itself forked from one that had started it).

Both ways follow ``multiprocessing``'s rules (docs/engine.md): a worker runs the process's main
script again as ``__mp_main__`` (which runs nothing under ``if __name__ == "__main__":``); the
forkserver skips a preloaded module that fails to import (each worker then imports it itself and
reports what fails); a process has one forkserver, preloaded with the list of whoever starts it
first (in a run's process the pool; the trainer's CPU ranks start theirs in the worker that runs them).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import socket
from multiprocessing import reduction, util
from multiprocessing.process import BaseProcess

PRELOAD = [
    "flows.execute.processes",
    "flows.execute.worker",
    "flows.track.runs",
    "flows.services.mlflow_db",
    "mlflow.store.tracking.sqlalchemy_store",
    "sqlalchemy.dialects.sqlite.pysqlite",
    "alembic.command",
    "alembic.config",
]
SWITCH = "BOTTLENECKS_WORKER_TEMPLATE"  # "off" (or 0, false, no): a fresh interpreter per worker


def forked() -> bool:
    """Whether workers fork from this process's forkserver: wherever ``multiprocessing`` has one,
    unless ``BOTTLENECKS_WORKER_TEMPLATE=off`` asks for a fresh interpreter per worker."""
    if os.environ.get(SWITCH, "").strip().lower() in ("off", "0", "false", "no"):
        return False
    return "forkserver" in multiprocessing.get_all_start_methods()


def start(env: dict[str, str], sock: socket.socket) -> BaseProcess:
    """A started worker serving ``sock`` with ``env``, in this process's folder and import path,
    writing to this process's standard output and error of the moment."""
    args = (sock, env, _Fd(1), _Fd(2))
    if forked():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        proc = context.Process(target=_serve, args=args, name="bottlenecks-worker")
        try:
            proc.start()
            return proc
        except (OSError, EOFError):  # no forkserver that can fork for this process: start afresh
            pass
    proc = multiprocessing.get_context("spawn").Process(target=_serve, args=args, name="bottlenecks-worker")
    proc.start()
    return proc


def _stop_helpers() -> None:
    """Stop the helper processes ``multiprocessing`` started here, the forkserver and the resource
    tracker, and collect them: each would otherwise stop only once this process has exited, and
    outlive it for a moment. Through the stop hooks CPython's own tests use; a Python without them
    leaves the helpers to stop by themselves, as they do when this process is killed."""
    from multiprocessing import forkserver, resource_tracker

    for helper, started in ((forkserver._forkserver, "_forkserver_pid"), (resource_tracker._resource_tracker, "_pid")):
        if getattr(helper, started, None) is None:  # none, or inherited from the process that started it
            continue
        try:
            helper._stop()
        except (AttributeError, OSError):
            pass


# at exit, last of multiprocessing's exit work: after it has waited for its children (the pool ends
# its workers before that) and released the semaphores the tracker would otherwise report as leaked
util.Finalize(None, _stop_helpers, exitpriority=-100)


class _Fd:
    """A descriptor of this process that the worker gets a copy of (under a number of its own)."""

    def __init__(self, fd: int):
        self.fd = fd

    def __reduce__(self):
        return _own, (reduction.DupFd(self.fd),)


def _own(dup) -> int:
    return dup.detach()


def _serve(sock: socket.socket, env: dict[str, str], out: int, err: int) -> None:
    """In the worker: the run's environment and output, then steps from ``sock`` until it closes."""
    for target, fd in ((1, out), (2, err)):
        if fd != target:  # a fresh interpreter has the run's already
            os.dup2(fd, target)
            os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    from flows.execute.worker import serve

    try:
        serve(sock.detach())
    finally:
        # a forked process ends with os._exit: run its exit handlers as an interpreter's end would
        # (a fresh one's end then finds none left)
        atexit._run_exitfuncs()
