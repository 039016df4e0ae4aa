"""A warm process that `bottlenecks run` hands its work to, so a run does not pay for importing
Prefect, MLflow and the engine every time.

The first `bottlenecks run` with a given environment runs in its own process as before and, once
its pipeline is valid and its servers answer (``start_wanted``: a refused run starts nothing), starts
in the background a *zygote*: a process that imports the engine and its libraries once, creates
nothing (no client, thread, connection or file handle) and waits on a Unix socket in a private
folder. Later `run` commands connect, pass their arguments, environment, working folder and their
own stdin/stdout/stderr (as file descriptors), and the zygote forks a child that runs the command
exactly as the command's own process would, writing to the same terminal. The command forwards
Ctrl-C / SIGTERM / SIGHUP to that child and exits with its exit status; if the command itself is
killed, the child is stopped as by SIGTERM (runs marked KILLED, checkpoints kept). A child killed
outright (SIGKILL, the OOM killer) cannot say so: the zygote reaps it and tells the command, which
names the signal and exits 128 + its number (137 for SIGKILL).

The zygote serves one folder and one environment: the socket's name is a hash of the folder the
command starts in, the Python executable, its import path and the environment (less variables a shell
changes between commands, such as PWD), so a command in another folder, of another virtualenv or with
other settings gets its own zygote and never another's (the zygote refuses one whose folder or
interpreter differs from its own, should two keys ever collide). A folder has one zygote: a new one
(another environment or interpreter) retires the folder's others as it starts serving; a retired
zygote takes no more commands and exits once the commands it is running have ended. Before each fork it
checks that no source file it imported has changed since it started (an edited engine or an
upgraded library); if one has, it answers "stale", exits, and the command runs in its own process
and starts a fresh zygote. It exits after ``BOTTLENECKS_DAEMON_IDLE`` seconds without a command
(default 1800) and on `bottlenecks stop` in its folder (`bottlenecks stop --all` stops every zygote
of the user; `bottlenecks stop --list` shows them and the folder each serves).
``BOTTLENECKS_DAEMON_PRELOAD=pkg,pkg.models`` also imports those modules in the
zygote (a plugin with heavy imports of its own). ``BOTTLENECKS_DAEMON=off`` turns it off (the test
suite runs so, apart from tests/services/test_daemon.py). A preloaded module of the command's own
may define ``warm_up()``: the zygote calls it once, for work every command would otherwise repeat
(it must leave no thread, connection or open file behind).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

DEFAULT_IDLE = 1800.0
# variables a shell or terminal changes between commands without changing what a run does
VOLATILE = {
    "PWD",
    "OLDPWD",
    "SHLVL",
    "_",
    "COLUMNS",
    "LINES",
    "TERM_SESSION_ID",
    "WINDOWID",
    "PS1",
    "PS2",
    "SSH_CLIENT",
    "SSH_CONNECTION",
    "SSH_TTY",
    "PYTEST_CURRENT_TEST",
    # the shell's prompt and terminal multiplexers' window names
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "TMUX_PANE",
    "STY",
    "WINDOW",
    # make's own bookkeeping, exported to the commands a Makefile runs (a `make` target or a plain shell
    # must share one zygote)
    "MAKEFLAGS",
    "MAKELEVEL",
    "MFLAGS",
    "MAKEOVERRIDES",
    "MAKE_TERMOUT",
    "MAKE_TERMERR",
}
_HEADER = struct.Struct("!I")
_in_child = False  # this process is a zygote's child running a command: never hand over again
# a zygote to start once the command is sure to work, with the environment the command started with
# (the command then changes its own: ``home.configure``)
_wanted: list[tuple[Path, str, tuple[str, ...], dict[str, str]]] = []


def in_child() -> bool:
    """Whether this process is a warm process's child running a command."""
    return _in_child


def enabled() -> bool:
    return os.environ.get("BOTTLENECKS_DAEMON", "on").lower() not in ("off", "0", "false", "no")


def idle_seconds() -> float:
    return float(os.environ.get("BOTTLENECKS_DAEMON_IDLE", DEFAULT_IDLE))


def stable_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in VOLATILE}


def runtime_dir() -> Path | None:
    """A folder only this user can enter, with a short path (a Unix socket's path is at most ~100
    bytes); None when no such folder can be had (then no zygote is used)."""
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    folder = Path(base) / f"bottlenecks-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        st = folder.lstat()
    except OSError:
        return None
    if not folder.is_dir() or folder.is_symlink() or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None  # someone else's folder, or open to others: never talk to a socket there
    return folder


