"""Worker processes forked from one template process (Linux).

Starting a worker interpreter costs seconds of CPU, almost all of it importing MLflow and its
store's modules, and a run used to pay it once per worker (docs/performance.md). A process now
starts one template at its first worker and keeps it for its later runs: a fresh interpreter that
imports what every worker imports (``PRELOAD``: never torch, never a user's module), then forks a
worker per request. Each worker is still a process of its own, with the environment, working
directory and ``sys.path`` its run had when it asked, and its own socket to the run; it imports the
step's module itself, as before.

The template runs no Python thread and touches no store, connection or GPU before it forks (with a
thread running it starts each worker as a fresh interpreter instead). It lives as long as the
process that started it: it exits when that process closes its socket or dies, ending any worker
still running (the pool ends a run's workers with the run). A worker's exit status comes back over
the template's socket, so the pool names a crashed worker's signal as it did for a child of its own.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

PRELOAD = (
    "flows.execute.worker",
    "flows.track.runs",
    "flows.services.mlflow_db",
    "mlflow.store.tracking.sqlalchemy_store",
    "sqlalchemy.dialects.sqlite.pysqlite",
    "alembic.command",
    "alembic.config",
)
_ENTRY = "import sys; from flows.execute.template import main; main(int(sys.argv[1]))"
_MESSAGE = 1 << 20  # a request carries the environment and sys.path: well under this


def available() -> bool:
    """Whether workers come from a template here: on Linux (``fork``, ``pidfd_open``) unless
    ``BOTTLENECKS_WORKER_TEMPLATE=off`` asks for a fresh interpreter per worker."""
    if os.environ.get("BOTTLENECKS_WORKER_TEMPLATE", "").strip().lower() in ("off", "0", "false", "no"):
        return False
    return sys.platform.startswith("linux") and hasattr(os, "pidfd_open")


class Forked:
    """A worker forked by the template, with the part of ``subprocess.Popen`` the pool uses."""

    def __init__(self, template: Template):
        self._template = template
        self._pid: int | None = None
        self.returncode: int | None = None

    @property
    def pid(self) -> int:
        """The worker's pid, once the template has forked it."""
        return self._template.pid_of(self)

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._template.code_of(self)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired("worker", timeout)
            self._template.changed(left)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        pid = self.pid if self.poll() is None else -1
        if pid > 0:  # never -1, which would signal every process of this user
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Template:
    """The run's side: starts the template process and asks it for workers."""

    def __init__(self, env: dict[str, str]):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _ENTRY, str(theirs.fileno())], pass_fds=[theirs.fileno()], env=env, cwd=os.getcwd()
        )
        theirs.close()
        self._sock = ours
        self._send = threading.Lock()
        self._cond = threading.Condition()
        self._pending: queue.SimpleQueue[Forked] = queue.SimpleQueue()  # asked for, pid not yet known
        self._codes: dict[int, int] = {}
        self._gone = False
        threading.Thread(target=self._read, name="worker-template", daemon=True).start()

    def spawn(self, env: dict[str, str], fd: int) -> Forked | None:
        """A worker serving socket ``fd`` with ``env``; None when the template is gone. Does not
        wait for the fork: the first request waits for the template's imports, in the background."""
        request = json.dumps({"env": env, "cwd": os.getcwd(), "path": sys.path}).encode()
        child = Forked(self)
        with self._send:
            if self._gone:
                return None
            try:  # with this process's standard output and error of the moment, as a child of its own gets
                socket.send_fds(self._sock, [request], [fd, 1, 2])
            except OSError:
                return None
            self._pending.put(child)
        return child

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(4096)
            except OSError:
                data = b""
            if not data:
                break
            kind, pid, *rest = json.loads(data)
            with self._cond:
                if kind == "pid":
                    self._pending.get()._pid = pid
                else:
                    self._codes[pid] = rest[0]
                self._cond.notify_all()
        with self._cond:
            self._gone = True
            self._cond.notify_all()

    def gone(self) -> bool:
        with self._cond:
            return self._gone

    def changed(self, timeout: float | None) -> None:
        """Wait until the template says something (or ``timeout`` passes)."""
        with self._cond:
            self._cond.wait(timeout if timeout is not None else 1.0)

    def pid_of(self, child: Forked) -> int:
        with self._cond:
            while child._pid is None and not self._gone:
                self._cond.wait(1.0)
        return child._pid if child._pid is not None else -1

    def code_of(self, child: Forked) -> int | None:
        """The worker's exit status (negative: the signal that ended it), None while it runs. A
        worker of a template that is gone died with it (SIGKILL, its parent-death signal)."""
        with self._cond:
            if child._pid is not None and child._pid in self._codes:
                return self._codes[child._pid]
            return -signal.SIGKILL if self._gone else None

    def close(self, timeout: float = 5.0) -> None:
        """End the template: it exits when its socket closes, ending any worker still running."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


class _Shared:
    """This process's template, started when its first worker is (a run whose steps all come from
    the cache starts none) and kept for the runs after it; a new one if it went away. It ends when
    the process does (at exit, or when its socket closes); a forked child of this process starts
    its own rather than share the parent's socket."""

    def __init__(self):
        self._lock = threading.Lock()
        self._template: Template | None = None

    def get(self) -> Template | None:
        if not available():
            return None
        with self._lock:
            if self._template is not None and (self._template.gone() or self._template.proc.poll() is not None):
                self._template = None
            if self._template is None:
                try:
                    self._template = Template({**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
                except OSError:  # no process to spare: the pool starts its workers itself
                    return None
            return self._template

    def close(self) -> None:
        with self._lock:
            template, self._template = self._template, None
        if template is not None:
            template.close()

    def forget(self) -> None:
        """In a forked child: the parent's template is the parent's."""
        self._lock = threading.Lock()
        self._template = None


_shared = _Shared()
os.register_at_fork(after_in_child=_shared.forget)
atexit.register(_shared.close)


def shared() -> Template | None:
    """The template this process's workers fork from, or None where they start afresh."""
    return _shared.get()


def close_shared() -> None:
    """End this process's template now (it would at exit)."""
    _shared.close()


# -- the template process ----------------------------------------------------------------------------


def main(fd: int) -> None:
    """Import ``PRELOAD``, then fork a worker for each request on socket ``fd`` until it closes."""
    import importlib
    import select

    from flows import home

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # like its workers, it ends when the run says so
    parent = os.getppid()  # watched rather than a parent-death signal, which follows the thread that started this
    home.configure(create=False)  # the libraries read their logging and telemetry settings at import
    try:
        for name in PRELOAD:
            importlib.import_module(name)
    except Exception as e:  # each worker imports for itself and reports what fails
        print(f"worker template: preloading failed ({type(e).__name__}: {e}); starting fresh workers", flush=True)
    sock = socket.socket(fileno=fd)
    # with a thread running, a fork could copy a held lock into every worker: each then starts afresh
    fresh = threading.active_count() > 1 or not all(name in sys.modules for name in PRELOAD)
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    children: dict[int, int] = {}  # pidfd -> pid
    while os.getppid() == parent:
        for ready, _ in poller.poll(1000):
            if ready != sock.fileno():
                pid = children.pop(ready)
                poller.unregister(ready)
                os.close(ready)
                _, status = os.waitpid(pid, 0)
                _tell(sock, ["exit", pid, os.waitstatus_to_exitcode(status)])
                continue
            try:
                request, fds, _, _ = socket.recv_fds(sock, _MESSAGE, 3)
            except OSError:
                request, fds = b"", []
            if not request:
                return _end(children)  # the run is done or gone
            pid = _fork(json.loads(request), fds, sock, fresh)
            for passed in fds:
                os.close(passed)
            pidfd = os.pidfd_open(pid)
            children[pidfd] = pid
            poller.register(pidfd, select.POLLIN)
            _tell(sock, ["pid", pid])
    _end(children)


def _end(children: dict[int, int]) -> None:
    """Kill and reap the workers still running: none is left for init to collect."""
    for pid in children.values():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in children.values():
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _tell(sock: socket.socket, message: list) -> None:
    try:
        sock.send(json.dumps(message).encode())
    except OSError:
        pass  # the run is gone: the next read ends the loop


def _fork(request: dict, fds: list[int], sock: socket.socket, fresh: bool) -> int:
    """Fork a worker serving the socket ``fds[0]``, writing to ``fds[1:]`` (the run's standard output
    and error), as the run asked (``fresh``: a new interpreter in the forked process); the parent
    gets its pid."""
    fd = fds[0]
    env = request["env"] | {"BOTTLENECKS_WORKER_PARENT": str(os.getpid())}  # the worker watches this process
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        sock.close()
        for target, passed in zip((1, 2), fds[1:]):
            os.dup2(passed, target)
        os.chdir(request["cwd"])
        from flows.execute.worker import ENTRY, serve

        if fresh:
            os.set_inheritable(fd, True)
            os.execve(sys.executable, [sys.executable, "-c", ENTRY, str(fd)], env)
        os.environ.clear()
        os.environ.update(env)
        sys.path[:] = request["path"]

        serve(fd)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        _exit(code)
    return 0  # not reached


def _exit(code: int) -> None:
    """End a worker as an interpreter ends: its exit handlers (which a fresh worker would have run),
    its output flushed; never back into the template's loop."""
    import atexit

    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)
