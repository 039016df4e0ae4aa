"""`bottlenecks serve` on one machine with nothing but the project: `schedule` starts the folder's
Prefect server, `serve` uses it and runs the schedules, one Prefect flow run per slot, and stops in
one line on SIGTERM even after its schedule was removed."""

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import mlflow
import pytest

from tests.support.servers import api

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def env_for(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_"))}
    env.update(
        {
            "BOTTLENECKS_HOME": str(tmp_path / "home"),
            "PREFECT_HOME": str(tmp_path / "prefect"),
            "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
            "COLUMNS": "250",
            "PREFECT_RUNNER_POLL_FREQUENCY": "1",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "BOTTLENECKS_PREFECT_SERVER": "on",  # one server for schedule and serve, not one each
            "BOTTLENECKS_PREFECT_IDLE": "120",
            # the served run's step in its own threads: a pool of worker processes adds seconds, and
            # serving does not depend on the executor
            "BOTTLENECKS_EXECUTOR": "threads",
        }
    )
    return env


def bottlenecks(*args):
    exe = Path(sys.executable).parent / "bottlenecks"
    return [str(exe), *args] if exe.exists() else [sys.executable, "-m", "flows.cli", *args]


def test_serve_runs_each_slot_as_one_flow_run_and_stops_cleanly(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        textwrap.dedent("""\
        name: local-nightly
        schedule: {cron: "0 2 * * *"}
        steps:
          nums: {uses: tests.support.engine_components:numbers, with: {n: 2}}
        """)
    )
    env = env_for(tmp_path)
    try:
        made = subprocess.run(
            bottlenecks("schedule", str(path)), cwd=REPO, env=env, text=True, capture_output=True, timeout=240
        )
        assert made.returncode == 0, made.stdout + made.stderr
        assert "starting the Prefect server ..." in made.stderr and "Prefect server up in" in made.stderr
        assert "runs start only while `bottlenecks serve` is running" in made.stderr
        url, lines, proc = _serve(env)
        run = _run_once(url, lines)
        removed = subprocess.run(
            bottlenecks("schedule", "--remove", "local-nightly"), cwd=REPO, env=env, capture_output=True, timeout=120
        )
        assert removed.returncode == 0, removed.stderr
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, "".join(lines)
        deadline = time.monotonic() + 30  # the reader thread takes the last lines (late on a loaded machine)
        while not (lines and lines[-1].startswith("stopped serving")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert lines[-1].startswith("stopped serving on SIGTERM"), "".join(lines)
        assert "Traceback" not in "".join(lines)
    finally:
        _stop(proc if "proc" in locals() else None, tmp_path)
    client = mlflow.MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    runs = client.search_runs(
        [client.get_experiment_by_name("local-nightly").experiment_id], "tags.pipeline = 'local-nightly'"
    )
    assert {r.data.tags.get("mlflow.runName") for r in runs} == {"local-nightly", "nums"}
    parent = next(r for r in runs if r.data.tags["mlflow.runName"] == "local-nightly")
    assert parent.data.tags["prefect_flow_run_id"] == run["id"]  # the slot's own flow run


def _serve(env):
    """Start `bottlenecks serve`; its Prefect API URL, its output lines (as they come) and its process."""
    proc = subprocess.Popen(
        bottlenecks("serve"),
        cwd=REPO,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True).start()
    deadline, url = time.monotonic() + 180, None
    while url is None and time.monotonic() < deadline and proc.poll() is None:
        found = [m.group(1) for line in list(lines) if (m := re.search(r"Prefect API at (\S+)", line))]
        url = found[0] if found else None
        time.sleep(0.2)
    assert url and url.startswith("http://127.0.0.1:"), "".join(lines)
    return url, lines, proc


def _run_once(url: str, lines: list[str]) -> dict:
    """Ask the served deployment for a run now; wait for it; the slot's only flow run."""
    dep = api("POST", f"{url}/deployments/filter", {"deployments": {"name": {"any_": ["local-nightly"]}}})[0]
    run = api("POST", f"{url}/deployments/{dep['id']}/create_flow_run", {})
    deadline, state = time.monotonic() + 180, None
    while time.monotonic() < deadline:
        state = api("GET", f"{url}/flow_runs/{run['id']}")["state_type"]
        if state in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
            break
        time.sleep(0.3)
    if state != "COMPLETED":  # what the flow run itself said, for the failure message
        logs = api("POST", f"{url}/logs/filter", {"logs": {"flow_run_id": {"any_": [run["id"]]}}, "limit": 200})
        said = "\n".join(f"{x['level']} {x['message']}" for x in logs)
        raise AssertionError(f"{''.join(lines)}\nstate {state}; flow-run logs:\n{said}")
    every = api("POST", f"{url}/flow_runs/filter", {"flow_runs": {"state": {"type": {"not_any_": ["SCHEDULED"]}}}})
    assert [r["id"] for r in every] == [run["id"]], [r["name"] for r in every]  # no second run of the slot
    tasks = api("POST", f"{url}/task_runs/filter", {"flow_runs": {"id": {"any_": [run["id"]]}}})
    assert [t["name"] for t in tasks] == ["nums"]
    return run


def _stop(proc, tmp_path) -> None:
    """End serve if it still runs, and the folder's background server."""
    from flows.services import prefect_server

    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    prefect_server.stop(tmp_path / "home")