def folder() -> str:
    """The folder a command serves: where it starts (its ``.bottlenecks/`` state, its relative paths)."""
    return os.path.realpath(os.getcwd())


def key(env: dict[str, str] | None = None) -> str:
    """What a zygote must share with a command to serve it: folder, interpreter, import path, environment."""
    env = stable_env(dict(os.environ if env is None else env))
    here = os.getcwd()
    path = [p for p in sys.path[1:] if p not in ("", here)]  # the folder is keyed as itself, below
    blob = json.dumps({"folder": folder(), "python": sys.executable, "path": path, "env": sorted(env.items())})
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def socket_path(env: dict[str, str] | None = None) -> Path | None:
    folder = runtime_dir()
    return None if folder is None else folder / f"zygote-{key(env)}.sock"


# -- messages: a 4-byte length, then JSON ---------------------------------------------------------------


def _send(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    payload = _HEADER.pack(len(data)) + data
    if fds:
        socket.send_fds(sock, [payload], fds)
    else:
        sock.sendall(payload)


def _recv_exact(sock: socket.socket, n: int, buf: bytes = b"") -> bytes:
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def _recv(sock: socket.socket, with_fds: bool = False) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(sock, 65536, 3) if with_fds else (sock.recv(65536), [], 0, None)
    if not data:
        raise EOFError("connection closed")
    data = _recv_exact(sock, _HEADER.size, data)
    (n,) = _HEADER.unpack(data[: _HEADER.size])
    body = _recv_exact(sock, _HEADER.size + n, data)[_HEADER.size :]
    return json.loads(body), fds


# -- the command's side -----------------------------------------------------------------------------------


def hand_over(argv: list[str], entry: str, preload: tuple[str, ...] = ()) -> int | None:
    """Run ``entry`` (``module:function``, the command's own main) with ARGV in a warm zygote and
    return its exit status, or None when no zygote serves this environment (then the caller runs
    the command itself, and ``start_wanted`` starts a zygote that imports ``preload`` for the next
    command once this one is known to do work)."""
    if not enabled() or _in_child:
        return None
    path = socket_path()
    if path is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        request = {
            "argv": argv,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "path": sys.path,
            "python": sys.executable,
        }
        _send(sock, request, fds=[0, 1, 2])
        reply, _ = _recv(sock)
    except (OSError, EOFError, ValueError):
        sock.close()
        _wanted[:] = [(path, entry, preload, dict(os.environ))]
        return None
    if "pid" not in reply:  # stale (an edited source file): it has exited; a fresh one is wanted
        sock.close()
        _wanted[:] = [(path, entry, preload, dict(os.environ))]
        return None
    child = int(reply["pid"])
    return _follow(sock, child)


def _follow(sock: socket.socket, child: int) -> int:
    """Forward signals to the command's process ``child`` until it ends; its exit status."""

    def forward(signum, frame):  # Ctrl-C reaches this process only: the child is in another session
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    try:
        while True:
            try:
                message, _ = _recv(sock)
            except InterruptedError:
                continue
            if message.get("signal"):  # killed outright: the zygote reaped it
                sys.stderr.write(
                    f"bottlenecks: the run's process (pid {child}) was killed by {message['signal']}: nothing could "
                    "close its runs. The next `bottlenecks run`, `plan`, `history` or `ui` in this folder closes "
                    "them: the pipeline run KILLED in MLflow and Crashed in Prefect, each step run whose result "
                    "was recorded FINISHED (its task run Completed), the others KILLED (Crashed). A rerun "
                    "resumes from the cache\n"
                )
            return int(message["rc"])
    except (OSError, EOFError, ValueError, KeyError):
        sys.stderr.write(f"bottlenecks: the run's process (pid {child}) ended without an exit status\n")
        return 1
    finally:
        sock.close()


def start_wanted() -> bool:
    """Start the zygote ``hand_over`` found missing, now that the command will do work (its pipeline is
    valid, its servers answer); a command refused before that starts none. Whether one was started."""
    if not _wanted:
        return False
    start(*_wanted.pop())
    return True


def start(path: Path, entry: str, preload: tuple[str, ...] = (), env: dict[str, str] | None = None) -> None:
    """Start a zygote for this environment (``env``, default this process's) in the background (it exits
    at once if one runs)."""
    log = path.with_suffix(".log")
    cmd = [
        sys.executable,
        "-m",
        "flows.services.daemon",
        "serve",
        str(path),
        "--entry",
        entry,
        "--preload",
        ",".join(preload),
        "--folder",
        folder(),
    ]
    try:
        with open(log, "ab") as fh:
            subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=fh,
                start_new_session=True,
                env=dict(os.environ if env is None else env),
                close_fds=True,
            )
    except OSError:
        pass


