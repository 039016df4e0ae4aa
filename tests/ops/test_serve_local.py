"""`bottlenecks serve` on one machine with nothing but the project: it starts a local Prefect
server over the project's store and runs the schedules made with `bottlenecks schedule`."""

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
        }
    )
    return env


def bottlenecks(*args):
    exe = Path(sys.executable).parent / "bottlenecks"
    return [str(exe), *args] if exe.exists() else [sys.executable, "-m", "flows.cli", *args]


def test_serve_starts_a_local_server_and_runs_the_schedule(tmp_path):
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
    made = subprocess.run(
        bottlenecks("schedule", str(path)), cwd=REPO, env=env, text=True, capture_output=True, timeout=240
    )
    assert made.returncode == 0, made.stdout + made.stderr
    assert "runs start only while `bottlenecks serve` is running" in made.stderr

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
    try:
        deadline = time.monotonic() + 180
        url = None
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            found = [m.group(1) for line in list(lines) if (m := re.search(r"Prefect API at (\S+)", line))]
            url = found[0] if found else None
            time.sleep(0.5)
        assert url and url.startswith("http://127.0.0.1:"), "".join(lines)
        dep = api("POST", f"{url}/deployments/filter", {"deployments": {"name": {"any_": ["local-nightly"]}}})[0]
        run = api("POST", f"{url}/deployments/{dep['id']}/create_flow_run", {})
        state = None
        while time.monotonic() < deadline:
            state = api("GET", f"{url}/flow_runs/{run['id']}")["state_type"]
            if state in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
                break
            time.sleep(1)
        if state != "COMPLETED":  # what the flow run itself said, for the failure message
            detail = api("GET", f"{url}/flow_runs/{run['id']}")
            logs = api("POST", f"{url}/logs/filter", {"logs": {"flow_run_id": {"any_": [run["id"]]}}, "limit": 200})
            said = "\n".join(f"{x['level']} {x['message']}" for x in logs)
            message = (detail.get("state") or {}).get("message")
        assert state == "COMPLETED", f"{''.join(lines)}\nstate message: {message}\nflow-run logs:\n{said}"
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    client = mlflow.MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    runs = client.search_runs(
        [client.get_experiment_by_name("local-nightly").experiment_id], "tags.pipeline = 'local-nightly'"
    )
    assert {r.data.tags.get("mlflow.runName") for r in runs} == {"local-nightly", "nums"}
    with pytest.raises(OSError):  # the local server went away with `serve`
        api("GET", f"{url}/health", timeout=3)


def test_serve_without_schedules_says_how_to_make_one(tmp_path):
    done = subprocess.run(
        bottlenecks("serve"), cwd=REPO, env=env_for(tmp_path), text=True, capture_output=True, timeout=240
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("nothing to serve: create a schedule with `bottlenecks schedule PIPELINE")
