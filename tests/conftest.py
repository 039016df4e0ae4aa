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
