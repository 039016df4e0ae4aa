"""Test-wide settings: embedded Prefect and MLflow stores in a temporary folder, set before any
test imports prefect or mlflow (both read their settings from the environment at import)."""

import os
import tempfile
from pathlib import Path

_STATE = Path(tempfile.mkdtemp(prefix="bottlenecks-tests-"))
os.environ["BOTTLENECKS_HOME"] = str(_STATE / "home")
os.environ["PREFECT_HOME"] = str(_STATE / "prefect")
os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{_STATE / 'mlflow.db'}"
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
for _var in ("PREFECT_API_URL",):
    os.environ.pop(_var, None)
# Prefect's temporary server inside each command, never a background one that outlives the tests
# (tests/services/test_prefect_server.py starts its own and stops it)
os.environ["BOTTLENECKS_PREFECT_SERVER"] = "off"
# every command in its own process, never handed to a warm zygote (tests/services/test_daemon.py turns it on)
os.environ["BOTTLENECKS_DAEMON"] = "off"

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    """One Prefect API server per test process (each xdist worker), started before any test module
    imports prefect: in-process runs and every `bottlenecks` command the tests start talk to it
    instead of booting Prefect's temporary server each time (5-20 s a command on 2 cores).

    A test that needs Prefect's own temporary server, or a server of its own, removes
    ``PREFECT_API_URL`` from its environment (``tests/support/warm.py`` and the server tests do).
    ``BOTTLENECKS_TEST_PREFECT=ephemeral`` runs the suite the old way.
    """
    if hasattr(config, "workerinput") is False and config.getoption("numprocesses", None):
        return  # the xdist controller runs no test
    if os.environ.get("BOTTLENECKS_TEST_PREFECT", "shared") == "ephemeral":
        return
    from flows.services import prefect_server

    folder = _STATE / f"prefect-server-{os.getpid()}"
    os.environ["BOTTLENECKS_PREFECT_IDLE"] = "120"  # a crashed test process leaves no server for long
    try:
        os.environ["PREFECT_API_URL"] = prefect_server.use(folder, timeout=180)
    except prefect_server.ServerError as e:  # the tests still run, each command with its own server
        print(f"conftest: no shared Prefect server ({e}); commands start their own")
        return
    config._bottlenecks_prefect = folder
    os.environ.pop("BOTTLENECKS_PREFECT_IDLE")


def pytest_collection_modifyitems(config, items):
    """Modules with a `server` test first, then those with a `slow` test, then the rest, each group
    in its usual order: xdist hands out whole files in this order, so the long files start while
    the short ones fill the other worker, instead of one long file running alone at the end."""

    def rank(item) -> int:
        return 0 if item.get_closest_marker("server") else 1 if item.get_closest_marker("slow") else 2

    module_rank: dict[str, int] = {}
    for item in items:
        module_rank[item.fspath.strpath] = min(module_rank.get(item.fspath.strpath, 2), rank(item))
    items.sort(key=lambda item: module_rank[item.fspath.strpath])  # stable: each group keeps its order


def pytest_unconfigure(config):
    folder = getattr(config, "_bottlenecks_prefect", None)
    if folder is not None:
        from flows.services import prefect_server

        prefect_server.stop(folder)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh step cache for one test (MLflow and Prefect stores stay session-wide)."""
    monkeypatch.setenv("BOTTLENECKS_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def shared_data() -> Path | None:
    """The shared offline corpora, if present."""
    path = Path(os.environ.get("BOTTLENECKS_DATA", REPO.parent / "shared" / "data"))
    return path if path.exists() else None


@pytest.fixture(params=["threads", "processes"])
def executor(request, monkeypatch):
    """Run the test under each local executor (the default for plans that do not set one)."""
    monkeypatch.setenv("BOTTLENECKS_EXECUTOR", request.param)
    return request.param
