"""A local Prefect API server kept running between commands, so a run does not wait for Prefect's
temporary server to start every time.

The first `bottlenecks run` in a project folder starts it in the background on 127.0.0.1 (a free
port, recorded in ``<state folder>/prefect-server.json``); later commands reuse it while it answers
its health check. It stops itself after ``BOTTLENECKS_PREFECT_IDLE`` seconds (default 1800) with
no command using it, and on `bottlenecks stop`. A record whose process is gone or does not answer
is replaced. Never used when ``PREFECT_API_URL`` is set, nor with ``BOTTLENECKS_PREFECT_SERVER=off``
(Prefect's own temporary server inside each command, as the test suite runs).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from flows.services.ports import free_port

RECORD, LOCK, USERS, LOG = "prefect-server.json", "prefect-server.lock", "prefect-server.users", "prefect-server.log"
DEFAULT_IDLE = 1800.0
_held: list = []  # the shared lock on USERS this process holds while it uses the server


class ServerError(RuntimeError):
    """The background server could not be started."""


def enabled() -> bool:
    """Whether commands here should use the background server."""
    return not os.environ.get("PREFECT_API_URL") and os.environ.get("BOTTLENECKS_PREFECT_SERVER", "on") != "off"


def idle_seconds() -> float:
    return float(os.environ.get("BOTTLENECKS_PREFECT_IDLE", DEFAULT_IDLE))


def healthy(url: str, timeout: float = 2.0) -> bool:
    """Whether the API at ``url`` answers its health check."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


def read_record(home: Path) -> dict | None:
    try:
        return json.loads((home / RECORD).read_text())
    except (OSError, ValueError):
        return None


def _ours(pid: int) -> bool:
    """Whether ``pid`` is alive and is a server started by this module (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        try:
            os.kill(pid, 0)  # no /proc (macOS): trust a live pid
            return True
        except OSError:
            return False
    return b"flows.services.prefect_server" in cmdline or b"flows.prefect_server" in cmdline  # or an older layout's


def _lock(home: Path):
    """Take the lock that serialises starting, inspecting and stopping between commands."""
    home.mkdir(parents=True, exist_ok=True)
    fh = open(home / LOCK, "a")
    fcntl.flock(fh, fcntl.LOCK_EX)
    return fh


def _unlock(fh) -> None:
    fcntl.flock(fh, fcntl.LOCK_UN)
    fh.close()


@contextmanager
def _locked(home: Path) -> Iterator[None]:
    fh = _lock(home)
    try:
        yield
    finally:
        _unlock(fh)


def use(home: Path, timeout: float = 90.0) -> str:
    """Return the API URL of this folder's background server, starting it if needed.

    The calling process counts as using it until it exits (the idle timeout waits for it).
    """
    url = begin(home)
    ready(timeout)
    return url


def begin(home: Path) -> str:
    """Return the URL of this folder's server at once, spawning it if needed; ``ready`` waits for it.

    Between the two, the command imports Prefect and MLflow while the server boots (two cores
    instead of one); a second command waits on the lock until the server answers.
    """
    lock = _lock(home)
    try:
        record = read_record(home)
        if (
            record
            and _ours(record["pid"])
            and record.get("prefect_home") == _prefect_home()
            and _answers(record["url"])
        ):
            _hold(home)
            _unlock(lock)
            return record["url"]
        if record:
            _terminate(record)
        proc, record = _spawn(home)
    except BaseException:
        _unlock(lock)
        raise
    _pending.append((lock, proc, record, home))
    return record["url"]


def ready(timeout: float = 90.0) -> None:
    """Wait until the server ``begin`` spawned answers (nothing to wait for when it was reused)."""
    if not _pending:
        return
    lock, proc, record, home = _pending.pop()
    try:
        deadline = time.monotonic() + timeout
        while not healthy(record["url"]):
            if proc.poll() is not None:
                (home / RECORD).unlink(missing_ok=True)
                raise ServerError(f"the background Prefect server exited ({proc.returncode}); see {home / LOG}")
            if time.monotonic() > deadline:
                _terminate(record)
                (home / RECORD).unlink(missing_ok=True)
                raise ServerError(f"the background Prefect server did not answer in {timeout:.0f}s; see {home / LOG}")
            time.sleep(0.2)
        _hold(home)
    finally:
        _unlock(lock)


_pending: list = []  # (lock, process, record, home) of a server spawned and not yet answering


def _answers(url: str, attempts: int = 3) -> bool:
    """Health-check a live server patiently: on a loaded machine one check can time out."""
    return any(healthy(url, timeout=5.0) for _ in range(attempts))


def _prefect_home() -> str:
    return os.environ.get("PREFECT_HOME", "")


def _hold(home: Path) -> None:
    """Take a shared lock on the users file for the rest of this process; mark the use."""
    if _held:
        return
    fh = open(home / USERS, "a")
    fcntl.flock(fh, fcntl.LOCK_SH)
    os.utime(home / USERS)
    _held.append(fh)


def release() -> None:
    """End this process's use of the server before it exits (close the shared lock ``_hold`` took)."""
    while _held:
        _held.pop().close()


