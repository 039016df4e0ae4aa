"""Reading a pipeline's runs from MLflow: its parent runs, their step runs' metrics grouped over seeds, the
steps served from the cache, the slots that did not run, and a run still running.

A parent run is a run of the pipeline's experiment tagged ``pipeline`` without an ``mlflow.parentRunId``
tag; its own metrics are the key metrics (the runner copies a report's onto it). A step run's metrics
are named ``<step run>/<metric>`` with the matrix's ``seed`` taken out of the name, so the seeds of one
step and bindings (``train[arch=lstm,seed=0]``, ``...seed=1]``) are one column ``train[arch=lstm]/<metric>``
holding one value per seed. Metric names go through ``flows.track.metric_names.current`` (with the
step run's ``component`` tag) so nights logged under older names compare with new ones.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pandas as pd

from flows.ops.history._model import HistoryError

SLOT_TAG, SLOT_REASON, SLOT_TIME = "bottlenecks.slot", "bottlenecks.slot_reason", "bottlenecks.slot_time"
SEED_AXIS = "seed"  # the matrix axis whose instances are one measurement's repeats


@dataclass
class Night:
    """One parent run as history reads it."""

    run: object  # the MLflow Run
    values: dict[str, tuple[float, ...]] = field(default_factory=dict)  # column -> one value per seed
    own: set[str] = field(default_factory=set)  # the parent run's own metrics (after renaming)
    keys: dict[str, str] = field(default_factory=dict)  # column -> the metric's name within its run
    cached: int = 0  # step runs served from the cache
    steps: int = 0  # step runs

    @property
    def run_id(self) -> str:
        return self.run.info.run_id


@dataclass
class Slot:
    """A scheduled slot that did not run (``missed``: the scheduler was down; ``skipped``: the run before
    was still running), as the scheduler records it: a metric-less run of the pipeline's experiment."""

    run_id: str
    kind: str
    reason: str
    time: pd.Timestamp


def current_name():
    """``flows.track.metric_names.current`` where it exists, else names as they are."""
    try:
        from flows.track.metric_names import current
    except ImportError:
        return lambda key, component=None: key
    return current


