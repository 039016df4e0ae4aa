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

import pytest

from tests.support.warm import wait_serving, warm_env

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md

C = "tests.support.engine_components"


@pytest.fixture
def project(tmp_path):
    """A project folder whose `run` commands use a zygote in a private runtime folder."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "bn_preloaded.py").write_text("VALUE = 1\n")
    with warm_env(
        tmp_path, plugin, BOTTLENECKS_DAEMON_PRELOAD="bn_preloaded", PREFECT_SERVER_ANALYTICS_ENABLED="false"
    ) as env:
        yield tmp_path, env, plugin


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


def _key(env, folder) -> str:
    """The zygote a command started in ``folder`` with ``env`` talks to."""
    code = "import sys; from flows.services import daemon; print(daemon.key())"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=folder, capture_output=True, text=True, check=True
    ).stdout.strip()


def _wait_serving(env, folder, timeout=120.0) -> Path:
    """Until the zygote of ``env`` in ``folder`` answers."""
    return wait_serving(_socket(env, folder), timeout)


def _parent_tags(folder: Path, name: str) -> list[dict]:
    code = (
        "import json, mlflow; mlflow.set_tracking_uri('sqlite:///"
        + str(folder / ".bottlenecks" / "mlflow.db")
        + f"'); r = mlflow.search_runs(experiment_names=['{name}'], filter_string=\"attributes.run_name = "
        f"'{name}'\", order_by=['attributes.start_time ASC'], output_format='list'); "
        "print(json.dumps([dict(x.data.tags, status=x.info.status) for x in r]))"
    )
    import json

    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")},
    )
    return json.loads(out.stdout)


def test_a_later_run_is_served_by_the_zygote_with_the_same_output_and_exit_status(project):
    folder, env, _ = project
    path = _pipeline(
        folder,
        "warm",
        f"""\
        steps:
          numbers: {{uses: "{C}:numbers", with: {{n: 3}}}}
          total: {{uses: "{C}:total", with: {{values: "${{numbers.values}}"}}}}
        """,
    )
    first, _, err1 = _run(env, folder, path)
    assert "finished in" in err1 and "2 done" in err1
    _wait_serving(env, folder)
    second, out2, err2 = _run(env, folder, path)
    assert "2 cached" in err2 and "MLflow parent run" in err2, err2  # the command's own stderr
    tags = _parent_tags(folder, "warm")
    assert [t["status"] for t in tags] == ["FINISHED", "FINISHED"]
    assert tags[0]["bottlenecks.pid"] == str(first.pid)  # the first ran in its own process
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
    folder, env, _ = project
    _run(env, folder, _pipeline(folder, "warm-first", f'steps: {{a: {{uses: "{C}:numbers"}}}}\n'))
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


def test_an_edited_source_file_makes_the_zygote_step_aside_and_stop_ends_it(project):
    folder, env, plugin = project
    path = _pipeline(folder, "warm-stale", f'steps: {{a: {{uses: "{C}:numbers"}}}}\n')
    _run(env, folder, path)
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


def test_another_environment_gets_another_zygote(project):
    folder, env, _ = project
    other = {**env, "BOTTLENECKS_EXECUTOR": "threads"}
    assert _key(env, folder) != _key(other, folder)
    assert _key(env, folder) == _key(
        {**env, "PWD": "/elsewhere", "OLDPWD": "/", "SHLVL": "3"}, folder
    )  # shell noise ignored
