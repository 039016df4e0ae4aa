"""Worker processes (flows/execute/processes.py): forked from their process's forkserver with the
run's environment, folder, import path and output; a crashed one fails only its step; none outlives
its run; ``BOTTLENECKS_WORKER_TEMPLATE=off`` starts fresh interpreters."""

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from flows.execute import processes
from flows.execute.pool import ProcessPool, Worker
from flows.execute.runner import run
from flows.execute.worker import StepPayload
from flows.plan.build import build
from tests.support.files import write

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
forked = pytest.mark.skipif(not processes.forked(), reason="no forkserver here, or BOTTLENECKS_WORKER_TEMPLATE=off")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _running(pid: int) -> bool:
    """``pid`` is a process that has not ended (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _ready(worker: Worker) -> bool:
    return worker.conn.poll(120) and worker.conn.recv()[0] == "ready"


@forked
def test_a_worker_runs_with_the_runs_environment_folder_import_path_and_output(tmp_path, home, monkeypatch):
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "where_am_i.py").write_text(
        "import os\n"
        "from components import Context, component\n\n"
        "@component('processtest.where', outputs=['x', 'cwd', 'parent'])\n"
        "def where(ctx: Context) -> dict:\n"
        "    print('worker says', os.environ.get('PROCESS_TEST_X'), flush=True)\n"
        "    return {'x': os.environ.get('PROCESS_TEST_X'), 'cwd': os.getcwd(), 'parent': os.getppid()}\n"
    )
    monkeypatch.syspath_prepend(str(plugin))  # a module only the run's import path finds
    monkeypatch.setenv("PROCESS_TEST_X", "from the run")
    monkeypatch.chdir(tmp_path)
    path = write(
        tmp_path,
        """\
        name: process-where
        settings: {workers: 2, executor: processes}
        steps:
          here: {uses: "where_am_i:where", matrix: {i: [0, 1]}}
        """,
    )
    result = run(build(path))
    assert result.ok, result.errors
    outs = [result.outputs[f"here[i={i}]"] for i in (0, 1)]
    assert [(o["x"], o["cwd"]) for o in outs] == [("from the run", str(tmp_path))] * 2
    assert outs[0]["parent"] == outs[1]["parent"] != os.getpid()  # both forked from this process's forkserver
    # the next run in this process sees its own environment and writes to its own output, its
    # workers forked from the same forkserver
    monkeypatch.setenv("PROCESS_TEST_X", "from the next run")
    out, saved = tmp_path / "out.txt", os.dup(1)
    with open(out, "w") as fh:
        os.dup2(fh.fileno(), 1)
        try:
            again = run(build(path), use_cache=False)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
    assert out.read_text().count("worker says from the next run") == 2
    assert [again.outputs[f"here[i={i}]"]["x"] for i in (0, 1)] == ["from the next run"] * 2
    assert {again.outputs[f"here[i={i}]"]["parent"] for i in (0, 1)} == {outs[0]["parent"]}


@pytest.mark.parametrize("how, said", [("segfault", "SIGSEGV"), ("kill", "SIGKILL")])
def test_a_crashed_worker_fails_only_its_step_and_the_next_step_gets_a_new_one(tmp_path, home, how, said):
    from mlflow import MlflowClient

    from flows import home as homes
    from flows.services import mlflow_db

    mlflow_db.prepare(artifact_root=homes.artifact_root())
    client = MlflowClient()
    experiment = client.create_experiment(f"process-crash-{uuid.uuid4().hex[:8]}")

    def step(name: str, component: str, params: dict) -> StepPayload:
        run_id = client.create_run(experiment).info.run_id
        uri, work = os.environ["MLFLOW_TRACKING_URI"], str(tmp_path / name)
        module = "tests.support.engine_components"
        return StepPayload(name, component, params, name, work, run_id, 0, uri, str(home), module=module)

    pool = ProcessPool(1, [], threads=1)
    try:
        died = pool.run(step("bad", "enginetest.crash", {"how": how}), 0, lambda event: None)
        assert (died.status, died.error) == ("died", f"died: {said}")
        fine = pool.run(step("fine", "enginetest.whoami", {}), 0, lambda event: None)
        assert fine.status == "done", fine.error
        assert fine.outputs["pid"] != died.pid
    finally:
        pool.close()


def test_closing_the_pool_ends_its_workers():
    pool = ProcessPool(2, [], threads=1)
    workers = [slot.start() for slot in pool.cpu]
    assert all(_ready(w) for w in workers)
    pool.close()
    # each exited by itself once its socket closed, not by SIGTERM: its exit handlers ran and released
    # the semaphores a step's library made (else the resource tracker reports them leaked at exit)
    assert [w.exitcode() for w in workers] == [0, 0]
    assert not any(_running(w.pid) for w in workers)  # ended and reaped


def test_off_starts_each_worker_as_a_fresh_interpreter(monkeypatch):
    monkeypatch.setenv("BOTTLENECKS_WORKER_TEMPLATE", "off")
    worker = Worker({})
    try:
        assert _ready(worker)
        assert _parent(worker.pid) == os.getpid()  # started by this process, not forked by a forkserver
        assert b"multiprocessing.spawn" in Path(f"/proc/{worker.pid}/cmdline").read_bytes()
    finally:
        worker.conn.close()
    assert worker.exitcode(timeout=30) == 0


def test_no_worker_or_helper_outlives_a_killed_run(tmp_path):
    code = textwrap.dedent(
        """\
        import os, signal
        from pathlib import Path
        from flows.execute.pool import ProcessPool

        pool = ProcessPool(1, [], threads=1)
        worker = pool.cpu[0].start()
        assert worker.conn.poll(120) and worker.conn.recv()[0] == "ready"
        mine = [p.name for p in Path("/proc").glob("[0-9]*") if (p / "stat").exists()
                and (p / "stat").read_text().rsplit(")", 1)[1].split()[1] == str(os.getpid())]
        print(worker.pid, *mine, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert done.returncode == -9, done.stderr
    left = {int(pid) for pid in done.stdout.split()}
    assert len(left) >= 2  # the worker and what started it (a forkserver, a resource tracker)
    deadline = time.monotonic() + 30
    while {pid for pid in left if _running(pid)} and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not {pid for pid in left if _running(pid)}


def test_a_process_forked_after_its_first_worker_starts_workers_of_its_own(tmp_path):
    code = textwrap.dedent(
        """\
        import os
        from flows.execute.pool import Worker

        def ready(worker):
            return worker.conn.poll(120) and worker.conn.recv()[0] == "ready"

        first = Worker({})
        assert ready(first)
        pid = os.fork()
        if pid == 0:
            os._exit(0 if ready(Worker({})) else 1)
        assert os.waitpid(pid, 0)[1] == 0, "the forked process started no worker"
        first.conn.close()
        """
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
