"""One warm process per folder, started only for work: a `run` refused at validation leaves no
process behind, and a run with another environment replaces the folder's warm process instead of
adding a second one."""

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from tests.support.warm import wait_serving, warm_env

pytestmark = pytest.mark.slow  # commands in processes of their own, a zygote's start

C = "tests.support.engine_components"


def _outliving(marker: str) -> list[str]:
    """Each live process (not a zombie) whose environment carries ``marker``: what a command started
    inherits its environment."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state not in ("Z", "X"):
            found.append(f"{entry.name}: {command}")
    return found


def _cli(folder: Path, env: dict, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """`bottlenecks ARGS` in FOLDER under ENV, as a user types it; its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=kwargs.pop("timeout", 300),
        **kwargs,
    )


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes' environments from /proc")
def test_a_run_refused_at_validation_starts_no_process_that_outlives_it(tmp_path):
    folder = tmp_path / "fresh"
    folder.mkdir()
    (folder / "bad.yaml").write_text("name: bad\nsteps:\n  a: {uses: nothing.here}\n")
    marker = f"BN_TEST_MARKER=refused-{uuid.uuid4().hex}"
    # as a user runs it: the warm process and the folder's background Prefect server both on
    with warm_env(folder, BOTTLENECKS_PREFECT_SERVER="on") as env:
        env.pop("PREFECT_API_URL", None)
        env[marker.split("=")[0]] = marker.split("=")[1]
        proc = _cli(folder, env, "run", "bad.yaml", timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert "nothing.here" in proc.stderr and "nothing was run" in proc.stderr
        time.sleep(1.0)  # a process started in the background would be up by now
        assert _outliving(marker) == []
        runtime = Path(env["XDG_RUNTIME_DIR"]) / f"bottlenecks-{os.getuid()}"
        assert not list(runtime.glob("zygote-*")) if runtime.exists() else True  # not even its log
        assert not (folder / ".bottlenecks" / "prefect-server.json").exists()


def _pipeline(folder: Path) -> Path:
    path = folder / "warm.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: warm-one
        steps:
          numbers: {{uses: "{C}:numbers", with: {{n: 3}}}}
        """)
    )
    return path


def _key(env: dict, folder: Path) -> str:
    code = "from flows.services import daemon; print(daemon.key())"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=folder, capture_output=True, text=True, check=True
    ).stdout.strip()


def _newest_parent_pid(folder: Path) -> str:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{folder / '.bottlenecks' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("warm-one")
    (run,) = client.search_runs(
        [experiment.experiment_id],
        "attributes.run_name = 'warm-one'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )
    return run.data.tags["bottlenecks.pid"]


def test_another_environment_replaces_the_folders_warm_process(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    path = _pipeline(folder)
    with warm_env(folder, BOTTLENECKS_EXECUTOR="threads") as env:
        runtime = Path(env["XDG_RUNTIME_DIR"]) / f"bottlenecks-{os.getuid()}"
        first = runtime / f"zygote-{_key(env, folder)}.sock"
        _cli(folder, env, "run", str(path), check=True)
        wait_serving(first)
        other = {**env, "BN_SOME_SETTING": "changed"}  # one variable changed between two runs
        second = runtime / f"zygote-{_key(other, folder)}.sock"
        assert second != first
        done = _cli(folder, other, "run", str(path))
        assert done.returncode == 0, done.stderr
        wait_serving(second)
        third = subprocess.Popen(  # handed to the new warm process: its environment is the command's
            [sys.executable, "-m", "flows.cli", "run", str(path)],
            cwd=folder,
            env=other,
            stderr=subprocess.PIPE,
            text=True,
        )
        stderr = third.communicate(timeout=300)[1]
        assert third.returncode == 0, stderr
        assert "stale" not in second.with_suffix(".log").read_text(), second.with_suffix(".log").read_text()
        assert _newest_parent_pid(folder) != str(third.pid)  # ran in the warm process's child
        deadline = time.monotonic() + 30
        while first.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not first.exists(), first.with_suffix(".log").read_text()
        assert "retired" in first.with_suffix(".log").read_text()
        listed = _cli(folder, other, "stop", "--list", timeout=60).stdout
        rows = [line for line in listed.splitlines() if line.startswith("warm process")]
        assert len(rows) == 1 and str(folder.resolve()) in rows[0], listed
        assert " MiB " in rows[0], listed  # its memory, beside its idle time
