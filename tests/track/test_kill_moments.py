"""A run killed outright (SIGKILL) at any moment, then `bottlenecks plan` in its folder: nothing is left
RUNNING in MLflow or Prefect, and the two stores agree on how each run ended."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import mlflow
import pytest

from flows.ops.prefect_api import call
from flows.track import open_runs
from tests.support.zombie_components import slow_pipeline

pytestmark = pytest.mark.slow

# how an MLflow run and its Prefect run may both read once a sweep has closed them
AGREE = {"FINISHED": {"COMPLETED"}, "FAILED": {"FAILED"}, "KILLED": {"CRASHED", "CANCELLED"}}
UNFINISHED = {"RUNNING", "PENDING", "SCHEDULED", "PAUSED", "CANCELLING"}


def _env(tmp_path, home, **extra) -> dict:
    # steps in the run's threads: killing the run kills its steps too (as it ends a pool's workers)
    return {**os.environ, "BOTTLENECKS_HOME": str(home), "BOTTLENECKS_EXECUTOR": "threads", **extra}


def _killed_run(tmp_path, home, moment: str) -> tuple:
    """Run the pipeline in a process of its own and SIGKILL it at ``moment``; (pipeline, name, pid)."""
    name = f"kill-{moment.replace(':', '-')}-{uuid.uuid4().hex[:6]}"
    path, started = slow_pipeline(tmp_path, name, 120 if moment == "mid-step" else 0)
    extra = {} if moment == "mid-step" else {"BOTTLENECKS_TEST_KILL_AT": moment}
    with open(tmp_path / "log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flows.cli", "run", str(path)],
            env=_env(tmp_path, home, **extra),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 240
        if moment == "mid-step":
            while not started.exists():  # the slow step's MLflow and task runs are open
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "log").read_text()
                time.sleep(0.1)
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, (tmp_path / "log").read_text()
    return path, name, proc.pid


def _plan(path, tmp_path, home, *extra: str) -> subprocess.CompletedProcess:
    """``bottlenecks plan PATH`` in a process of its own, as a user types it after the kill."""
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", "plan", str(path), *extra],
        env=_env(tmp_path, home),
        capture_output=True,
        text=True,
        timeout=240,
    )


def _runs(name: str) -> dict:
    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name(name)
    return {r.info.run_name: r for r in client.search_runs([exp.experiment_id])}


# the moments a SIGKILL can hit: mid-step; between a step's result recorded and its MLflow run closed;
# between its MLflow run closed and its Prefect task run told; after the last step, the flow run ended
MOMENTS = ["mid-step", "step-recorded:nums", "step-finished:nums", "flow-ended"]


@pytest.mark.parametrize("moment", MOMENTS)
def test_plan_after_a_sigkill_closes_both_stores_and_they_agree(tmp_path, home, moment):
    path, name, pid = _killed_run(tmp_path, home, moment)
    before = _runs(name)
    assert before[name].info.status == "RUNNING"  # what the kill left
    assert open_runs.dead(home), "the run's note was not left behind"

    plan = _plan(path, tmp_path, home, "--json")
    assert plan.returncode == 0, plan.stderr
    assert "run(s) KILLED that a dead process had left RUNNING" in plan.stderr, plan.stderr
    assert f"its process {pid} on " in plan.stderr and "set Crashed" in plan.stderr, plan.stderr
    rows = {row["id"]: row for row in json.loads(plan.stdout)}

    runs = _runs(name)
    assert {n: r.info.status for n, r in runs.items() if r.info.status == "RUNNING"} == {}
    parent = runs[name]
    assert parent.info.status == "KILLED" and f"its process {pid} on " in parent.data.tags["bottlenecks.killed_reason"]
    flow_run_id = parent.data.tags["prefect_flow_run_id"]
    url = os.environ["PREFECT_API_URL"]
    flow_run = call(url, "GET", f"/flow_runs/{flow_run_id}")
    assert flow_run["state"]["type"] == "CRASHED", flow_run["state"]
    tasks = call(url, "POST", "/task_runs/filter", {"flow_runs": {"id": {"any_": [flow_run_id]}}})
    assert tasks and not UNFINISHED & {t["state"]["type"] for t in tasks}, [t["state"] for t in tasks]
    for task in tasks:
        step = runs.get(task["name"])
        expected = AGREE[step.info.status] if step is not None else {"CRASHED"}  # never started: no run
        assert task["state"]["type"] in expected, (task["name"], step and step.info.status, task["state"])

    # nums finished before every moment but mid-step's too: it is cached, never "not run before"
    assert runs["nums"].info.status == "FINISHED"
    assert rows["nums"]["cached"], rows["nums"]
    assert "not run before" not in plan.stdout.split('"slow"')[0]
    if moment == "flow-ended":
        assert runs["slow"].info.status == "FINISHED" and rows["slow"]["cached"]
    elif moment == "mid-step":
        assert runs["slow"].info.status == "KILLED" and not rows["slow"]["cached"]
    assert not open_runs.dead(home)  # both stores agree: the note is gone

    again = _plan(path, tmp_path, home)  # a second look closes nothing more
    assert again.returncode == 0 and "KILLED" not in again.stderr, again.stderr


def test_a_kill_after_the_run_closed_itself_keeps_both_stores_ends(tmp_path, home):
    """Killed after its parent run was closed FINISHED, before its open-run note was dropped: the next
    command finds the note, and leaves the finished run (MLflow FINISHED, Prefect COMPLETED) as it is."""
    path, name, _ = _killed_run(tmp_path, home, "parent-closed")
    before = _runs(name)
    assert before[name].info.status == "FINISHED"
    assert open_runs.dead(home), "the run's note was not left behind"

    plan = _plan(path, tmp_path, home)
    assert plan.returncode == 0 and "KILLED" not in plan.stderr, plan.stderr
    runs = _runs(name)
    assert {n: r.info.status for n, r in runs.items()} == {name: "FINISHED", "nums": "FINISHED", "slow": "FINISHED"}
    flow_run = call(os.environ["PREFECT_API_URL"], "GET", f"/flow_runs/{runs[name].data.tags['prefect_flow_run_id']}")
    assert flow_run["state"]["type"] == "COMPLETED", flow_run["state"]
    assert not open_runs.dead(home)  # they agree: the note is gone
