"""Run options users set: --workers, --no-cache, retry_delay, torch_threads, and where state lives
when nothing is configured (./.bottlenecks in the working directory)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from components import Context, component
from flows.cli import app
from tests.support.files import write

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md

REPO = Path(__file__).resolve().parents[2]
H = "tests.cli.test_options"
C = "tests.support.engine_components"


@component("optionstest.meet", outputs=["met"])
def meet(ctx: Context, *, me: str, other: str, folder: str, wait: float = 60.0) -> dict:
    """Mark that this step runs, then wait up to ``wait`` s for the other step: did they overlap? (Side
    by side, the other starts at once; a loaded machine may take seconds to start its thread.)"""
    Path(folder, me).touch()
    deadline = time.monotonic() + wait
    while not Path(folder, other).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    met = Path(folder, other).exists()
    Path(folder, f"{me}.met").write_text(str(met))
    return {"met": met}


@component("optionstest.threads", outputs=["threads"])
def threads(ctx: Context, *, tag: int = 0) -> dict:
    """Report how many threads torch may use in this step."""
    import torch

    return {"threads": torch.get_num_threads()}


@component("optionstest.count", outputs=["count"])
def count(ctx: Context, *, counter: str) -> dict:
    """Append the time to ``counter``; fail on the first call (to be retried)."""
    with open(counter, "a") as fh:
        fh.write(f"{time.time()}\n")
    calls = len(Path(counter).read_text().splitlines())
    if calls == 1:
        raise RuntimeError("first attempt fails")
    return {"count": calls}


def invoke(*args: str):
    result = CliRunner().invoke(app, ["run", *map(str, args)])
    return result, result.output


@pytest.fixture
def threads_executor(monkeypatch):
    """Steps in the test's own threads: what these options do does not depend on the executor, and
    a pool of worker processes (each importing MLflow) adds seconds to every run."""
    monkeypatch.setenv("BOTTLENECKS_EXECUTOR", "threads")


def met(folder: Path) -> dict[str, str]:
    return {side: (folder / f"{side}.met").read_text() for side in ("left", "right")}


def test_workers_from_the_command_line_replace_the_pipelines_setting(tmp_path, home, threads_executor):
    marks = tmp_path / "marks"
    path = write(
        tmp_path,
        f"""\
        name: opt-workers
        settings: {{workers: 1}}
        steps:
          left: {{uses: {H}:meet, with: {{me: left, other: right, folder: "{marks}"}}, cache: false}}
          right: {{uses: {H}:meet, with: {{me: right, other: left, folder: "{marks}"}}, cache: false}}
        """,
    )
    marks.mkdir()
    result, out = invoke(path, "--workers", "2")
    assert result.exit_code == 0, out
    assert "workers=2" in out and met(marks) == {"left": "True", "right": "True"}  # ran side by side
    for mark in marks.iterdir():
        mark.unlink()
    # settings.workers 1: one step at a time, they never meet (the first waits 1.5 s for nothing)
    result, out = invoke(path, "--set", "left.wait=1.5", "--set", "right.wait=1.5")
    assert result.exit_code == 0, out
    # one step at a time: the first found no partner running (the second saw the first's mark)
    assert "workers=1" in out and sorted(met(marks).values()) == ["False", "True"]


def test_no_cache_recomputes_every_step_and_a_plain_rerun_reuses_them(tmp_path, home, threads_executor):
    counter = tmp_path / "calls"
    path = write(
        tmp_path,
        f"""\
        name: opt-nocache
        steps:
          once: {{uses: {H}:count, with: {{counter: "{counter}"}}, retries: 1}}
          sum: {{uses: {C}:total, with: {{values: [1, 2]}}}}
        """,
    )
    assert invoke(path)[0].exit_code == 0  # fails once, retried: 2 calls
    again, out = invoke(path)
    assert again.exit_code == 0 and "2 cached" in out and len(counter.read_text().splitlines()) == 2
    fresh, out = invoke(path, "--no-cache")
    assert fresh.exit_code == 0, out
    assert "2 done" in out and "cached" not in out.split("finished in")[1].split("\n")[0]
    assert len(counter.read_text().splitlines()) == 3  # computed again (the counter's 3rd call passes)


def test_retry_delay_waits_between_attempts(tmp_path, home, threads_executor):
    counter = tmp_path / "calls"
    path = write(
        tmp_path,
        f"""\
        name: opt-retry-delay
        steps:
          flaky: {{uses: {H}:count, with: {{counter: "{counter}"}}, retries: 1, retry_delay: 2.5, cache: false}}
        """,
    )
    result, out = invoke(path)
    assert result.exit_code == 0, out
    first, second = map(float, counter.read_text().splitlines())
    assert second - first >= 2.5


@pytest.mark.parametrize(
    "settings,expected", [("{torch_threads: 3}", 3), ("{workers: 2}", max(1, (os.cpu_count() or 1) // 2))]
)
def test_torch_threads_per_step_come_from_settings_or_cores_over_workers(tmp_path, home, settings, expected):
    path = write(
        tmp_path,
        f"""\
        name: opt-threads
        settings: {settings}
        steps:
          probe: {{uses: {H}:threads, cache: false}}
        """,
    )
    from flows.execute.runner import run
    from flows.plan.build import build

    result = run(build(path))
    assert result.ok, result.errors
    assert result.outputs["probe"]["threads"] == expected


def test_with_nothing_configured_state_lives_in_dot_bottlenecks_of_the_working_directory(tmp_path):
    work = tmp_path / "project"
    work.mkdir()
    (work / "p.yaml").write_text(
        textwrap.dedent(f"""\
        name: opt-home
        steps:
          nums: {{uses: {C}:numbers, with: {{n: 3}}}}
        """)
    )
    # the suite's own settings gone too: the folder's background Prefect server, as a user gets it
    suite = ("BOTTLENECKS_HOME", "PREFECT_HOME", "MLFLOW_TRACKING_URI", "PREFECT_API_URL", "BOTTLENECKS_PREFECT_SERVER")
    env = {k: v for k, v in os.environ.items() if k not in suite}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    state = work / ".bottlenecks"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "flows.cli", "run", "p.yaml"],
            cwd=work,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=300,
        )
    finally:
        from flows.services import prefect_server

        if state.is_dir():
            prefect_server.stop(state)
    assert done.returncode == 0, done.stdout
    assert f"tracking=sqlite:///{state / 'mlflow.db'}" in done.stdout
    assert (state / "mlflow.db").is_file() and (state / "prefect").is_dir()
    assert len(list((state / "cache").glob("*.json"))) == 1 and list((state / "work").iterdir())
    assert list((state / "mlartifacts").iterdir())  # the run's artifacts landed there too