def download(client, run_id: str, path: str, folder: str) -> str:
    """An artifact of a run into ``folder``, without MLflow's progress bar on the terminal."""
    from unittest import mock

    with mock.patch.dict(os.environ, {"MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}):
        return client.download_artifacts(run_id, path, folder)


def tracking_uri() -> str:
    import mlflow

    return mlflow.get_tracking_uri()


def no_runs(pipeline: str, hint: str = "") -> HistoryError:
    return HistoryError(
        f"no runs of pipeline {pipeline!r} in the MLflow store {tracking_uri()}{hint}; the experiment is named "
        "after the pipeline's 'name:' (run it first, or point MLFLOW_TRACKING_URI at the right server)"
    )


def experiment_id(client, pipeline: str) -> str:
    exp = client.get_experiment_by_name(pipeline)
    if exp is None:
        names = sorted(e.name for e in client.search_experiments(max_results=200))
        from components.imports import suggest

        raise no_runs(pipeline, suggest(pipeline, names))
    return exp.experiment_id


def _client(pipeline: str):
    import mlflow

    from flows.services.mlflow_db import database_file

    store = database_file(tracking_uri())
    if store is not None and not store.exists():  # reading must not create the local store
        raise no_runs(pipeline)
    return mlflow.MlflowClient()


def _quoted(text: str) -> str:
    return text.replace("'", "\\'")


def all_parent_runs(pipeline: str, last: int, path: str | None = None) -> list:
    """The newest parent runs of ``pipeline`` (at most ``4 * last``, 50 at least), newest first; with
    ``path``, those of that pipeline file only (runs recorded before the file was tagged: by its name)."""
    client = _client(pipeline)
    exp = experiment_id(client, pipeline)
    q = _quoted(pipeline)
    runs = client.search_runs(
        [exp],
        f"tags.pipeline = '{q}' and attributes.run_name = '{q}'",
        order_by=["attributes.start_time DESC"],
        max_results=max(4 * last, 50),
    )
    runs = [r for r in runs if "mlflow.parentRunId" not in r.data.tags and SLOT_TAG not in r.data.tags]
    if path is not None:
        runs = [r for r in runs if _of_file(r, path)]
    if not runs:
        of = f" from {path}" if path else ""
        raise HistoryError(f"pipeline {pipeline!r} has an experiment but no parent runs{of} yet")
    return runs


def _of_file(run, path: str) -> bool:
    """Whether a parent run ran the pipeline file ``path`` (a run recorded before the path was tagged:
    one of a file with its base name)."""
    tagged = run.data.tags.get("pipeline_path")
    if tagged:
        return tagged == path
    return run.data.tags.get("pipeline_file", "") == Path(path).name


def files_of(runs: list) -> dict[str, int]:
    """Pipeline file -> its parent runs among ``runs`` (the files that share a ``name:``)."""
    found: dict[str, int] = {}
    for r in runs:
        f = r.data.tags.get("pipeline_path") or r.data.tags.get("pipeline_file") or "?"
        found[f] = found.get(f, 0) + 1
    return found


def parent_runs(pipeline: str, last: int) -> list:
    """The newest ``last`` parent runs of ``pipeline``, oldest first, as MLflow ``Run`` objects."""
    return all_parent_runs(pipeline, last)[:last][::-1]


def split_running(runs: list) -> tuple[list, list]:
    """(runs to judge, runs still running in a live process), both oldest first. A RUNNING run whose
    process is gone (``zombies.why_dead``) is judged: it is what the newest night left."""
    from flows.track import zombies

    live = [r for r in runs if r.info.status == "RUNNING" and not zombies.why_dead(r)]
    return [r for r in runs if r not in live], live


def stopped_by(run) -> str | None:
    """Who stopped a KILLED run an operator stopped (its ``bottlenecks.stopped_by`` tag, or for a run
    recorded before the tag the signal its reason names); None for any other run."""
    from flows.track import zombies

    if run.info.status != "KILLED":
        return None
    tags = run.data.tags
    return tags.get(zombies.STOPPED_BY) or zombies.stopped_by(tags.get(zombies.REASON) or "")


def split_stopped(runs: list) -> tuple[list, list]:
    """(runs to judge, runs an operator stopped): a stopped run's figures are a part of a night, never
    judged nor a baseline, and its stop is no regression."""
    stopped = [r for r in runs if stopped_by(r)]
    return [r for r in runs if r not in stopped], stopped


def slots(pipeline: str, since_ms: int | None) -> list[Slot]:
    """The slots that did not run, recorded after ``since_ms`` (all when None), oldest first."""
    client = _client(pipeline)
    exp = experiment_id(client, pipeline)
    found = client.search_runs(
        [exp],
        f"tags.pipeline = '{_quoted(pipeline)}' and tags.`{SLOT_TAG}` LIKE '%'",
        order_by=["attributes.start_time DESC"],
        max_results=200,
    )
    out = []
    for run in found:
        tags = run.data.tags
        when = _slot_time(tags.get(SLOT_TIME), run.info.start_time)
        if since_ms is not None and when.value // 1_000_000 < since_ms:
            continue
        out.append(Slot(run.info.run_id, tags[SLOT_TAG], tags.get(SLOT_REASON) or "no reason recorded", when))
    return sorted(out, key=lambda s: s.time)


def _slot_time(text: str | None, start_ms: int) -> pd.Timestamp:
    try:
        when = pd.Timestamp(datetime.fromisoformat(text)) if text else None
    except ValueError:
        when = None
    if when is None:
        return pd.Timestamp(start_ms, unit="ms", tz="UTC")
    return when.tz_localize("UTC") if when.tzinfo is None else when.tz_convert("UTC")


def group_name(run_name: str) -> str:
    """A step run's name without its ``seed`` binding: ``train[arch=lstm,seed=1]`` -> ``train[arch=lstm]``."""
    if not run_name.endswith("]") or "[" not in run_name:
        return run_name
    step, _, inside = run_name[:-1].partition("[")
    kept = [part for part in inside.split(",") if part.partition("=")[0] != SEED_AXIS]
    return f"{step}[{','.join(kept)}]" if kept else step


def read_night(run, current=None) -> Night:
    """A parent run's own metrics and its step runs' metrics (grouped over seeds, ordered by seed)."""
    import mlflow

    current = current or current_name()
    night = Night(run)
    for key, value in run.data.metrics.items():
        name = current(key)
        night.keys[name] = name
        night.values[name] = (float(value),)
        night.own.add(name)
    kids = mlflow.MlflowClient().search_runs(
        [run.info.experiment_id], f"tags.mlflow.parentRunId = '{run.info.run_id}'", max_results=5000
    )
    grouped: dict[str, list[tuple[str, float]]] = {}
    for kid in kids:
        night.steps += 1
        night.cached += kid.data.tags.get("cached") == "true"
        name = kid.data.tags.get("mlflow.runName") or kid.info.run_id[:8]
        seed = kid.data.tags.get(f"matrix.{SEED_AXIS}", "")
        for key, value in kid.data.metrics.items():
            renamed = current(key, kid.data.tags.get("component"))
            night.keys[f"{group_name(name)}/{renamed}"] = renamed
            grouped.setdefault(f"{group_name(name)}/{renamed}", []).append((seed, float(value)))
    for column, pairs in grouped.items():
        if column not in night.own:  # the parent's copy of a report's metric wins a clash of names
            night.values[column] = tuple(v for _, v in sorted(pairs, key=lambda p: _seed_order(p[0])))
    return night


def _seed_order(seed: str):
    try:
        return (0, float(seed), seed)
    except ValueError:
        return (1, 0.0, seed)


def mean(values: tuple[float, ...]) -> float:
    """The seeds' mean; NaN when a seed diverged (shown as such; the judge counts diverged seeds)."""
    if len(values) == 1:
        return values[0]
    if not values:
        return math.nan
    return sum(values) / len(values) if all(math.isfinite(v) for v in values) else math.nan
