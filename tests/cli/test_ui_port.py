"""`bottlenecks ui` never prints a link to another process's server: a taken port asked for is refused
with a free one to use; the folder's usual port taken, it serves on a free one, and the folder's links
(the ones `run` prints) follow it."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.services import ports
from flows.track import links

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def held():
    """A port another process listens on."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    yield s.getsockname()[1]
    s.close()


def ui(tmp_path, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "BOTTLENECKS_HOME"))}
    env.update({"BOTTLENECKS_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)})
    return subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "ui", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def test_a_listening_port_is_taken_and_a_free_one_is_not(held):
    assert ports.taken(held)
    assert not ports.taken(ports.free_port())


def test_ui_on_a_taken_port_exits_1_and_names_a_free_one(tmp_path, held):
    proc = ui(tmp_path, "--port", str(held))
    said, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, said
    assert f"port {held} is taken by another process" in said
    assert "bottlenecks ui --port " in said and "MLflow UI on" not in said
    free = int(said.rsplit("--port ", 1)[1].split()[0])
    assert free != held and not ports.taken(free)


def test_the_folders_port_taken_ui_serves_on_a_free_one_and_the_links_follow(tmp_path, held):
    home = tmp_path / "home"
    home.mkdir()
    (home / links.UI_PORT_FILE).write_text(f"{held}\n")  # where this folder's UI served last time
    proc = ui(tmp_path)
    try:
        deadline, lines = time.monotonic() + 120, []
        while not any("MLflow UI on" in line for line in lines):
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "".join(lines)
            lines.append(line)
            assert time.monotonic() < deadline, "".join(lines)
        text = "".join(lines)
        assert f"port {held} is taken by another process: serving on " in text
        chosen = int(text.split("serving on ", 1)[1].split()[0])
        assert f"MLflow UI on http://127.0.0.1:{chosen} " in text
        assert links.local_ui(home) == f"http://127.0.0.1:{chosen}"  # what `run` links to from now on
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=60)


def test_run_links_use_the_folders_ui_port(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv(links.UI_ENV, raising=False)
    monkeypatch.setenv("BOTTLENECKS_HOME", str(tmp_path))
    assert links.mlflow_run("1", "abc").startswith("http://127.0.0.1:5000/#/experiments/1/runs/abc")
    (tmp_path / links.UI_PORT_FILE).write_text("5123\n")
    assert links.mlflow_run("1", "abc").startswith("http://127.0.0.1:5123/#/experiments/1/runs/abc")
