"""`bottlenecks stop` ends the warm process that serves its folder (one per folder: another environment's
retires it), and leaves other folders' serving; `stop --all` ends every one of the user's; `bottlenecks stop
--list` shows them and their folders without stopping anything; make's own variables do not split one
environment into two zygotes."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.warm import wait_serving, warm_env

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md


@pytest.fixture
def base_env(tmp_path):
    with warm_env(tmp_path) as env:
        yield env


def _start_zygote(env: dict, folder: Path) -> Path:
    """Start the zygote of ``env`` as `bottlenecks run` does and wait until it serves; its socket."""
    code = "from flows.services import daemon; p = daemon.socket_path(); daemon.start(p, 'flows.cli:main'); print(p)"
    sock = Path(
        subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=folder, capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    return wait_serving(sock)


def _pid(sock: Path) -> int:
    line = [x for x in sock.with_suffix(".log").read_text().splitlines() if "serving" in x][-1]
    return int(line.split()[1])  # "zygote PID serving SOCKET ..."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (not yet reaped by its parent) is gone for our purposes
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _cli(env, folder, *args):
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120
    )


def test_another_environment_retires_the_folders_zygote_and_list_shows_the_one_left(base_env, tmp_path):
    one = {**base_env, "BN_TEST_SETTING": "one"}
    two = {**base_env, "BN_TEST_SETTING": "two"}
    sock_one = _start_zygote(one, tmp_path)
    first = _pid(sock_one)
    sock_two = _start_zygote(two, tmp_path)  # one variable changed: it replaces the first
    assert sock_one != sock_two
    second = _pid(sock_two)
    deadline = time.monotonic() + 10
    while _alive(first) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(first) and not sock_one.exists(), sock_one.with_suffix(".log").read_text()
    assert _alive(second)

    listed = _cli(base_env, tmp_path, "stop", "--list")  # a third environment: neither zygote's own
    assert listed.returncode == 0, listed.stderr
    rows = [x for x in listed.stdout.splitlines() if x.startswith("warm process")]
    assert len(rows) == 1 and str(second) in rows[0].split(), listed.stdout
    assert "MiB" in rows[0] and "15m00s" in rows[0] and str(tmp_path.resolve()) in rows[0], listed.stdout
    assert "exits idle" in listed.stdout  # the idle time it exits after, beside its memory
    assert _alive(second), "--list stopped something"

    stopped = _cli(base_env, tmp_path, "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert f"pid {second}" in stopped.stdout, stopped.stdout
    deadline = time.monotonic() + 10
    while _alive(second) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(second) and not sock_two.exists()
    again = _cli(base_env, tmp_path, "stop", "--list")
    assert "no warm process" in again.stdout, again.stdout


def test_stop_in_one_folder_leaves_another_folders_warm_process_serving(base_env, tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    sock_here, sock_there = _start_zygote(base_env, here), _start_zygote(base_env, there)
    assert sock_here != sock_there  # one environment, two folders: two zygotes, never one for both
    pid_here, pid_there = _pid(sock_here), _pid(sock_there)

    listed = _cli(base_env, here, "stop", "--list")
    assert listed.returncode == 0, listed.stderr
    for pid, folder in ((pid_here, here), (pid_there, there)):
        (line,) = [x for x in listed.stdout.splitlines() if str(pid) in x.split()]
        assert line.split()[-2] == str(folder.resolve()), listed.stdout  # the folder, then (the interpreter)

    stopped = _cli(base_env, here, "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.splitlines() == [
        f"stopped the warm process that served this folder (pid {pid_here})",
        "1 warm process(es) of other folders or older versions left running (`bottlenecks stop --all` stops them)",
        "no background Prefect server was running here",
    ], stopped.stdout
    deadline = time.monotonic() + 10
    while _alive(pid_here) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid_here) and not sock_here.exists()
    assert _alive(pid_there) and sock_there.exists()
    from flows.services import daemon

    assert daemon._request(sock_there, {"status": True})["folder"] == str(there.resolve())  # still serving

    again = _cli(base_env, here, "stop")
    assert again.stdout.splitlines()[0] == "no warm process served this folder", again.stdout
    assert _alive(pid_there)

    everything = _cli(base_env, here, "stop", "--all")
    assert everything.returncode == 0, everything.stderr
    assert f"stopped a warm process runs were handed to (pid {pid_there})" in everything.stdout.splitlines()
    deadline = time.monotonic() + 10
    while _alive(pid_there) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid_there) and not sock_there.exists()


def test_a_zygote_refuses_a_command_of_another_folder_and_keeps_serving_its_own(base_env, tmp_path):
    from flows.services import daemon

    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    sock = _start_zygote(base_env, here)
    request = {"argv": ["--help"], "cwd": str(there), "env": base_env, "path": [], "python": sys.executable}
    with open(os.devnull) as null:
        conn = socket.socket(socket.AF_UNIX)
        conn.connect(str(sock))
        daemon._send(conn, request, fds=[null.fileno()] * 3)
        reply, _ = daemon._recv(conn)
        conn.close()
    assert reply == {"stale": "the folder differs"}
    assert daemon._request(sock, {"status": True})["folder"] == str(here.resolve())  # still serving here


def test_makes_variables_give_the_same_zygote_key(base_env, tmp_path):
    code = "from flows.services import daemon; print(daemon.key())"

    def key(env):
        return subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
        ).stdout.strip()

    under_make = {
        **base_env,
        "MAKEFLAGS": " -j4 --jobserver-auth=fifo:/tmp/GMfifo1",
        "MFLAGS": "-j4",
        "MAKELEVEL": "1",
        "MAKEOVERRIDES": "${-*-command-variables-*-}",
        "MAKE_TERMOUT": "/dev/pts/3",
        "MAKE_TERMERR": "/dev/pts/3",
    }
    assert key(under_make) == key(base_env)
    assert key({**base_env, "BN_TEST_SETTING": "x"}) != key(base_env)  # a real setting still splits them


def test_list_shows_the_folders_background_prefect_server_and_stop_stops_it(base_env, tmp_path):
    from flows.services import prefect_server

    home = tmp_path / ".bottlenecks"
    # the user's cache folder, as the suite's other commands: its migrated database template makes the
    # server's start a copy instead of a migration
    env = {k: v for k, v in base_env.items() if not k.startswith(("PREFECT_", "MLFLOW_"))}
    env.update(
        {
            "BOTTLENECKS_PREFECT_SERVER": "on",
            "BOTTLENECKS_PREFECT_IDLE": "120",
            "BOTTLENECKS_HOME": str(home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
    )
    use = (
        "from flows import home; from flows.services import prefect_server; home.configure(); "
        "print(prefect_server.use(home.home()))"
    )
    try:
        subprocess.run([sys.executable, "-c", use], cwd=tmp_path, env=env, check=True, capture_output=True, timeout=300)
        record = prefect_server.read_record(home)
        listed = _cli(env, tmp_path, "stop", "--list")
        assert listed.returncode == 0, listed.stderr
        (line,) = [x for x in listed.stdout.splitlines() if x.startswith("Prefect server")]
        assert str(record["pid"]) in line.split() and "MiB" in line and str(home) in line, listed.stdout
        assert prefect_server._ours(record["pid"]), "--list stopped the server"
        stopped = _cli(env, tmp_path, "stop")
        assert f"stopped the background Prefect server at {record['url']}" in stopped.stdout, stopped.stdout
        assert not prefect_server._ours(record["pid"])
    finally:
        record = prefect_server.read_record(home)
        if record:
            prefect_server._terminate(record)


def sleep_main() -> None:
    """What the zygote runs for the test below: write this process's pid, then wait to be killed."""
    Path(sys.argv[-1]).write_text(str(os.getpid()))
    time.sleep(120)


