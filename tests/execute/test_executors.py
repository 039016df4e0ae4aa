"""Steps in worker processes: isolation, crashes, GPU placement, stopping, resuming."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import mlflow
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.execute.runner import run
from flows.plan.build import build
from tests.support.files import write
from tests.support.mlflow_runs import children as runs_of

pytestmark = pytest.mark.slow
C = "tests.support.engine_components"
REPO = Path(__file__).resolve().parents[2]


def test_steps_run_in_their_own_processes_and_a_crash_fails_only_its_step(tmp_path, home):
    path = write(
        tmp_path,
        f"""\
        name: exec-isolation
        settings: {{workers: 4, executor: processes}}
        steps:
          who:
            uses: {C}:whoami
            with: {{tag: "${{matrix.i}}", meet: "{tmp_path / "meet"}", party: 2}}
            matrix: {{i: [0, 1]}}
          bad:
            uses: {C}:crash
            with: {{how: abort}}
          worse:
            uses: {C}:crash
            with: {{how: exit}}
          after:
            uses: {C}:whoami
            with: {{tag: "${{worse.never}}"}}
        """,
    )
    result = run(build(path))
    assert not result.ok
    assert result.errors["bad"] == "step bad died: SIGABRT"
    assert result.errors["worse"] == "step worse died: exit code 3"
    assert result.status["after"] == "skipped"
    pids = {iid: result.outputs[iid]["pid"] for iid in ("who[i=0]", "who[i=1]")}
    assert os.getpid() not in pids.values()
    assert pids["who[i=0]"] != pids["who[i=1]"]
    # both were forked from this process's forkserver (flows/execute/processes.py)
    parents = {result.outputs[iid]["parent"] for iid in ("who[i=0]", "who[i=1]")}
    assert len(parents) == 1 and os.getpid() not in parents
    # a worker whose steps never use torch never imports it (flows/execute/torch_threads.py)
    assert [result.outputs[iid]["torch"] for iid in ("who[i=0]", "who[i=1]")] == [False, False]
    kids = runs_of(result.parent_run_id, "exec-isolation")
    assert {n: r["status"] for n, r in kids.items()} == {
        "who[i=0]": "FINISHED",
        "who[i=1]": "FINISHED",
        "bad": "FAILED",
        "worse": "FAILED",
    }
    assert kids["bad"]["tags.error"] == "step bad died: SIGABRT"
    assert mlflow.get_run(result.parent_run_id).info.status == "FAILED"


def test_cli_names_the_dead_step_and_exits_1(tmp_path, home):
    path = write(
        tmp_path,
        f"""\
        name: exec-cli-crash
        steps:
          bad: {{uses: "{C}:crash", with: {{how: abort}}}}
          fine: {{uses: "{C}:whoami"}}
        """,
    )
    out = CliRunner().invoke(app, ["run", str(path)])
    assert out.exit_code == 1, out.output
    assert "step bad failed: step bad died: SIGABRT" in " ".join(out.output.split())


def test_gpu_steps_are_placed_on_pinned_workers_and_never_share_one(tmp_path, home):
    path = write(
        tmp_path,
        f"""\
        name: exec-placement
        settings: {{workers: 1, devices: [0, 1]}}
        steps:
          gpu:
            uses: {C}:whoami
            with: {{seconds: 0.6, tag: "${{matrix.i}}"}}
            matrix: {{i: [0, 1, 2, 3]}}
            resources: {{gpu: 1}}
          cpu:
            uses: {C}:whoami
            with: {{seconds: 0.2}}
        """,
    )
    result = run(build(path))
    assert result.ok, result.errors
    gpu = [result.outputs[f"gpu[i={i}]"] for i in range(4)]
    assert {g["visible"] for g in gpu} == {"0", "1"}
    assert {g["device"] for g in gpu} == {"cuda"}
    for dev in ("0", "1"):
        spans = sorted((g["started"], g["ended"]) for g in gpu if g["visible"] == dev)
        assert all(prev[1] <= nxt[0] for prev, nxt in zip(spans, spans[1:])), f"two steps shared GPU {dev}"
    assert result.outputs["cpu"]["visible"] == "" and result.outputs["cpu"]["device"] == "cpu"


def test_a_gpu_request_no_worker_can_meet_is_refused_at_check(tmp_path):
    path = write(
        tmp_path,
        f"""\
        name: exec-nogpu
        settings: {{devices: none}}
        steps:
          train:
            uses: {C}:whoami
            resources: {{gpu: 1}}
        """,
    )
    out = CliRunner().invoke(app, ["check", str(path)])
    assert out.exit_code == 2
    assert f"{path}:6:16: step train asks for gpu: 1 but this cluster offers none" in " ".join(out.output.split())


def test_cache_key_records_the_device_class_not_the_gpu(tmp_path):
    text = f"""\
        name: exec-key
        settings: {{devices: DEVICES}}
        steps:
          t: {{uses: "{C}:whoami", resources: {{gpu: 1}}}}
        """
    key = lambda devices: build(write(tmp_path, text.replace("DEVICES", devices))).instances["t"].key  # noqa: E731
    assert key("[0]") == key("[3]")
    cpu = build(write(tmp_path, text.replace("DEVICES", "none").replace("gpu: 1", "gpu: 0")))
    assert cpu.instances["t"].key != key("[0]")


def test_a_worker_killed_mid_training_fails_its_step_and_the_rerun_resumes(tmp_path, home):
    started = tmp_path / "started"
    path = write(
        tmp_path,
        f"""\
        name: exec-resume
        steps:
          train:
            uses: {C}:slow_train
            with: {{steps: 30, seconds_per_step: 0.1, started_file: "{started}"}}
        """,
    )

    def kill_worker():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ckpts = list(Path(home).glob("work/train-*/checkpoint.json"))
            if started.exists() and ckpts and json.loads(ckpts[0].read_text())["step"] >= 3:
                os.kill(int(started.read_text()), signal.SIGKILL)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_worker)
    killer.start()
    first = run(build(path))
    killer.join()
    assert first.errors["train"] == "step train died: SIGKILL"
    second = run(build(path))
    assert second.ok
    assert second.outputs["train"]["resumed_from"] >= 3


def _cli(args, env_extra=None):
    env = {**os.environ, **(env_extra or {})}
    exe = Path(sys.executable).parent / "bottlenecks"
    cmd = [str(exe), *args] if exe.exists() else [sys.executable, "-m", "flows.cli", *args]
    return subprocess.Popen(
        cmd, env=env, cwd=REPO, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _stoppable_run(tmp_path: Path, sig: signal.Signals) -> tuple[subprocess.Popen, Path, str]:
    """Start `bottlenecks run` on a long one-step pipeline; return it, its step's start file and its name."""
    name = f"exec-stop-{sig.name.lower()}"
    started = tmp_path / f"started-{sig.name}"
    path = write(
        tmp_path,
        f"""\
        name: {name}
        steps:
          train:
            uses: {C}:slow_train
            with: {{steps: 600, seconds_per_step: 0.1, started_file: "{started}"}}
        """,
        name=f"{name}.yaml",
    )
    return _cli(["run", str(path)]), started, name


