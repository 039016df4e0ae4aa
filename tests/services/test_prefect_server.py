"""The background Prefect server: started once, reused by later commands, stopped by `bottlenecks
stop` or when idle, replaced when its record is stale; `run` prints where to follow the run."""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from flows.services import prefect_server

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md

REPO = Path(__file__).resolve().parents[2]
USE = (
    "from flows import home; from flows.services import prefect_server; home.configure(); "
    "print(prefect_server.use(home.home()))"
)


@pytest.fixture(scope="module")
def template_cache(tmp_path_factory):
    """One migrated database template for this module's servers (not the user's cache)."""
    return tmp_path_factory.mktemp("prefect-template")


@pytest.fixture
def project(tmp_path, template_cache):
    """A project folder whose commands use a background server (stopped after the test)."""
    home = tmp_path / ".bottlenecks"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_"))}
    env.update(
        {
            "BOTTLENECKS_PREFECT_SERVER": "on",
            "BOTTLENECKS_PREFECT_IDLE": "120",
            "BOTTLENECKS_CACHE": str(template_cache),
            "BOTTLENECKS_HOME": str(home),
            "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
    )
    yield tmp_path, home, env
    record = prefect_server.read_record(home)
    if record:
        prefect_server._terminate(record)


def _command(env: dict, cwd: Path, *args: str, code: str | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "flows.cli", *args]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _alive(pid: int) -> bool:
    return prefect_server._ours(pid)


def test_commands_at_once_start_one_server_later_commands_and_runs_reuse_it_and_stop_stops_it(project):
    folder, home, env = project
    both = [
        subprocess.Popen([sys.executable, "-c", USE], cwd=folder, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    urls = {p.communicate(timeout=300)[0].strip() for p in both}
    record = prefect_server.read_record(home)
    assert urls == {record["url"]} and record["url"] == f"http://127.0.0.1:{record['port']}/api"
    assert prefect_server.healthy(record["url"])

    again = _command(env, folder, code=USE).stdout.strip()
    assert again == record["url"] and prefect_server.read_record(home)["pid"] == record["pid"]
    _run_prints_where_to_follow_it_and_prefect_shows_the_run(folder, env, record)
    assert prefect_server.read_record(home)["pid"] == record["pid"]  # the run used it too

    out = _command(env, folder, "stop").stdout
    assert f"stopped the background Prefect server at {record['url']}" in out
    assert prefect_server.read_record(home) is None
    assert not prefect_server.healthy(record["url"]) and not _alive(record["pid"])
    assert "no background Prefect server was running" in _command(env, folder, "stop").stdout


def test_a_stale_record_is_replaced(project):
    folder, home, env = project
    home.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    # a dead pid, and a live process that is not a server of ours (this test): neither is used or killed
    for pid in (dead.pid, os.getpid()):
        (home / prefect_server.RECORD).write_text(
            json.dumps({"pid": pid, "port": 9, "url": "http://127.0.0.1:9/api", "prefect_home": str(home / "prefect")})
        )
        url = _command(env, folder, code=USE).stdout.strip()
        record = prefect_server.read_record(home)
        assert url == record["url"] != "http://127.0.0.1:9/api" and record["pid"] not in (dead.pid, os.getpid())
        assert prefect_server.healthy(url)
        prefect_server.stop(home)


def test_a_new_folder_starts_from_the_migrated_database_template(project, template_cache):
    folder, home, env = project
    if not list(template_cache.glob("prefect-*.db")):  # an earlier test's server made it, else one now
        _command(env, folder, code=USE)
        prefect_server.stop(home)
    assert list(template_cache.glob("prefect-*.db"))
    other = folder / "other"
    other.mkdir()
    env = {**env, "BOTTLENECKS_HOME": str(other / ".bottlenecks")}
    try:
        url = _command(env, other, code=USE).stdout.strip()
        assert prefect_server.healthy(url)
        assert "database: copied" in (other / ".bottlenecks" / prefect_server.LOG).read_text()
    finally:
        prefect_server.stop(other / ".bottlenecks")


def test_an_idle_server_stops_itself(project):
    folder, home, env = project
    env["BOTTLENECKS_PREFECT_IDLE"] = "2"
    # the record is read inside the command: 2 s after it exits the server may be gone already
    code = USE.replace(
        "print(prefect_server.use(home.home()))",
        "prefect_server.use(home.home()); r = prefect_server.read_record(home.home()); print(r['url'], r['pid'])",
    )
    url, pid = _command(env, folder, code=code).stdout.split()
    pid = int(pid)
    deadline = time.monotonic() + 60
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _alive(pid) and prefect_server.read_record(home) is None and not prefect_server.healthy(url)


def test_not_used_when_a_prefect_server_is_configured(monkeypatch):
    monkeypatch.delenv("BOTTLENECKS_PREFECT_SERVER", raising=False)
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4200/api")
    assert not prefect_server.enabled()
    monkeypatch.delenv("PREFECT_API_URL")
    assert prefect_server.enabled()
    monkeypatch.setenv("BOTTLENECKS_PREFECT_SERVER", "off")
    assert not prefect_server.enabled()


def _run_prints_where_to_follow_it_and_prefect_shows_the_run(folder: Path, env: dict, record: dict) -> None:
    """`run` prints where to follow it (MLflow and the folder's server) before the steps run, and
    the server shows the finished flow run."""
    (folder / "tiny.yaml").write_text(
        "name: tiny\nsteps:\n  nums:\n    uses: tests.support.engine_components:numbers\n    with: {n: 2}\n"
    )
    # steps in the command's threads: a pool of worker processes adds seconds and nothing here
    err = _command({**env, "BOTTLENECKS_EXECUTOR": "threads"}, folder, "run", "tiny.yaml").stderr
    ui = record["url"].removesuffix("/api")
    mlflow_url = re.search(r"follow: MLflow http://127\.0\.0\.1:5000/#/experiments/(\w+)/runs/(\w+)", err)
    prefect_url = re.search(rf"follow: Prefect {re.escape(ui)}/runs/flow-run/([0-9a-f-]+)", err)
    assert mlflow_url and prefect_url, err
    assert err.index("follow: Prefect") < err.index("nums done")  # printed before the steps run
    assert re.search(rf"MLflow parent run {mlflow_url.group(2)}", err)
    with urllib.request.urlopen(f"{record['url']}/flow_runs/{prefect_url.group(1)}", timeout=10) as r:
        flow_run = json.loads(r.read())
    assert flow_run["state_type"] == "COMPLETED" and flow_run["name"]


def test_ui_prefect_opens_the_folders_server_without_running_anything_and_holds_it(project):
    """`bottlenecks ui --prefect` starts the folder's server, prints its UI and keeps it while it runs;
    Ctrl-C leaves the server to its idle clock; a second `ui --prefect` finds the same server."""
    tmp_path, home, env = project
    proc = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "ui", "--prefect"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = proc.stdout.readline()  # blocks until the server answers
    second = proc.stdout.readline()
    match = re.fullmatch(r"Prefect UI (http://127\.0\.0\.1:\d+)\n", first)
    assert match, (first, proc.stderr.read() if proc.poll() is not None else "")
    assert "kept running while this command runs" in second and "after 2 minutes without a command" in second
    url = match.group(1)
    assert prefect_server.healthy(url + "/api")
    assert prefect_server.read_record(home)["url"] == url + "/api"
    assert not (home / "work").exists()  # nothing was run
    proc.send_signal(2)  # Ctrl-C
    assert proc.wait(timeout=60) == 0
    assert prefect_server.healthy(url + "/api")  # the idle clock starts now; the server stays for the next
    reuse = subprocess.run(
        [sys.executable, "-c", USE], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert reuse.stdout.strip() == url + "/api"  # the next command finds the same server
