"""A local pool of worker processes, one slot each: CPU workers and one worker per GPU.

A step asking for N GPUs takes N GPU slots at once (``Claims``: all or nothing, first come first
served), runs in the first slot's worker and holds the others idle until it ends.

Each worker is a Python process running ``flows.execute.worker.serve``, started once and reused across steps (torch is
imported once per worker), talking over a socket pair. On Linux the workers are forked from the run's
process's template (``flows.execute.template``), which imports what they all import once; elsewhere,
or when the template is gone, each is a fresh interpreter. A worker that dies (``os.abort()``, a
segfault, the OOM killer) fails only the step it was running, with its signal; the slot starts
a fresh worker for the next step. Workers never outlive the run: they exit when the parent does.
"""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Callable, Generic, TypeVar

from flows.execute import template as templates
from flows.execute.worker import ENTRY, StepPayload, StepResult


class Stopped(Exception):
    """The run is stopping; the step was not allowed to finish."""


def describe_exit(code: int | None) -> str:
    """``SIGABRT`` for a worker killed by a signal, ``exit code 3`` otherwise."""
    if code is None:
        return "lost"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


T = TypeVar("T")


class Claims(Generic[T]):
    """Things (GPU slots, GPU ids) handed out several at a time: a request gets all it asks for at
    once or waits, so two multi-GPU steps never deadlock holding half each. Requests are served
    strictly in arrival order: a waiting 4-GPU step is not overtaken by 1-GPU steps that arrive
    after it (they wait too, and a GPU may idle meanwhile), so it never starves."""

    def __init__(self, items: list[T]):
        self.order = {id(item): i for i, item in enumerate(items)}
        self.free = list(items)
        self.total = len(items)
        self.cond = threading.Condition()
        self.waiting: deque[object] = deque()

    def take(self, n: int, stop: threading.Event) -> list[T]:
        """``n`` items, the lowest free first, once every earlier request is served and ``n`` are
        free; ``Stopped`` once ``stop`` is set."""
        if n > self.total:
            raise ValueError(f"a step asks for {n} GPUs but this pool has {self.total}")
        ticket = object()
        with self.cond:
            self.waiting.append(ticket)
            try:
                while self.waiting[0] is not ticket or len(self.free) < n:
                    if stop.is_set():
                        raise Stopped()
                    self.cond.wait(0.25)
                taken, self.free = self.free[:n], self.free[n:]
                return taken
            finally:
                self.waiting.remove(ticket)
                self.cond.notify_all()

    def give(self, items: list[T]) -> None:
        """Return ``items`` (taken together earlier)."""
        with self.cond:
            self.free = sorted(self.free + list(items), key=lambda item: self.order[id(item)])
            self.cond.notify_all()


class Worker:
    """One worker process and its end of the socket pair."""

    def __init__(self, env: dict[str, str], template: templates.Template | None = None):
        ours, theirs = socket.socketpair()
        child_env = {
            **os.environ,
            **env,
            "BOTTLENECKS_PARENT_PID": str(os.getpid()),  # the run's process
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        }
        self.proc: subprocess.Popen | templates.Forked | None = None
        if template is not None:
            self.proc = template.spawn(child_env, theirs.fileno())
        if self.proc is None:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", ENTRY, str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                env=child_env,
                cwd=os.getcwd(),
            )
        theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def call(self, payload: StepPayload, on_event: Callable[[dict], None], stop: threading.Event) -> StepResult:
        """Send ``payload``, relay events until the result comes back or the worker dies."""
        try:
            self.conn.send(payload)
        except OSError:
            return self._died(payload)
        sentinel = self.proc  # poll below: Popen has no waitable handle, so wait on the socket
        while True:
            if stop.is_set():
                raise Stopped()
            ready = wait([self.conn], timeout=0.25)
            if not ready:
                if sentinel.poll() is not None:
                    return self._died(payload)
                continue
            try:
                kind, body = self.conn.recv()
            except (EOFError, OSError):
                self.proc.wait(timeout=5)
                return self._died(payload)
            if kind == "ready":
                self.ready = True
            elif kind == "event":
                on_event(body)
            elif kind == "result":
                return body

    def _died(self, payload: StepPayload) -> StepResult:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        return StepResult("died", error=f"died: {describe_exit(code)}", pid=self.proc.pid, host=socket.gethostname())

    def close(self, grace: float = 3.0) -> None:
        """End the worker: EOF first, then SIGTERM, then SIGKILL."""
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.conn.close()
        self.terminate(grace)

    def terminate(self, grace: float = 3.0) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


