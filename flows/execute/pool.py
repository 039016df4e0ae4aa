"""A local pool of worker processes, one slot each: CPU workers and one worker per GPU.

A step asking for N GPUs takes N GPU slots at once (``Claims``: all or nothing, first come first
served), runs in the first slot's worker and holds the others idle until it ends.

Each worker is a Python process running ``flows.execute.worker.serve``, started once and reused across steps (torch is
imported once per worker), talking over a socket pair. Workers are forked from this process's
forkserver, which imports what they all import once, or start as fresh interpreters
(``flows.execute.processes``). A worker that dies (``os.abort()``, a segfault, the OOM killer) fails
only the step it was running, with its signal; the slot starts a fresh worker for the next step.
Workers never outlive the run: they exit when the parent does.
"""

from __future__ import annotations

import atexit
import os
import queue
import signal
import socket
import sys
import threading
import time
import weakref
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Callable, Generic, TypeVar

from flows.execute import processes
from flows.execute.worker import StepPayload, StepResult


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

    def __init__(self, env: dict[str, str]):
        ours, theirs = socket.socketpair()
        child_env = {
            **os.environ,
            **env,
            "BOTTLENECKS_PARENT_PID": str(os.getpid()),  # the run's process
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),  # for the processes a step starts
        }
        try:
            self.proc = processes.start(child_env, theirs)
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False
        self.busy = False  # running a step: it will not exit when its socket closes
        self._reading = threading.Lock()  # one reader of the exit status at a time
        _started.add(self)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exitcode(self, timeout: float = 0.0) -> int | None:
        """The worker's exit status (negative: the signal that ended it), waiting up to ``timeout``
        seconds for it to end; None while it runs."""
        with self._reading:
            self.proc.join(timeout)
            return self.proc.exitcode

    def alive(self) -> bool:
        return self.exitcode() is None

    def call(self, payload: StepPayload, on_event: Callable[[dict], None], stop: threading.Event) -> StepResult:
        """Send ``payload``, relay events until the result comes back or the worker dies."""
        self.busy = True  # until its result comes back: a step stopped or died leaves it set
        result = self._call(payload, on_event, stop)
        self.busy = False
        return result

    def _call(self, payload: StepPayload, on_event: Callable[[dict], None], stop: threading.Event) -> StepResult:
        try:
            self.conn.send(payload)
        except OSError:
            return self._died(payload)
        while True:
            if stop.is_set():
                raise Stopped()
            ready = wait([self.conn, self.proc.sentinel], timeout=0.25)
            if self.conn not in ready:
                if ready:  # it ended without a word
                    return self._died(payload)
                continue
            try:
                kind, body = self.conn.recv()
            except (EOFError, OSError):
                return self._died(payload)
            if kind == "ready":
                self.ready = True
            elif kind == "event":
                on_event(body)
            elif kind == "result":
                return body

    def _died(self, payload: StepPayload) -> StepResult:
        code = self.exitcode(timeout=5)
        return StepResult("died", error=f"died: {describe_exit(code)}", pid=self.proc.pid, host=socket.gethostname())


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
        self.lock = threading.Lock()  # one start at a time: an early one, the first step's, the pool's end
        self.ended = False

    def start(self) -> Worker:
        """This slot's worker, started now if it has none or its last one died; ``Stopped`` once the
        pool has ended."""
        with self.lock:
            if self.ended:
                raise Stopped()
            if self.worker is None or not self.worker.alive():
                self.worker = Worker(self.env)
            return self.worker

    def end(self) -> Worker | None:
        """Start no worker any more; the one it has, once a start under way has finished."""
        with self.lock:
            self.ended = True
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
        # start the workers the plan will need now, in the background, while the parent starts Prefect
        # and MLflow (the first waits for the forkserver's imports)
        for s in self.cpu[: eager[0]] + self.gpu[: eager[1]]:
            threading.Thread(target=_start_early, args=(s,), name=f"start-{s.name}", daemon=True).start()

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
        _end([w for w in (s.end() for s in self.slots) if w is not None])


def _start_early(slot: Slot) -> None:
    try:
        slot.start()
    except Exception:  # noqa: BLE001 - the first step on this slot starts it again and fails with the reason
        pass


GRACE_S = 5.0  # an idle worker exits within a second of its socket closing, even on a loaded machine


def _end(workers: list[Worker]) -> None:
    """Close their sockets; an idle worker then exits by itself, running its exit handlers, which
    release the semaphores it made (a library's ``multiprocessing`` lock: the resource tracker would
    report them leaked at the run's end). SIGTERM a worker mid-step at once and an idle one still
    running after ``GRACE_S``; SIGKILL 3 s later."""
    for w in workers:
        try:
            w.conn.close()
        except OSError:
            pass
        if w.busy and w.alive():
            w.proc.terminate()
    deadline = time.monotonic() + GRACE_S
    for w in workers:
        if w.exitcode(timeout=max(0.0, deadline - time.monotonic())) is None:
            w.proc.terminate()
    deadline = time.monotonic() + 3.0
    for w in workers:
        if w.exitcode(timeout=max(0.05, deadline - time.monotonic())) is None:
            w.proc.kill()
            w.exitcode(timeout=5)


_started: weakref.WeakSet[Worker] = weakref.WeakSet()  # this process's, running or not
os.register_at_fork(after_in_child=_started.clear)  # a forked child's are its parent's


@atexit.register  # after multiprocessing's exit handler (imported above), so it runs before that one
def _end_started() -> None:
    """End the workers still running at exit (a pool left open): multiprocessing would wait for them."""
    _end([w for w in list(_started) if w.alive()])