def stop(env: dict[str, str] | None = None) -> int | None:
    """Stop the zygote serving this folder and environment; its pid, or None when none ran."""
    path = socket_path(env)
    return None if path is None else _ask_stop(path)


def stop_folder(served: str | None = None) -> list[int]:
    """Stop every zygote of this user that serves ``served`` (default: this folder), whatever its
    environment; their pids. Zygotes of other folders keep serving."""
    served = served or folder()
    return [pid for pid in (_ask_stop(Path(z["socket"])) for z in zygotes() if z.get("folder") == served) if pid]


def _request(path: Path, message: dict, timeout: float = 10.0) -> dict | None:
    """Send one message to the zygote at ``path``; its reply, or None when none answers."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
        _send(sock, message)
        reply, _ = _recv(sock)
        return reply
    except (OSError, EOFError, ValueError):
        return None
    finally:
        sock.close()


def _ask_stop(path: Path) -> int | None:
    reply = _request(path, {"stop": True})
    pid = int(reply.get("stopped", 0)) if reply else 0
    if pid:
        _wait_gone(pid)
    return pid or None


def _wait_gone(pid: int, timeout: float = 10.0) -> None:
    """Until ``pid`` has exited (a stopped zygote removes its socket on the way out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        except PermissionError:
            return
        time.sleep(0.05)


def sockets() -> list[Path]:
    """Every zygote socket in this user's runtime folder, whatever environment started it."""
    folder = runtime_dir()
    return [] if folder is None else sorted(folder.glob("zygote-*.sock"))


def stop_all() -> list[int]:
    """Stop every zygote of this user that answers; their pids."""
    return [pid for pid in (_ask_stop(path) for path in sockets()) if pid]


def resident_kib(pid: int) -> int | None:
    """The resident memory of ``pid`` in KiB (/proc/PID/status VmRSS), or None when unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def zygotes() -> list[dict]:
    """Each zygote of this user that answers: ``socket``, ``pid``, ``rss_kib``, ``idle`` (seconds
    since it last served a command, or since it started), ``idle_limit`` (the idle seconds it exits
    after), ``folder`` and ``python`` (what it serves;
    None from a zygote of an older version). Asking does not reset its idle timeout."""
    found = []
    for path in sockets():
        reply = _request(path, {"status": True}, timeout=5.0)
        if not reply or "pid" not in reply:
            continue
        pid = int(reply["pid"])
        found.append(
            {
                "socket": str(path),
                "pid": pid,
                "rss_kib": resident_kib(pid),
                "idle": reply.get("idle"),
                "idle_limit": reply.get("idle_limit"),
                "folder": reply.get("folder"),
                "python": reply.get("python"),
            }
        )
    return found


# -- the zygote -------------------------------------------------------------------------------------------


def preload(modules: list[str]) -> None:
    """Import what a run imports (``modules``, then ``BOTTLENECKS_DAEMON_PRELOAD``), and nothing
    that starts a thread or opens a connection; then call the ``warm_up()`` of each of ``modules``
    that has one."""
    import shutil
    import tempfile

    from flows import home

    # the libraries read their logging and telemetry settings at import: the same ones as a run
    scratch = tempfile.mkdtemp(prefix="bottlenecks-zygote-")
    os.environ.setdefault("BOTTLENECKS_HOME", scratch)
    home.configure()
    for name in modules:  # the command's own: a failure here is a broken install, not a plugin's
        importlib.import_module(name)
    for name in modules:  # work every command would repeat, done once here (no thread, file or connection)
        warm_up = getattr(sys.modules[name], "warm_up", None)
        if callable(warm_up):
            warm_up()
    for name in filter(None, (n.strip() for n in os.environ.get("BOTTLENECKS_DAEMON_PRELOAD", "").split(","))):
        try:  # a plugin package with heavy imports of its own
            importlib.import_module(name)
        except Exception as e:  # the command imports it again and reports the error itself
            print(f"zygote: could not preload {name}: {e}", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)


def resolve(entry: str) -> Callable[[], None]:
    """The function ``module:function`` names."""
    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)


def fingerprint() -> dict[str, tuple[int, int]]:
    files = {}
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if name:
            try:
                st = os.stat(name)
            except OSError:
                continue
            files[name] = (st.st_mtime_ns, st.st_size)
    return files


def changed(files: dict[str, tuple[int, int]]) -> str | None:
    for name, stamp in files.items():
        try:
            st = os.stat(name)
        except OSError:
            return name
        if (st.st_mtime_ns, st.st_size) != stamp:
            return name
    return None


_served: dict[str, str] = {}  # in a zygote: the folder and interpreter it serves
_NOT_OURS = ("the folder differs", "the interpreter differs")


def serve(path: Path, entry: str, modules: list[str], served: str | None = None) -> None:
    """Serve commands started in ``served`` (default: this folder) on the socket at ``path`` until
    idle or stopped: each runs ``entry``."""
    _served.update(folder=os.path.realpath(served or os.getcwd()), python=sys.executable)
    lock = open(path.with_suffix(".lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another zygote serves this environment
    env = stable_env(dict(os.environ))
    preload(modules)
    main = resolve(entry)
    files = fingerprint()
    threads = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if threads:  # forking with other threads alive could copy a held lock into every child
        print(f"zygote: not serving, threads started at import: {threads}", flush=True)
        return
    retired = retire_others(path)  # one per folder: this one replaces those of another environment
    if retired:
        print(f"zygote: retired this folder's other warm process(es) {retired}", flush=True)
    server = _listen(path)
    try:
        _serve_loop(server, lock, files, env, main)
    finally:
        try:
            if path.exists() and server.fileno() >= 0:
                path.unlink()
        except OSError:
            pass


def retire_others(path: Path) -> list[int]:
    """Ask the other zygotes serving this zygote's folder (another environment or interpreter) to
    retire: one warm process per folder. Their pids."""
    served = _served.get("folder") or folder()
    pids = []
    for other in sockets():
        if other == path:
            continue
        reply = _request(other, {"status": True}, timeout=5.0)
        if not reply or reply.get("folder") != served:
            continue
        answer = _request(other, {"retire": True}, timeout=5.0)
        if answer and answer.get("retiring"):
            pids.append(int(answer["retiring"]))
    return pids


def _retire(server: socket.socket, lock) -> None:
    """Take no more commands (the socket and the lock go, so a fresh zygote may take this key), then
    wait for the commands still running in children to end."""
    name = server.getsockname()
    server.close()
    try:
        os.unlink(name)
    except OSError:
        pass
    lock.close()
    print(f"zygote: retired (another serves this folder), {len(_children)} command(s) still running", flush=True)
    while _children:
        time.sleep(0.2)


def _listen(path: Path) -> socket.socket:
    """Bind the socket at ``path`` (in place of a stale file); children are reaped, SIGTERM exits."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(16)
    signal.signal(signal.SIGCHLD, _reap)  # children are reaped here, and one killed outright is told of
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    print(f"zygote {os.getpid()} serving {path} (idle timeout {idle_seconds():.0f} s)", flush=True)
    return server


def _serve_loop(server: socket.socket, lock, files: dict, env: dict[str, str], main: Callable[[], None]) -> None:
    """Answer status and stop requests, and fork a child per command, until idle, stopped or stale."""
    idle = idle_seconds()
    last = time.monotonic()  # when it last served a command (a status or a failed request does not count)
    while True:
        server.settimeout(max(0.01, idle - (time.monotonic() - last)))
        try:
            conn, _ = server.accept()
        except socket.timeout:
            print("zygote: idle, exiting", flush=True)
            return
        conn.settimeout(10)
        try:
            request, fds = _recv(conn, with_fds=True)
        except (OSError, EOFError, ValueError):
            conn.close()
            continue
        if request.get("stop"):
            _send(conn, {"stopped": os.getpid()})
            conn.close()
            return
        if request.get("retire"):
            _send(conn, {"retiring": os.getpid()})
            _let_go(conn, fds)
            _retire(server, lock)
            return
        if request.get("status"):
            _answer_status(conn, fds, last)
            continue
        last = time.monotonic()
        why = _staleness(request, files, env)
        if why is not None or len(fds) != 3:
            _send(conn, {"stale": why or "no terminal descriptors"})
            _let_go(conn, fds)
            if why is not None and why not in _NOT_OURS:  # another folder's command: refused, still serving here
                print(f"zygote: stale ({why}), exiting", flush=True)
                return
            continue
        _fork(server, lock, conn, request, fds, main)


def _let_go(conn: socket.socket, fds: list[int]) -> None:
    """Close a request's connection and the descriptors it passed."""
    conn.close()
    for fd in fds:
        os.close(fd)


def _answer_status(conn: socket.socket, fds: list[int], last: float) -> None:
    """Say this zygote's pid and how long since it last served a command."""
    try:
        idle = round(time.monotonic() - last, 1)
        _send(conn, {"pid": os.getpid(), "idle": idle, "idle_limit": idle_seconds(), **_served})
    except OSError:
        pass
    _let_go(conn, fds)


def _staleness(request: dict, files: dict[str, tuple[int, int]], env: dict[str, str]) -> str | None:
    """Why a command cannot run here: a module file changed since preload, or its folder, interpreter
    or environment differs."""
    why = changed(files)
    if why is None and _served and os.path.realpath(request.get("cwd", "")) != _served["folder"]:
        why = "the folder differs"
    if why is None and _served and request.get("python") != _served["python"]:
        why = "the interpreter differs"
    if why is None and stable_env(request.get("env", {})) != env:
        why = "the environment differs"
    return why


_children: dict[int, socket.socket] = {}  # in a zygote: each running child's connection to its command


def _reap(signum=None, frame=None) -> None:
    """Collect ended children; tell the command of one that a signal killed before it could report
    (SIGKILL, the OOM killer): its exit status is 128 + the signal."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = _children.pop(pid, None)
        if conn is None:
            continue
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            try:
                conn.settimeout(2)
                _send(conn, {"rc": 128 + number, "signal": signal.Signals(number).name})
            except (OSError, ValueError):
                pass
        conn.close()


def _fork(server: socket.socket, lock, conn: socket.socket, request: dict, fds: list[int], main) -> None:
    """Fork the command's process; the zygote closes its copies of the descriptors and keeps the
    connection until the child ends (to report a child killed outright)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # reaped only once it is in _children
    try:
        pid = os.fork()
        if pid == 0:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            server.close()
            lock.close()
            for other in _children.values():  # other commands' connections: theirs alone
                other.close()
            _children.clear()
            _child(conn, request, fds, main)  # never returns
        for fd in fds:
            os.close(fd)
        _children[pid] = conn
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})


