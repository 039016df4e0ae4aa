"""``bottlenecks stop`` and ``bottlenecks ui``: the processes that serve a folder."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Annotated

import typer
from rich.markup import escape

from flows import home
from flows.cli.app import app, close_dead_runs, err, out


@app.command()
def stop(
    list_: Annotated[
        bool,
        typer.Option(
            "--list", help="show every warm process and background server and the folder each serves; stop nothing"
        ),
    ] = False,
    all_: Annotated[
        bool,
        typer.Option("--all", help="stop every warm process and background Prefect server of yours, whatever folder"),
    ] = False,
) -> None:
    """Stop the warm processes that serve this folder's runs (whatever environment started them) and this
    folder's background Prefect server; other folders' keep serving (the next `bottlenecks run` here starts
    them again)."""
    from flows.services import daemon, prefect_server

    if list_:
        _list_processes()
        return
    if all_:
        pids = daemon.stop_all()
        for pid in pids:
            out.print(f"stopped a warm process runs were handed to (pid {pid})", highlight=False)
        if not pids:
            out.print("no warm process was running")
        homes = sorted({*prefect_server.homes(), home.home()})
        stopped = [(folder, prefect_server.stop(folder)) for folder in homes if folder.is_dir()]
        for folder, record in stopped:
            if record:
                out.print(
                    f"stopped the background Prefect server of {escape(str(folder))} at {record['url']} "
                    f"(pid {record['pid']})",
                    highlight=False,
                )
        if not any(record for _, record in stopped):
            out.print("no background Prefect server was running")
        return
    pids = daemon.stop_folder()
    for pid in pids:
        out.print(f"stopped the warm process that served this folder (pid {pid})", highlight=False)
    if not pids:
        out.print("no warm process served this folder")
    others = len(daemon.zygotes())
    if others:
        out.print(
            f"{others} warm process(es) of other folders or older versions left running "
            "(`bottlenecks stop --all` stops them)"
        )
    record = prefect_server.stop(home.home())
    if record:
        out.print(f"stopped the background Prefect server at {record['url']} (pid {record['pid']})", highlight=False)
    else:
        out.print("no background Prefect server was running here")


def _memory(kib: int | None) -> str:
    return "?" if kib is None else f"{kib / 1024:.0f} MiB"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def _prefect_idle(folder) -> str:
    """How long no command has used this folder's background server ("in use" while one does)."""
    import time

    from flows.services import prefect_server

    users = folder / prefect_server.USERS
    try:
        if prefect_server._in_use(users):
            return "in use"
        return _duration(time.time() - users.stat().st_mtime)
    except OSError:
        return "?"


def _limit(seconds) -> str:
    """The idle time a process exits after, "?" from one of an older version that does not say."""
    return "?" if seconds is None else _duration(float(seconds))


def _list_processes() -> None:
    """``stop --list``: one line per warm process and background server: pid, memory, idle time, the idle
    time it exits after, where."""
    from flows.services import daemon, prefect_server

    rows = [
        (
            "warm process",
            z["pid"],
            _memory(z["rss_kib"]),
            _duration(z["idle"]),
            _limit(z.get("idle_limit")),
            f"{z['folder']} ({z['python']})" if z.get("folder") else f"? (an older version; {z['socket']})",
        )
        for z in daemon.zygotes()
    ]
    for folder in sorted({*prefect_server.homes(), home.home()}):
        record = prefect_server.read_record(folder)
        if record and record.get("pid") and prefect_server._ours(int(record["pid"])):
            pid = int(record["pid"])
            where = f"{folder} ({record.get('url', '')})"
            memory, limit = _memory(daemon.resident_kib(pid)), _limit(record.get("idle_limit"))
            rows.append(("Prefect server", pid, memory, _prefect_idle(folder), limit, where))
    if not rows:
        out.print("no warm process or background server is running")
        return
    head = f"{'process':<15} {'pid':>8} {'memory':>9} {'idle':>8} {'exits idle':>10}  serves the folder"
    out.print(head, highlight=False)
    for what, pid, memory, idle, limit, where in rows:
        out.print(f"{what:<15} {pid:>8} {memory:>9} {idle:>8} {limit:>10}  {escape(where)}", highlight=False)
    out.print("(each exits after its idle time without a command, or on `bottlenecks stop`)", highlight=False)


