"""Test-wide settings: embedded Prefect and MLflow stores in a temporary folder, set before any
test imports prefect or mlflow (both read their settings from the environment at import)."""

import json
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
# output as a pipe gets it (80 columns, no colour) whatever the shell exports; a test that wants
# another width passes COLUMNS itself
for _var in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
    os.environ.pop(_var, None)
# Prefect's temporary server inside each command, never a background one that outlives the tests
# (tests/services/test_prefect_server.py starts its own and stops it)
os.environ["BOTTLENECKS_PREFECT_SERVER"] = "off"
# every command in its own process, never handed to a warm zygote (tests/services/test_daemon.py turns it on)
os.environ["BOTTLENECKS_DAEMON"] = "off"

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    """One Prefect API server per test process (each xdist worker), its address set before any test
    module imports prefect: in-process runs and every `bottlenecks` command the tests start talk to it
    instead of booting Prefect's temporary server each time (5-20 s a command on 2 cores).

    A test that needs Prefect's own temporary server, or a server of its own, removes
    ``PREFECT_API_URL`` from its environment (``tests/support/warm.py`` and the server tests do).
    ``BOTTLENECKS_TEST_PREFECT=ephemeral`` runs the suite the old way.
    """
    from flows import home

    home.configure()  # the suite is an entry point, as a command is: quiet libraries, no MLflow telemetry
    if hasattr(config, "workerinput") is False and config.getoption("numprocesses", None):
        return  # the xdist controller runs no test
    if os.environ.get("BOTTLENECKS_TEST_PREFECT", "shared") == "ephemeral":
        return
    from flows.services import prefect_server

    folder = _STATE / f"prefect-server-{os.getpid()}"
    os.environ["BOTTLENECKS_PREFECT_IDLE"] = "120"  # a crashed test process leaves no server for long
    # the server boots while this process collects the tests; pytest_collection_finish waits for it
    os.environ["PREFECT_API_URL"] = prefect_server.begin(folder)
    config._bottlenecks_prefect = folder
    os.environ.pop("BOTTLENECKS_PREFECT_IDLE")


def pytest_collection_finish(session):
    """The shared Prefect server answers before the first test (it booted during collection)."""
    if getattr(session.config, "_bottlenecks_prefect", None) is None:
        return
    from flows.services import prefect_server

    try:
        prefect_server.ready(timeout=180)
    except prefect_server.ServerError as e:
        raise pytest.UsageError(f"conftest: the shared Prefect server did not start: {e}") from e


def pytest_addoption(parser):
    parser.addoption(
        "--record-file-times",
        metavar="PATH",
        help="write each test file's seconds (setup, call and teardown of its tests) to PATH as JSON; "
        "tests/file_times.json is what orders the files (tests/README.md)",
    )


FILE_TIMES = Path(__file__).with_name("file_times.json")


def _file_times() -> dict[str, float]:
    """Seconds per test file as last recorded on a quiet machine (empty when the file is missing)."""
    try:
        return {str(k): float(v) for k, v in json.loads(FILE_TIMES.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def pytest_collection_modifyitems(config, items):
    """The longest files first: xdist hands out whole files in this order (with
    ``--no-loadscope-reorder``), so the long ones start at once and the short ones fill the gaps,
    instead of one long file running alone at the end. A file's time is the one recorded in
    tests/file_times.json; a file not recorded there counts as long when it has a `server` test
    (120 s) or a `slow` one (30 s), else as short (1 s)."""
    known = _file_times()

    def guess(item) -> float:
        return 120.0 if item.get_closest_marker("server") else 30.0 if item.get_closest_marker("slow") else 1.0

    def path(item) -> str:
        return Path(os.path.relpath(item.fspath.strpath, REPO)).as_posix()

    seconds: dict[str, float] = {}
    for item in items:
        seconds[path(item)] = known.get(path(item), max(seconds.get(path(item), 0.0), guess(item)))
    items.sort(key=lambda item: -seconds[path(item)])  # stable: a file's tests keep their order


_times: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """Sum each file's seconds (in the controller too, where xdist's workers report)."""
    path = report.nodeid.split("::", 1)[0]
    _times[path] = _times.get(path, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    target = session.config.getoption("--record-file-times", None)
    if target and not hasattr(session.config, "workerinput"):
        Path(target).write_text(json.dumps({k: round(v, 1) for k, v in sorted(_times.items())}, indent=1) + "\n")


def pytest_unconfigure(config):
    folder = getattr(config, "_bottlenecks_prefect", None)
    if folder is not None:
        from flows.services import prefect_server

        prefect_server.stop(folder)
        prefect_server.release()


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
