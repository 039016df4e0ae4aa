"""Where to follow a run while it works: its MLflow run page and its Prefect flow-run page."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Callable

LOCAL_MLFLOW_UI = "http://127.0.0.1:5000"  # where `bottlenecks ui` serves the local store by default
UI_PORT_FILE = "ui.port"  # in the state folder: the port this folder's `bottlenecks ui` last served on
# the query that opens MLflow 3's model-training view (run pages here, experiment pages in
# flows.track.runs): the UI takes the page kind from ``workflowType``, not from the experiment's tag
MODEL_TRAINING_VIEW = "?workflowType=machine_learning"


UI_ENV = "BOTTLENECKS_MLFLOW_UI"  # where a team serves the UI of a local store (a proxy, `bottlenecks ui --host`)


def _mlflow_server() -> str | None:
    """The MLflow UI that serves the store: the tracking server itself, or the one named in UI_ENV."""
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    if uri.startswith(("http://", "https://")):
        return uri.rstrip("/")
    named = os.environ.get(UI_ENV, "").strip()
    return named.rstrip("/") or None


def local_ui(folder: Path | None = None) -> str:
    """Where this folder's `bottlenecks ui` serves its local store: the port it last served on (another
    than 5000 when 5000 was taken), else 5000."""
    from flows import home

    try:
        port = int((Path(folder or home.home()) / UI_PORT_FILE).read_text().strip())
    except (OSError, ValueError):
        return LOCAL_MLFLOW_UI
    return f"http://127.0.0.1:{port}"


def mlflow_run(experiment_id: str, run_id: str) -> str:
    """The MLflow UI page of a run in the model-training view (on `bottlenecks ui` for the local store)."""
    base = _mlflow_server() or local_ui()
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}{MODEL_TRAINING_VIEW}"


def mlflow_served() -> bool:
    """Whether an MLflow link points at a UI that serves the store (False: only `bottlenecks ui` on the
    machine that holds the local store opens it)."""
    return _mlflow_server() is not None


def run_pages(experiment_id: Callable[[], str]) -> Callable[[str], str]:
    """Run id -> its MLflow UI page, for runs of one experiment (a pipeline's step runs, which a report
    names); ``experiment_id`` is asked once, on the first page."""
    experiment = functools.cache(experiment_id)
    return lambda run_id: mlflow_run(experiment(), run_id)


def prefect_flow_run(flow_run_id: str | None, folder: Path | None = None) -> str | None:
    """The Prefect UI page of a flow run, or None when no Prefect server that keeps it is up. Without
    ``PREFECT_API_URL``, the background server of ``folder`` (the project folder whose runs it keeps),
    while it answers: its port changes when it starts again."""
    api = os.environ.get("PREFECT_API_URL", "").rstrip("/")
    if not api and folder is not None:
        api = _folder_server(folder) or ""
    if not api or not flow_run_id:
        return None
    ui = os.environ.get("PREFECT_UI_URL") or api.removesuffix("/api")
    return f"{ui.rstrip('/')}/runs/flow-run/{flow_run_id}"


def _folder_server(folder: Path) -> str | None:
    from flows.services import prefect_server

    record = prefect_server.read_record(folder)
    if not record or not prefect_server._ours(int(record.get("pid") or 0)):
        return None
    url = str(record.get("url") or "").rstrip("/")
    return url if url and prefect_server.healthy(url) else None


def unserved(flow_run_id: str | None, folder: Path) -> list[str]:
    """What to say where a link cannot be given: the local MLflow store has no UI until `bottlenecks ui`
    serves it, and a folder's Prefect server that stopped keeps its flow runs until it is opened again."""
    said = []
    if not mlflow_served():
        said.append(
            f"MLflow links open while `bottlenecks ui` serves the local store (state folder {folder}) at "
            f"{local_ui(folder)}; set {UI_ENV} to the address where a team serves it"
        )
    if flow_run_id and not os.environ.get("PREFECT_API_URL") and _folder_server(folder) is None:
        said.append(
            f"Prefect flow run {flow_run_id} is kept by the Prefect server of state folder {folder}, not running "
            "now: `bottlenecks ui --prefect` there opens it"
        )
    return said


def announce(console, experiment_id: str, run_id: str, flow_run_id: str | None) -> None:
    """Print where to follow the run (before its steps start)."""
    hint = "" if _mlflow_server() else " (serve it with `bottlenecks ui`)"
    console.print(f"follow: MLflow {mlflow_run(experiment_id, run_id)}{hint}", highlight=False, soft_wrap=True)
    url = prefect_flow_run(flow_run_id)
    if url:
        console.print(f"follow: Prefect {url}", highlight=False, soft_wrap=True)