class Slot:
    """A place to run one step: its environment (which GPU, if any) and its current worker."""

    def __init__(self, name: str, gpu: str | None, threads: int):
        self.name, self.gpu, self.threads = name, gpu, threads
        self.env = {
            "CUDA_VISIBLE_DEVICES": gpu if gpu is not None else "",
            "BOTTLENECKS_DEVICE": "cuda" if gpu is not None else "cpu",
            "OMP_NUM_THREADS": str(threads),
            "MKL_NUM_THREADS": str(threads),
        }
        self.worker: Worker | None = None
        self.lock = threading.Lock()

    def start(self) -> Worker:
        if self.worker is None or not self.worker.alive():
            self.worker = Worker(self.env, templates.shared())
        return self.worker


class ProcessPool:
    """Slots for CPU steps and GPU steps; ``run`` blocks until a fitting slot is free."""

    def __init__(self, cpu_workers: int, gpus: list[str], threads: int, eager: tuple[int, int] = (0, 0)):
        self.cpu = [Slot(f"cpu{i}", None, threads) for i in range(cpu_workers)]
        self.gpu = [Slot(f"gpu{g}", g, threads) for g in gpus]
        self.free: queue.Queue = queue.Queue()  # CPU slots
        for s in self.cpu:
            self.free.put(s)
        self.gpus: Claims[Slot] = Claims(self.gpu)
        self.stop = threading.Event()
        self._closed = False
        self._closing = threading.Lock()  # a second close (the run's, after a signal's) waits for the first
        # start the interpreters the plan will need now, while the parent starts Prefect and MLflow
        for s in self.cpu[: eager[0]] + self.gpu[: eager[1]]:
            s.start()

    @property
    def slots(self) -> list[Slot]:
        return self.cpu + self.gpu

    def acquire(self, gpu: int) -> list[Slot]:
        """``gpu`` GPU slots at once, or one CPU slot for ``gpu == 0``."""
        if gpu:
            return self.gpus.take(gpu, self.stop)
        while True:
            if self.stop.is_set():
                raise Stopped()
            try:
                return [self.free.get(timeout=0.25)]
            except queue.Empty:
                continue

    def release(self, slots: list[Slot]) -> None:
        if slots[0].gpu is not None:
            self.gpus.give(slots)
        else:
            self.free.put(slots[0])

    def run(self, payload: StepPayload, gpu: int, on_event: Callable[[dict], None]) -> StepResult:
        """Run the step in the first slot's worker, holding every slot it asked for until it ends."""
        slots = self.acquire(gpu)
        slot = slots[0]
        try:
            payload.threads = payload.threads or slot.threads
            payload.gpus = [s.gpu for s in slots if s.gpu is not None]
            worker = slot.start()
            result = worker.call(payload, on_event, self.stop)
            if result.status == "died":
                slot.worker = None  # the next step on this slot gets a fresh worker
            return result
        finally:
            self.release(slots)

    def close(self) -> None:
        """End every worker (idempotent; returns once they are gone)."""
        with self._closing:
            if not self._closed:
                self._closed = True
                self._end_workers()

    def _end_workers(self) -> None:
        self.stop.set()
        workers = [s.worker for s in self.slots if s.worker is not None]
        for w in workers:
            try:
                w.conn.close()
            except OSError:
                pass
            if w.proc.poll() is None:
                w.proc.terminate()
        deadline = time.monotonic() + 3.0
        for w in workers:
            try:
                w.proc.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait(timeout=5)