def _spawn(home: Path) -> tuple[subprocess.Popen, dict]:
    """Start the server process on a free port and record it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(
        {"PREFECT_UI_API_URL": url, "PREFECT_SERVER_API_HOST": "127.0.0.1", "PREFECT_SERVER_API_PORT": str(port)}
    )
    with open(home / LOG, "a") as log:
        # a session of its own: Ctrl-C in the terminal that started it does not stop it
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flows.services.prefect_server",
                "--port",
                str(port),
                "--home",
                str(home),
                "--idle",
                str(idle_seconds()),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(home),
            start_new_session=True,
        )
    record = {
        "pid": proc.pid,
        "port": port,
        "url": url,
        "prefect_home": _prefect_home(),
        "started": time.time(),
        "idle_limit": idle_seconds(),  # `stop --list` says when it stops itself
    }
    tmp = home / (RECORD + ".tmp")
    tmp.write_text(json.dumps(record))
    tmp.replace(home / RECORD)
    _register(home)
    return proc, record


def _terminate(record: dict, timeout: float = 20.0) -> bool:
    """Stop the recorded server process if it is ours; return whether one was running."""
    pid = int(record.get("pid", 0))
    if not pid or not _ours(pid):
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _ours(pid) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.1)
    if _ours(pid):
        os.kill(pid, signal.SIGKILL)
    _reap(pid)
    return True


def _reap(pid: int) -> None:
    """Collect the exit status of a server this process started (else it stays a zombie)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def stop(home: Path) -> dict | None:
    """Stop this folder's background server; return its record, or None when none was running."""
    with _locked(home):
        record = read_record(home)
        running = bool(record) and _terminate(record)
        (home / RECORD).unlink(missing_ok=True)
    return record if running else None


def _registry() -> Path | None:
    """The user's private runtime folder (the warm processes' own), where each background server
    names its state folder, so `bottlenecks stop --all` and `--list` find every one of this user's
    that shares it (a test with a runtime folder of its own sees only its own)."""
    from flows.services import daemon

    return daemon.runtime_dir()


def _register(home: Path) -> None:
    folder = _registry()
    if folder is not None:
        name = hashlib.sha256(str(home).encode()).hexdigest()[:16]
        try:
            (folder / f"prefect-{name}.home").write_text(str(home))
        except OSError:
            pass


def homes() -> list[Path]:
    """The state folders of this user's background servers that are running (as registered in the
    runtime folder); a registration whose server is gone is removed."""
    folder = _registry()
    found = []
    for entry in [] if folder is None else sorted(folder.glob("prefect-*.home")):
        try:
            home = Path(entry.read_text())
        except OSError:
            continue
        record = read_record(home)
        if record and record.get("pid") and _ours(int(record["pid"])):
            found.append(home)
        else:
            entry.unlink(missing_ok=True)
    return sorted(set(found))


# -- the server process ------------------------------------------------------------------------------
def _in_use(users: Path) -> bool:
    """Whether a command holds its shared lock on the users file."""
    with open(users, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


def _orphaned(home: Path, seen: list[bool]) -> bool:
    """Whether this server's record was removed or replaced (e.g. the state folder was deleted)."""
    record = read_record(home)
    if record and record.get("pid") == os.getpid():
        seen[0] = True
        return False
    return seen[0]  # before the starting command writes the record, nothing is wrong


def _idle_watch(server, home: Path, idle: float, poll: float) -> None:
    """Ask uvicorn to exit once no command has used the server for ``idle`` seconds."""
    users = home / USERS
    users.touch()
    last, seen = time.time(), [False]
    while not server.should_exit:
        time.sleep(poll)
        if _orphaned(home, seen) or not users.exists():
            server.should_exit = True
            break
        if _in_use(users):
            last = time.time()
            continue
        last = max(last, users.stat().st_mtime)
        if time.time() - last <= idle:
            continue
        with _locked(home):  # a command starting now waits, then finds no record and starts anew
            if _in_use(users):
                continue
            record = read_record(home)
            if record and record.get("pid") == os.getpid():
                (home / RECORD).unlink(missing_ok=True)
            server.should_exit = True


def main() -> None:
    """Serve the Prefect API (and UI) on 127.0.0.1 until idle or terminated."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--idle", type=float, default=DEFAULT_IDLE)
    args = parser.parse_args()
    import uvicorn
    from prefect.server.api.server import create_app

    from flows.services import prefect_db

    print(f"database: {prefect_db.prepare()}", flush=True)

    server = uvicorn.Server(
        uvicorn.Config(create_app(final=True), host="127.0.0.1", port=args.port, log_level="error", lifespan="on")
    )
    watcher = threading.Thread(
        target=_idle_watch, args=(server, args.home, args.idle, min(5.0, args.idle / 4)), daemon=True
    )
    watcher.start()
    try:
        server.run()
    finally:
        record = read_record(args.home)
        if record and record.get("pid") == os.getpid():
            (args.home / RECORD).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