def test_a_command_whose_run_was_killed_outright_names_the_signal_and_exits_137(base_env, tmp_path):
    entry = "tests.services.test_stop_all:sleep_main"
    code = f"from flows.services import daemon; p = daemon.socket_path(); daemon.start(p, {entry!r}); print(p)"
    sock = Path(
        subprocess.run(
            [sys.executable, "-c", code], env=base_env, cwd=tmp_path, capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    wait_serving(sock)
    marker = tmp_path / "child.pid"
    client = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sys; from flows.services import daemon; sys.exit(daemon.hand_over([{str(marker)!r}], {entry!r}))",
        ],
        env=base_env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text()):
        assert client.poll() is None and time.monotonic() < deadline, client.communicate()
        time.sleep(0.05)
    child = int(marker.read_text())
    os.kill(child, signal.SIGKILL)
    out, err = client.communicate(timeout=30)
    assert client.returncode == 137, (out, err)
    assert err == (
        f"bottlenecks: the run's process (pid {child}) was killed by SIGKILL: nothing could close its runs. The next "
        "`bottlenecks run`, `plan`, `history` or `ui` in this folder closes them: the pipeline run KILLED in MLflow "
        "and Crashed in Prefect, each step run whose result was recorded FINISHED (its task run Completed), the "
        "others KILLED (Crashed). A rerun resumes from the cache\n"
    )  # what flows/execute/sweep.py does (tests/track/test_kill_moments.py)
    assert daemon_status(sock)["folder"] == str(tmp_path.resolve())  # the zygote serves on


def daemon_status(sock: Path) -> dict:
    from flows.services import daemon

    return daemon._request(sock, {"status": True})
