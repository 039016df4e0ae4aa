"""Where things live and how quiet the libraries are. Call ``configure()`` before importing
prefect or mlflow: their settings are read from the environment at import time. The entry points
call it (each CLI command, the worker and warm processes, a schedule's flow run, ``runner.run``);
importing a module never does."""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

HOME_DIR = ".bottlenecks"


def home() -> Path:
    """The project's state folder (``BOTTLENECKS_HOME`` or ``./.bottlenecks``)."""
    return Path(os.environ.get("BOTTLENECKS_HOME", Path.cwd() / HOME_DIR)).resolve()


def cache_dir() -> Path:
    """The user's cache folder, shared by every project (``BOTTLENECKS_CACHE`` or ``$XDG_CACHE_HOME/bottlenecks``):
    the migrated empty Prefect and MLflow stores new folders start from."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "bottlenecks"
    return Path(os.environ.get("BOTTLENECKS_CACHE", default))


def configure(create: bool = True) -> Path:
    """Point Prefect and MLflow at embedded stores unless servers are configured; silence noise.
    ``create=False`` for commands that only read (``plan``, ``history``): the folder is not made."""
    root = home()
    if create:
        root.mkdir(parents=True, exist_ok=True)
    env = os.environ
    env.setdefault("PREFECT_HOME", str(root / "prefect"))
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    env.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    env.setdefault("PREFECT_LOGGING_SERVER_LEVEL", "WARNING")
    # Prefect's console lines (task failures with tracebacks) repeat what the step view shows;
    # its API handler keeps every log for the Prefect UI.
    env.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
    env.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_FLOW_RUNS_LEVEL", "CRITICAL")
    env.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_TASK_RUNS_LEVEL", "CRITICAL")
    env.setdefault("PREFECT_RESULTS_PERSIST_BY_DEFAULT", "false")
    env.setdefault("DO_NOT_TRACK", "1")
    # MLflow reads DO_NOT_TRACK only as "true"; its own switch also keeps its telemetry threads
    # (a config download, a consumer) out of every run
    env.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    env.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{root / 'mlflow.db'}")
    env.setdefault("MLFLOW_ENABLE_ASYNC_LOGGING", "false")
    # A team server that went away should fail the step within about a minute, naming its URL,
    # rather than after MLflow's ~4 minutes of backoff per request (its defaults are sized for
    # rate-limited hosted servers); a restart of a few seconds is still ridden out.
    env.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "3")
    env.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    env.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    env.setdefault("PREFECT_CLIENT_MAX_RETRIES", "3")
    env.setdefault("MLFLOW_LOGGING_LEVEL", "ERROR")
    env.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    env.setdefault("GIT_PYTHON_REFRESH", "quiet")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("MPLBACKEND", "Agg")
    quiet()
    return root


def quiet() -> None:
    """Keep library chatter (telemetry, deprecations, migrations) out of the user's terminal."""
    for name in (
        "prefect",
        "mlflow",
        "alembic",
        "httpx",
        "httpcore",
        "urllib3",
        "git",
        "uvicorn",
        "uvicorn.error",
        "uvicorn.access",
        "docket",
        "sqlalchemy",
    ):
        logging.getLogger(name).setLevel(logging.ERROR)
    # logs every database error with its traceback and then raises it: the caller says what went wrong
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", module=r"(prefect|mlflow|pydantic|torch)(\..*)?")


def artifact_root() -> str | None:
    """Artifact folder for the embedded MLflow store (servers manage their own)."""
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    if uri.startswith("sqlite:") or uri.startswith("file:") or "://" not in uri:
        return (home() / "mlartifacts").as_uri()
    return None
