"""Runs as the engine records them, seeded into the session's MLflow store for history's tests: parent
runs with their own metrics, step runs (matrixed over seeds, cached or not) under them."""

import uuid

import mlflow
from mlflow.entities import Metric

from flows import home

DAY = 86_400_000
T0 = 1_700_000_000_000


def experiment(pipeline):
    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name(pipeline)
    # The engine's artifact folder, not MLflow's default ./mlruns in the working directory.
    return exp.experiment_id if exp else client.create_experiment(pipeline, artifact_location=home.artifact_root())


def _log(run_id, metrics):
    mlflow.MlflowClient().log_batch(run_id, metrics=[Metric(k, v, 0, 0) for k, v in metrics.items()])


def night(pipeline, i, own=None, steps=None, tags=None, status="FINISHED", cached=False, start=None):
    """One parent run: ``own`` metrics on it, ``steps`` {step run name: metrics} as its step runs."""
    client = mlflow.MlflowClient()
    exp = experiment(pipeline)
    parent = client.create_run(
        exp, run_name=pipeline, tags={"pipeline": pipeline, **(tags or {})}, start_time=start or T0 + i * DAY
    ).info.run_id
    for name, metrics in (steps or {}).items():
        step_tags = {"pipeline": pipeline, "mlflow.parentRunId": parent, "cached": str(cached).lower()}
        if "seed=" in name:
            step_tags["matrix.seed"] = name.split("seed=")[1].rstrip("]").split(",")[0]
        kid = client.create_run(exp, run_name=name, tags=step_tags).info.run_id
        _log(kid, metrics)
        client.set_terminated(kid)
    _log(parent, own or {})
    if status != "RUNNING":
        client.set_terminated(parent, status)
    return parent


def seed(pipeline, nights, on_children=False, failed_last=False):
    """One parent run per night with ``metrics``; on_children puts them on a 'report' step run."""
    ids = []
    for i, metrics in enumerate(nights):
        status = "FAILED" if failed_last and i == len(nights) - 1 else "FINISHED"
        if on_children:
            ids.append(night(pipeline, i, steps={"report": metrics, "train[arch=lstm]": {"loss": 1.0}}, status=status))
        else:
            ids.append(night(pipeline, i, own=metrics, status=status))
    return ids


def trained(pipeline, nights, arch="lstm", metric="test_acc", **kw):
    """Nights whose step runs ``train[arch=..,seed=s]`` log ``metric``: one list of per-seed values a night."""
    ids = []
    for i, values in enumerate(nights):
        steps = {f"train[arch={arch},seed={s}]": {metric: v} for s, v in enumerate(values)}
        ids.append(night(pipeline, i, own={"claims/holds": 3.0}, steps=steps, **kw))
    return ids


def name():
    return f"hist-{uuid.uuid4().hex[:8]}"