@app.command()
def ui(
    port: Annotated[
        int | None,
        typer.Option(
            help="port on 127.0.0.1 (default: the one this folder's UI last used, else 5000, else a free one)"
        ),
    ] = None,
    prefect: Annotated[
        bool,
        typer.Option(
            "--prefect",
            help="open this folder's Prefect UI instead (its background server, started if needed, kept "
            "while this command runs); nothing is run",
        ),
    ] = False,
) -> None:
    """Open the MLflow UI on this project's store (or print where the configured server is);
    `--prefect`: the folder's Prefect UI, where the flow runs of its pipelines are."""
    home.configure()
    close_dead_runs()  # the UIs show no run left RUNNING by a process that is gone
    if prefect:
        raise typer.Exit(_prefect_ui())
    uri = os.environ["MLFLOW_TRACKING_URI"]
    if uri.startswith("http"):
        out.print(f"MLflow is a server here: open {uri}")
        return
    cmd = [
        sys.executable,
        "-m",
        "mlflow",
        "ui",
        "--backend-store-uri",
        uri,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    root = home.artifact_root()
    if root:
        cmd += ["--default-artifact-root", root]
    from flows.services import mlflow_db

    port = _ui_port(port)
    cmd[cmd.index("--port") + 1] = str(port)
    mlflow_db.prepare(uri, artifact_root=root)  # a new folder's store from the template, not migrated anew
    out.print(f"MLflow UI on http://127.0.0.1:{port} (Ctrl-C to stop)")
    from flows.track.runs import experiment_links

    out.print("\n".join(experiment_links(f"http://127.0.0.1:{port}")), highlight=False)
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    raise typer.Exit(_serve_until_signalled(cmd, env))


def _ui_port(asked: int | None) -> int:
    """The port to serve on: the asked one, refused when taken (exit 1, naming a free one); else the
    folder's last, else 5000, else a free one. Recorded in the state folder, so that `run`'s links
    point at this folder's UI and never at another process on the same port."""
    from flows.services import ports
    from flows.track import links

    last = links.local_ui().rsplit(":", 1)[1]
    if asked is not None and ports.taken(asked):
        err.print(
            f"port {asked} is taken by another process (another folder's `bottlenecks ui`?); its links would "
            f"open that process's pages. Serve this folder's store on a free port: "
            f"bottlenecks ui --port {ports.free_port()}",
            highlight=False,
        )
        raise typer.Exit(1)
    port = asked if asked is not None else int(last)
    if ports.taken(port):
        chosen = ports.free_port()
        out.print(f"port {port} is taken by another process: serving on {chosen} instead", highlight=False)
        port = chosen
    folder = home.home()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / links.UI_PORT_FILE).write_text(f"{port}\n")
    return port


def _prefect_ui() -> int:
    """Start (or find) the folder's background Prefect server, print its UI and hold it until Ctrl-C:
    while this command runs the server never stops for idleness; after it, the idle clock starts."""
    import signal

    from flows.services import prefect_server

    configured = os.environ.get("PREFECT_API_URL")
    if configured:
        out.print(f"Prefect is a server here: open {configured.removesuffix('/api')}", highlight=False)
        return 0
    if not prefect_server.enabled():
        err.print(
            "no background Prefect server in this folder (BOTTLENECKS_PREFECT_SERVER=off): each run uses a "
            "temporary server inside the command, gone with it; unset it to keep one"
        )
        return 1
    try:
        url = prefect_server.use(home.home())
    except prefect_server.ServerError as e:
        err.print(f"the folder's Prefect server did not start: {e}")
        return 1
    idle = prefect_server.idle_seconds()
    out.print(f"Prefect UI {url.removesuffix('/api')}", highlight=False)
    out.print(
        f"kept running while this command runs (Ctrl-C to leave it); then it stops itself after {idle / 60:.0f} "
        "minutes without a command, or on `bottlenecks stop`",
        highlight=False,
    )
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.append(True))
    while not stop and prefect_server.healthy(url, timeout=5.0):
        time.sleep(1.0)
    if not stop:
        err.print("the Prefect server went away (`bottlenecks stop`, or its process ended)")
        return 1
    return 0


def _serve_until_signalled(cmd: list[str], env: dict[str, str]) -> int:
    """Run MLflow's server in a process group of its own and take the whole group down with this
    command: on SIGTERM, SIGINT (Ctrl-C) or SIGHUP, and when it exits any other way."""
    import signal

    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    got: list[int] = []

    def on_signal(signum, frame):  # only ask: the main thread's wait returns once the server has exited
        got.append(signum)
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        rc = proc.wait()
    finally:
        _stop_group(proc)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 + got[0] if got else rc


def _stop_group(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Terminate the server's process group (its workers too), killing what outlives ``timeout``."""
    import signal

    for signum in (signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None and not _group_alive(proc.pid):
            return
        try:
            os.killpg(proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_alive(proc.pid):
                return
            time.sleep(0.05)


def _group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process is left in the process group ``pgid``."""
    from pathlib import Path

    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False