def test_a_signal_stops_the_run_marks_it_killed_and_leaves_no_process(tmp_path, home):
    """SIGINT (exit 130) and SIGTERM (exit 143), each sent to its own command, the two at once."""
    runs = {sig: _stoppable_run(tmp_path, sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        deadline = time.monotonic() + 120
        for proc, started, _ in runs.values():
            while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.1)
            assert started.exists(), proc.communicate()[0]
    except BaseException:  # neither command is left running
        for proc, _, _ in runs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        raise
    time.sleep(0.5)
    sent = time.monotonic()
    for sig, (proc, _, _) in runs.items():
        os.kill(proc.pid, sig)
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        proc, _, name = runs[sig]
        output = proc.communicate(timeout=45)[0]
        # stopped, not run out: the step had a minute left; 30 s leaves room for a loaded machine
        assert time.monotonic() - sent <= 30, output
        assert proc.returncode == code, output
        with pytest.raises(ProcessLookupError):  # workers and servers are gone too
            os.killpg(proc.pid, 0)
        parent = mlflow.search_runs(experiment_names=[name], filter_string=f"attributes.run_name = '{name}'")
        assert list(parent["status"]) == ["KILLED"], name
        kids = runs_of(parent["run_id"][0], name)
        assert kids["train"]["status"] == "KILLED"
        flow_run_id = parent["tags.prefect_flow_run_id"][0]
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            assert client.read_flow_run(flow_run_id).state.type.value == "CANCELLED"


def test_step_progress_reaches_prefect_as_a_progress_artifact(tmp_path, home):
    path = write(
        tmp_path,
        f"""\
        name: exec-progress
        steps:
          train: {{uses: "{C}:slow_train", with: {{steps: 8, seconds_per_step: 0.05}}}}
        """,
    )
    result = run(build(path))
    assert result.ok
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[result.flow_run_id]))
        )
    progress = [a for a in found if a.type == "progress"]
    assert len(progress) == 1 and progress[0].data == 100.0
    assert progress[0].description.startswith("train: count")
