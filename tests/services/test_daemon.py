"""`bottlenecks run` hands its work to a warm zygote: the first command starts one, later commands
with the same environment run in its forked child (same terminal, folder, environment and exit
status), signals reach the child, an edited source file makes the zygote step aside, and
`bottlenecks stop` ends it."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support.warm import wait_serving, warm_env

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md

C = "tests.support.engine_components"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project folder whose `run` commands use a zygote in a private runtime folder, shared by
    this module's tests (starting a zygote costs a run in its own process): the first `run` of the
    ``warm`` pipeline ran in its own process and started the zygote, which now serves. The test that
    makes the zygote step aside runs last (it stops it; a later test would start a fresh one)."""
    folder = tmp_path_factory.mktemp("daemon")
    plugin = folder / "plugin"
    plugin.mkdir()
    (plugin / "bn_preloaded.py").write_text("VALUE = 1\n")
    # steps in the run's threads: what is tested is the hand-over to the zygote, and a pool of worker
    # processes (each importing MLflow) would add seconds to every run
    with warm_env(
        folder,
        plugin,
        BOTTLENECKS_DAEMON_PRELOAD="bn_preloaded",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        BOTTLENECKS_EXECUTOR="threads",
    ) as env:
        first, _, err = _run(env, folder, _warm_pipeline(folder))
        _wait_serving(env, folder)
        yield SimpleNamespace(folder=folder, env=env, plugin=plugin, first=first, first_err=err)


def _warm_pipeline(folder: Path) -> Path:
    return _pipeline(
        folder,
        "warm",
        f"""\
        steps:
          numbers: {{uses: "{C}:numbers", with: {{n: 3}}}}
          total: {{uses: "{C}:total", with: {{values: "${{numbers.values}}"}}}}
        """,
    )


def _pipeline(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(f"name: {name}\n" + textwrap.dedent(body))
    return path


def _run(env, folder, path, *extra, check=True):
    proc = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "run", str(path), *extra],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=300)
    if check:
        assert proc.returncode == 0, err[-3000:]
    return proc, out, err


def _socket(env, folder) -> Path:
    runtime = Path(env["XDG_RUNTIME_DIR"]) / f"bottlenecks-{os.getuid()}"
    return runtime / f"zygote-{_key(env, folder)}.sock"


_KEYS: dict[tuple, str] = {}


def _key(env, folder) -> str:
    """The zygote a command started in ``folder`` with ``env`` talks to (computed in a process of
    that environment, once per environment)."""
    memo = (tuple(sorted(env.items())), str(folder))
    if memo not in _KEYS:
        code = "import sys; from flows.services import daemon; print(daemon.key())"
        _KEYS[memo] = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=folder, capture_output=True, text=True, check=True
        ).stdout.strip()
    return _KEYS[memo]


def _wait_serving(env, folder, timeout=120.0) -> Path:
    """Until the zygote of ``env`` in ``folder`` answers."""
    return wait_serving(_socket(env, folder), timeout)


def _parent_tags(folder: Path, name: str) -> list[dict]:
    """The tags and status of the pipeline's parent runs, oldest first, in the folder's own store."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{folder / '.bottlenecks' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(name)
    runs = client.search_runs(
        [experiment.experiment_id], f"attributes.run_name = '{name}'", order_by=["attributes.start_time ASC"]
    )
    return [dict(r.data.tags, status=r.info.status) for r in runs]


def test_a_later_run_is_served_by_the_zygote_with_the_same_output_and_exit_status(project):
    folder, env = project.folder, project.env
    assert "finished in" in project.first_err and "2 done" in project.first_err
    second, out2, err2 = _run(env, folder, _warm_pipeline(folder))
    assert "2 cached" in err2 and "MLflow parent run" in err2, err2  # the command's own stderr
    tags = _parent_tags(folder, "warm")
    assert [t["status"] for t in tags] == ["FINISHED", "FINISHED"]
    assert tags[0]["bottlenecks.pid"] == str(project.first.pid)  # the first ran in its own process
    assert tags[1]["bottlenecks.pid"] != str(second.pid)  # the second in the zygote's child
    assert (folder / ".bottlenecks" / "mlflow.db").exists()  # in the command's folder, not the zygote's

    failing = _pipeline(
        folder,
        "warm-fail",
        f"""\
        steps:
          bad: {{uses: "{C}:fail", with: {{message: "no such luck"}}}}
        """,
    )
    proc, _, err = _run(env, folder, failing, check=False)
    assert proc.returncode == 1 and "no such luck" in err
    invalid = _pipeline(folder, "warm-invalid", "steps: {a: {uses: nothing.here}}\n")
    proc, _, err = _run(env, folder, invalid, check=False)
    assert proc.returncode == 2 and "nothing.here" in err


def test_ctrl_c_reaches_the_child_and_the_run_is_killed(project):
    folder, env = project.folder, project.env
    _wait_serving(env, folder)
    started = folder / "started"
    path = _pipeline(
        folder,
        "warm-stop",
        f"""\
        steps:
          train: {{uses: "{C}:slow_train", with: {{steps: 600, seconds_per_step: 0.1, started_file: "{started}"}}}}
        """,
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "run", str(path)],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert started.exists(), proc.communicate()[0]
    os.kill(proc.pid, signal.SIGINT)
    output = proc.communicate(timeout=30)[0]
    assert proc.returncode == 130 and "stopped by SIGINT" in output, output
    (tags,) = _parent_tags(folder, "warm-stop")
    assert tags["status"] == "KILLED" and tags["bottlenecks.pid"] != str(proc.pid)


def test_another_environment_gets_another_zygote(project):
    folder, env = project.folder, project.env
    other = {**env, "BOTTLENECKS_EXECUTOR": "processes"}
    assert _key(env, folder) != _key(other, folder)
    assert _key(env, folder) == _key(
        {**env, "PWD": "/elsewhere", "OLDPWD": "/", "SHLVL": "3"}, folder
    )  # shell noise ignored


# last: the zygote steps aside and is stopped
def test_an_edited_source_file_makes_the_zygote_step_aside_and_stop_ends_it(project):
    folder, env, plugin = project.folder, project.env, project.plugin
    path = _pipeline(folder, "warm-stale", f'steps: {{a: {{uses: "{C}:numbers"}}}}\n')
    sock = _wait_serving(env, folder)
    time.sleep(0.05)
    (plugin / "bn_preloaded.py").write_text("VALUE = 2  # edited\n")  # a module the zygote imported
    proc, _, _ = _run(env, folder, path)
    assert _parent_tags(folder, "warm-stale")[-1]["bottlenecks.pid"] == str(proc.pid)  # ran in its own process
    assert "stale" in sock.with_suffix(".log").read_text()
    _wait_serving(env, folder)  # that command started a fresh zygote
    out = subprocess.run(
        [sys.executable, "-m", "flows.cli", "stop"], cwd=folder, env=env, capture_output=True, text=True, timeout=60
    ).stdout
    assert "stopped the warm process" in out
    deadline = time.monotonic() + 10
    while sock.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not sock.exists()
