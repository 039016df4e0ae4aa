"""Start-up is explicit: importing the engine changes no environment variable and makes no folder;
the entry points (a command, ``runner.run``) configure the process before Prefect and MLflow load,
since both read their settings from the environment when first imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# what home.configure sets, and the suite's own settings: none of them in a user's bare environment
SET_BY_CONFIGURE = ("PREFECT_", "MLFLOW_", "_MLFLOW_", "BOTTLENECKS_")
ALSO_SET = ("DO_NOT_TRACK", "GIT_PYTHON_REFRESH", "TOKENIZERS_PARALLELISM", "MPLBACKEND", "PYTEST_CURRENT_TEST")
# lightest first: each is checked after its own import, so a module that configures is caught at its turn
LIGHT = [
    "flows",
    "flows.execute.runner",
    "flows.execute.executors",
    "flows.execute.worker",
    "flows.services.daemon",
    "flows.cli",
]
LOADING_PREFECT = [
    "flows.ops.schedule",
    "flows.execute._step_cache",
    "flows.execute._steps",
    "flows.execute._flow",
    "flows.execute._run",
]


def bare_env(tmp_path: Path) -> dict[str, str]:
    """A user's environment with nothing configured, its home folder in ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(SET_BY_CONFIGURE) and k not in ALSO_SET}
    (tmp_path / "user").mkdir()
    env.update(HOME=str(tmp_path / "user"), PYTHONPATH=str(REPO), BOTTLENECKS_DAEMON="off")
    return env


def python(code: str, cwd: Path, env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def imported(tmp_path: Path, names: list[str]) -> dict[str, dict]:
    """Import ``names`` in turn in a fresh process from an empty project folder; after each, the
    environment variables changed, the paths under ``tmp_path`` and the libraries loaded so far."""
    env = bare_env(tmp_path)
    # Prefect's own default home and MLflow's telemetry id are the libraries' start-up, not ours: as a
    # user who set both, so that anything left behind is the engine's
    (tmp_path / "prefect").mkdir()
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), MLFLOW_DISABLE_TELEMETRY="true")
    work = tmp_path / "project"
    work.mkdir()
    code = f"""
        import importlib, json, os, sys
        from pathlib import Path

        before, found = dict(os.environ), {{}}
        for name in {names!r}:
            importlib.import_module(name)
            changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))
            made = sorted(str(p) for p in Path({str(tmp_path)!r}).rglob("*"))
            libraries = sorted(m for m in ("prefect", "mlflow") if m in sys.modules)
            found[name] = {{"changed": changed, "made": made, "libraries": libraries}}
        print(json.dumps(found))
        """
    found = python(code, work, env)
    made = sorted(str(tmp_path / p) for p in ("prefect", "project", "user"))
    for name in names:
        assert found[name]["changed"] == [] and found[name]["made"] == made, (name, found[name])
    return found


def test_importing_the_engine_configures_nothing_and_loads_neither_prefect_nor_mlflow(tmp_path):
    found = imported(tmp_path, LIGHT)
    for name in LIGHT:  # what lets runner.run configure first, whoever imported it
        assert found[name]["libraries"] == [], (name, found[name])


@pytest.mark.slow
def test_importing_the_modules_that_load_prefect_configures_nothing(tmp_path):
    imported(tmp_path, LOADING_PREFECT)


# run in the entry point's process: records whether home.configure had run when Prefect and MLflow
# were first imported, and stops the run at the MLflow store (nothing is computed)
PROBE = """
    import json, os, sys
    from flows import home
    from flows.services import mlflow_db

    seen, configure = {}, home.configure

    def configured(*args, **kwargs):
        seen["configured"] = True
        return configure(*args, **kwargs)

    class Watch:
        def find_spec(self, name, path=None, target=None):
            if name in ("prefect", "mlflow"):
                seen.setdefault(name, seen.get("configured", False))

    class Stop(Exception):
        pass

    def stop(**kwargs):
        from mlflow.telemetry.client import get_telemetry_client
        from prefect.settings import get_current_settings

        seen.update(
            prefect_home=str(get_current_settings().home),
            tracking=os.environ["MLFLOW_TRACKING_URI"],
            telemetry=get_telemetry_client() is not None,
        )
        print(json.dumps(seen))
        sys.exit(0)

    home.configure = configured
    sys.meta_path.insert(0, Watch())
    mlflow_db.prepare = stop
"""
ENTRIES = {
    "bottlenecks run": "from flows.cli import main\nsys.argv = ['bottlenecks', 'run', 'p.yaml']\nmain()",
    "runner.run": "from flows import build, run\nrun(build('p.yaml'))",
}


@pytest.mark.slow
@pytest.mark.parametrize("entry", list(ENTRIES))
def test_an_entry_point_configures_before_prefect_and_mlflow_load(tmp_path, entry):
    env = bare_env(tmp_path)
    env["BOTTLENECKS_PREFECT_SERVER"] = "off"  # nothing is run: no server to start
    work = tmp_path / "project"
    work.mkdir()
    (work / "p.yaml").write_text("name: startup\nsteps:\n  nums: {uses: tests.support.engine_components:numbers}\n")
    seen = python(textwrap.dedent(PROBE) + ENTRIES[entry], work, env)
    state = (work / ".bottlenecks").resolve()
    assert seen == {
        "configured": True,
        "prefect": True,
        "mlflow": True,
        "prefect_home": str(state / "prefect"),
        "tracking": f"sqlite:///{state / 'mlflow.db'}",
        "telemetry": False,
    }
