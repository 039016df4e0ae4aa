"""Where to follow a run while it works: its MLflow run page and its Prefect flow-run page."""

from __future__ import annotations

import functools
import os
from typing import Callable

LOCAL_MLFLOW_UI = "http://127.0.0.1:5000"  # where `bottlenecks ui` serves the local store
# the query that opens MLflow 3's model-training view (run pages here, experiment pages in
# flows.track.runs): the UI takes the page kind from ``workflowType``, not from the experiment's tag
MODEL_TRAINING_VIEW = "?workflowType=machine_learning"


def _mlflow_server() -> str | None:
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    return uri.rstrip("/") if uri.startswith(("http://", "https://")) else None


def mlflow_run(experiment_id: str, run_id: str) -> str:
    """The MLflow UI page of a run in the model-training view (on `bottlenecks ui` for the local store)."""
    base = _mlflow_server() or LOCAL_MLFLOW_UI
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}{MODEL_TRAINING_VIEW}"


def run_pages(experiment_id: Callable[[], str]) -> Callable[[str], str]:
    """Run id -> its MLflow UI page, for runs of one experiment (a pipeline's step runs, which a report
    names); ``experiment_id`` is asked once, on the first page."""
    experiment = functools.cache(experiment_id)
    return lambda run_id: mlflow_run(experiment(), run_id)


def prefect_flow_run(flow_run_id: str | None) -> str | None:
    """The Prefect UI page of a flow run, or None when no Prefect server outlives the run."""
    api = os.environ.get("PREFECT_API_URL", "").rstrip("/")
    if not api or not flow_run_id:
        return None
    ui = os.environ.get("PREFECT_UI_URL") or api.removesuffix("/api")
    return f"{ui.rstrip('/')}/runs/flow-run/{flow_run_id}"


def announce(console, experiment_id: str, run_id: str, flow_run_id: str | None) -> None:
    """Print where to follow the run (before its steps start)."""
    hint = "" if _mlflow_server() else " (serve it with `bottlenecks ui`)"
    console.print(f"follow: MLflow {mlflow_run(experiment_id, run_id)}{hint}", highlight=False, soft_wrap=True)
    url = prefect_flow_run(flow_run_id)
    if url:
        console.print(f"follow: Prefect {url}", highlight=False, soft_wrap=True)