def _child(conn: socket.socket, request: dict, fds: list[int], main: Callable[[], None]) -> None:
    """Become the command: its descriptors, folder, environment and arguments; report the exit status."""
    rc = 1
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[:] = request["path"]
        sys.argv = ["bottlenecks", *request["argv"]]
        global _in_child
        _in_child = True
        conn.settimeout(None)
        _send(conn, {"pid": os.getpid()})
        threading.Thread(target=_watch, args=(conn,), name="bottlenecks-command", daemon=True).start()
        try:
            main()
            rc = 0
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except KeyboardInterrupt:
            rc = 130
        except BaseException:
            import traceback

            traceback.print_exc()
            rc = 1
        try:
            import atexit

            atexit._run_exitfuncs()
        except BaseException:
            pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        try:
            _send(conn, {"rc": rc})
        except OSError:
            pass
    finally:
        os._exit(rc)


def _watch(conn: socket.socket) -> None:
    """The command went away (killed, its terminal closed): stop as if it had sent SIGTERM."""
    try:
        while conn.recv(1):
            pass
    except OSError:
        pass
    os.environ["BOTTLENECKS_STOPPED_BY"] = (
        "SIGTERM (the command's own process went away: killed, or its terminal closed)"
    )
    os.kill(os.getpid(), signal.SIGTERM)


def main() -> None:
    parser = argparse.ArgumentParser(description="the warm process `bottlenecks run` hands its work to")
    sub = parser.add_subparsers(dest="command", required=True)
    serve_cmd = sub.add_parser("serve")
    serve_cmd.add_argument("socket")
    serve_cmd.add_argument("--entry", required=True, help="module:function each command runs")
    serve_cmd.add_argument("--preload", default="", help="modules to import once, comma-separated")
    serve_cmd.add_argument("--folder", default=None, help="the folder whose commands it serves (default: this one)")
    args = parser.parse_args()
    from flows.services import daemon  # run as flows.services.daemon, not __main__: the child reads this module's flag

    daemon.serve(Path(args.socket), args.entry, [m for m in args.preload.split(",") if m], args.folder)


if __name__ == "__main__":
    main()
