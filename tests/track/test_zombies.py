"""Runs left RUNNING by a dead process are marked KILLED; `history` flags a killed newest run."""

import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import mlflow
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.execute.runner import run
from flows.plan.build import build
from flows.track import zombies
from flows.track.runs import Tracker
from tests.support.zombie_components import slow_pipeline

pytestmark = pytest.mark.slow
Z = "tests.support.zombie_components"


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def runs_of(experiment: str) -> dict:
    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name(experiment)
    return {r.info.run_id: r for r in client.search_runs([exp.experiment_id])} if exp else {}


def test_sweep_kills_only_runs_whose_owner_is_gone(home):
    name = f"zombie-unit-{uuid.uuid4().hex[:6]}"
    tracker = Tracker(name)
    client, host = tracker.client, socket.gethostname()
    old = int((time.time() - 100 * 3600) * 1000)

    def make(label, tags, start_time=None):
        return client.create_run(tracker.experiment_id, run_name=label, tags=tags, start_time=start_time).info.run_id

    gone = make("gone", {zombies.HOST: host, zombies.PID: str(dead_pid())})
    alive = tracker.start("alive", {})  # this very process
    reused = make("reused", {zombies.HOST: host, zombies.PID: str(os.getpid()), zombies.STARTED: "another:1"})
    remote = make("remote", {zombies.HOST: "elsewhere", zombies.PID: "1"})
    remote_old = make("remote-old", {zombies.HOST: "elsewhere", zombies.PID: "1"}, start_time=old)
    done = make("done", {zombies.HOST: host, zombies.PID: str(dead_pid())})
    client.set_terminated(done, "FINISHED")

    killed = {k.run_id: k for k in tracker.sweep_zombies()}
    assert set(killed) == {gone, reused, remote_old}
    runs = runs_of(name)
    for rid in killed:
        assert runs[rid].info.status == "KILLED" and runs[rid].info.end_time
        assert runs[rid].data.tags[zombies.REASON] == killed[rid].reason
    assert "is gone (killed or crashed)" in killed[gone].reason
    assert "now belongs to another process" in killed[reused].reason
    assert killed[remote_old].reason == "started 100 h ago by process 1 on elsewhere, longer than any run takes (72 h)"
    assert {runs[r].info.status for r in (alive, remote)} == {"RUNNING"}
    assert runs[done].info.status == "FINISHED"


def test_a_sigkilled_run_is_killed_by_the_next_run_and_flagged_by_history(tmp_path, home, monkeypatch):
    name = f"zombie-e2e-{uuid.uuid4().hex[:6]}"
    path, started = slow_pipeline(tmp_path, name)
    # steps in the run's threads: killing the run then kills its steps too, as killing a run kills
    # its pool's workers (they never outlive it), and no pool of processes costs seconds to start
    env = {
        **os.environ,
        "BOTTLENECKS_HOME": str(home),
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "BOTTLENECKS_EXECUTOR": "threads",
    }
    with open(tmp_path / "log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flows.cli", "run", str(path)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 240
        while not started.exists():  # the slow step's run exists in MLflow before it starts
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "log").read_text()
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        try:  # the embedded Prefect server it started outlives it: end that too
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    before = {r.data.tags["mlflow.runName"]: r for r in runs_of(name).values()}
    assert {k: r.info.status for k, r in before.items()} == {name: "RUNNING", "nums": "FINISHED", "slow": "RUNNING"}

    cli = CliRunner()
    result = cli.invoke(app, ["history", name, "--no-plot"])  # it closes them first, then judges
    assert result.exit_code == 1
    parent = before[name].info.run_id
    assert (
        "marked 2 run(s) KILLED that a dead process had left RUNNING, e.g. " in result.output
        and f"its process {proc.pid} on {socket.gethostname()} is gone" in result.output
    ), result.output
    assert (
        f"REGRESSION the newest run {parent[:8]} was KILLED: its process {proc.pid} on "
        f"{socket.gethostname()} is gone (killed or crashed)"
    ) in result.output

    monkeypatch.setenv("BOTTLENECKS_EXECUTOR", "threads")
    result = cli.invoke(app, ["run", str(path), "--set", "slow.seconds=0"])
    assert result.exit_code == 0, result.output
    assert "marked" not in result.output  # nothing left to close
    after = runs_of(name)
    for label in (name, "slow"):
        run_ = after[before[label].info.run_id]
        assert run_.info.status == "KILLED" and run_.info.end_time >= run_.info.start_time
        assert (
            run_.data.tags[zombies.REASON] == f"its process {proc.pid} on {socket.gethostname()} is gone "
            "(killed or crashed)"
        )
    assert after[before["nums"].info.run_id].info.status == "FINISHED"
    _assert_prefect_closed(before[name].data.tags["prefect_flow_run_id"], f"its process {proc.pid} on ")

    # a KILLED newest run is a regression too (here: as if the second run's process had crashed)
    (second,) = [
        r.info.run_id for r in after.values() if r.info.run_id != parent and "mlflow.parentRunId" not in r.data.tags
    ]
    mlflow.MlflowClient().set_terminated(second, "KILLED")
    mlflow.MlflowClient().set_tag(second, zombies.REASON, "its process 1 on h is gone (killed or crashed)")
    result = cli.invoke(app, ["history", name, "--no-plot"])
    assert result.exit_code == 1
    assert f"REGRESSION the newest run {second[:8]} was KILLED: its process 1 on h is gone" in result.output


def _assert_prefect_closed(flow_run_id: str, reason: str) -> None:
    """The flow run a SIGKILL left RUNNING is Crashed with the reason, and none of its task runs is left
    RUNNING (read through Prefect's REST API)."""
    from flows.ops.prefect_api import call

    url = os.environ["PREFECT_API_URL"]
    flow_run = call(url, "GET", f"/flow_runs/{flow_run_id}")
    assert flow_run["state"]["type"] == "CRASHED", flow_run["state"]
    assert flow_run["state"]["message"].startswith(f"its process died: {reason}"), flow_run["state"]
    tasks = call(url, "POST", "/task_runs/filter", {"flow_runs": {"id": {"any_": [flow_run_id]}}})
    assert tasks and {t["state"]["type"] for t in tasks} <= {"COMPLETED", "CRASHED"}, [t["state"] for t in tasks]
    assert "CRASHED" in {t["state"]["type"] for t in tasks}  # the step the SIGKILL stopped


def test_an_interrupted_run_is_killed_never_finished(tmp_path, home):
    name = f"zombie-int-{uuid.uuid4().hex[:6]}"
    path = tmp_path / "p.yaml"
    path.write_text(f"name: {name}\nsteps:\n  a: {{uses: '{Z}:interrupt', with: {{wait: 1}}}}\n")
    result = run(build(path))
    assert result.stopped_by == signal.SIGINT and result.exit_code == 130
    (parent,) = [r for r in runs_of(name).values() if "mlflow.parentRunId" not in r.data.tags]
    assert parent.info.status == "KILLED"
    assert parent.data.tags[zombies.REASON] == "stopped by SIGINT"
    assert parent.data.tags[zombies.PID] == str(os.getpid())
    assert "**stopped by SIGINT**" in parent.data.tags["mlflow.note.content"]
    (step,) = [r for r in runs_of(name).values() if "mlflow.parentRunId" in r.data.tags]
    assert step.info.status == "KILLED"
