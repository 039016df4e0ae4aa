"""MLflow tracking: one parent run per pipeline run, one nested run per step instance.

Everything goes through ``MlflowClient`` with explicit run ids: MLflow's active run is per
thread and steps run in worker threads. Only model logging needs the fluent API, and it resumes
the step's own run inside the worker thread.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
import threading
import time
from pathlib import Path
from typing import Any

import mlflow
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from components.context import Context
from flows import home
from flows.track import environment, links, zombies
from flows.track.links import MODEL_TRAINING_VIEW

# metric families copied point by point onto a cached step's run: the learning curves (docs/metrics.md)
CURVES = ("valid/",)

PARAM_MAX = 500
NOTE_MAX = 7_500  # MLflow's run tags hold 8,000 characters; the note is one
# The MLflow 3 UI opens an experiment of this kind on its runs table, not the GenAI overview
# (the value of ExperimentKind.CUSTOM_MODEL_DEVELOPMENT in MLflow's UI).
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")
_KEY_BAD = re.compile(r"[^A-Za-z0-9_\-. :/]")
_RUN_ID = re.compile(r"[0-9a-f]{32}")  # an MLflow run id, safe to quote in a search filter
_DATASETS = threading.Lock()  # one process's steps create a dataset one at a time


def warm_up() -> None:
    """Do once what opening a local store does in every command (the warm process calls this)."""
    from mlflow.store.db import utils

    latest = getattr(utils, "_get_latest_schema_revision", None)
    if callable(latest):
        latest()


def _remember_schema_head() -> None:
    """Opening a SQL store, MLflow loads its ~100 Alembic migration scripts to learn the newest
    schema revision, a constant of the installed MLflow: keep the answer for the process."""
    try:
        from mlflow.store.db import utils
    except ImportError:
        return
    latest = getattr(utils, "_get_latest_schema_revision", None)
    if callable(latest) and not hasattr(latest, "cache_info"):
        utils._get_latest_schema_revision = functools.lru_cache(maxsize=1)(latest)


_remember_schema_head()


def git_commit() -> str | None:
    """The commit of the working directory's repository, if any."""
    return environment.git_commit(".")


def record_environment(client: MlflowClient, run_id: str) -> dict[str, Any]:
    """Tag a parent run with the environment its numbers come from (``env.*``) and log it whole as
    ``environment.json``: machine, devices, library versions, commit (without importing torch)."""
    env = environment.describe(".", import_torch=False)
    client.log_batch(run_id, tags=[RunTag(k, v[:5000]) for k, v in environment.as_tags(env).items()])
    client.log_dict(run_id, env, "environment.json")
    return env


def flatten(params: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Flatten nested parameters into MLflow-sized strings (``with.model``, ``overrides.d_model``)."""
    out: dict[str, str] = {}
    for k, v in params.items():
        key = _KEY_BAD.sub("_", f"{prefix}{k}")
        if isinstance(v, dict) and v and len(v) <= 20:
            out.update(flatten(v, key + "."))
        else:
            text = v if isinstance(v, str) else json.dumps(v, default=str)
            out[key] = text if len(text) <= PARAM_MAX else text[: PARAM_MAX - 3] + "..."
    return out


class Tracker:
    """Create and finish the runs of one pipeline run in one experiment."""

    @classmethod
    def for_runs(cls, uri: str = "") -> "Tracker":
        """A tracker that only logs to existing runs (a worker's: no experiment lookup)."""
        if uri:  # the parent's store, whatever this process's environment says (model logging uses it too)
            mlflow.set_tracking_uri(uri)
        tracker = cls.__new__(cls)
        tracker.client = MlflowClient(tracking_uri=uri or None)
        tracker.experiment_id = None
        tracker._read = {}
        return tracker

    def __init__(self, experiment: str):
        self.client = MlflowClient()
        self._read: dict[str, Any] = {}  # run id -> a run read ahead for copy_results
        exp = self.client.get_experiment_by_name(experiment)
        if exp is None:
            try:
                self.experiment_id = self.client.create_experiment(
                    experiment, artifact_location=_artifact_location(experiment)
                )
            except mlflow.exceptions.MlflowException:  # created concurrently by another run
                self.experiment_id = self.client.get_experiment_by_name(experiment).experiment_id
        else:
            self.experiment_id = exp.experiment_id
        if exp is None or EXPERIMENT_KIND[0] not in exp.tags:  # a kind the user chose stays
            self.client.set_experiment_tag(self.experiment_id, *EXPERIMENT_KIND)

    def start(self, name: str, tags: dict[str, str], parent: str | None = None) -> str:
        tags = {**zombies.owner_tags(), **tags}  # host and pid: a later run can tell it died
        if parent:
            tags = {**tags, "mlflow.parentRunId": parent}
        run = self.client.create_run(
            self.experiment_id, run_name=name, tags={k: str(v) for k, v in tags.items() if v is not None}
        )
        if not parent:  # a pipeline run: record where its numbers come from, beside the start
            self._environment = threading.Thread(
                target=self._record_environment, args=(run.info.run_id,), name="record-environment", daemon=True
            )
            self._environment.start()
        return run.info.run_id

    def _record_environment(self, run_id: str) -> None:
        try:
            record_environment(self.client, run_id)
        except Exception as e:  # noqa: BLE001  (a missing record is worth a warning, not a failed run)
            logging.getLogger("bottlenecks.tracking").warning("could not record the environment on %s: %s", run_id, e)

    def log(
        self,
        run_id: str,
        *,
        params: dict[str, str] | None = None,
        tags: dict[str, str] | None = None,
        metrics: list[Metric] | None = None,
    ) -> None:
        params_l = [Param(k, v) for k, v in (params or {}).items()]
        tags_l = [RunTag(k, str(v)) for k, v in (tags or {}).items()]
        metrics = metrics or []
        # MLflow caps a batch at 1000 metrics and 100 params
        self.client.log_batch(run_id, metrics=metrics[:1000], params=params_l[:100], tags=tags_l)
        for i in range(1000, len(metrics), 1000):
            self.client.log_batch(run_id, metrics=metrics[i : i + 1000])
        for j in range(100, len(params_l), 100):
            self.client.log_batch(run_id, params=params_l[j : j + 100])

    def finish(self, run_id: str, ok: bool, status: str | None = None) -> None:
        recording = getattr(self, "_environment", None)
        if recording is not None:  # the environment is on the run before the run reads finished
            recording.join(timeout=30)
        self.client.set_terminated(run_id, status or ("FINISHED" if ok else "FAILED"))

    def kill(self, run_id: str, reason: str) -> None:
        """End an interrupted parent run and its unfinished step runs as KILLED, saying why."""
        who = zombies.who_stopped(reason)  # an operator's signal, told from a crash by history
        self.log(run_id, tags={zombies.REASON: reason, **({zombies.STOPPED_BY: who} if who else {})})
        zombies.kill_children(self.client, self.experiment_id, run_id, reason)
        self.finish(run_id, ok=False, status="KILLED")

    def note(self, run_id: str, markdown: str) -> None:
        """Set the run's description (the Markdown MLflow shows on the run page)."""
        if len(markdown) > NOTE_MAX:
            markdown = markdown[:NOTE_MAX].rsplit("\n", 1)[0] + "\n\n(cut here; the full text is an artifact)\n"
        self.client.set_tag(run_id, "mlflow.note.content", markdown)

    def sweep_zombies(self, finished=None) -> list[zombies.Killed]:
        """Close runs of this experiment that a dead process left RUNNING (``zombies.sweep``)."""
        return zombies.sweep(self.client, self.experiment_id, finished)

    def read_ahead(self, run_ids: list[str]) -> None:
        """Read the runs ``copy_results`` will copy from in one query per 100 (a cached rerun's
        origins) instead of one each; those not found here are read one by one as before."""
        ids = sorted({i for i in run_ids if i and _RUN_ID.fullmatch(i)} - set(self._read))
        for start in range(0, len(ids) if self.experiment_id is not None else 0, 100):
            chunk = ids[start : start + 100]
            where = "attributes.run_id IN (" + ", ".join(f"'{i}'" for i in chunk) + ")"
            try:
                runs = self.client.search_runs([self.experiment_id], filter_string=where, max_results=len(chunk))
            except mlflow.exceptions.MlflowException:
                return
            self._read.update({run.info.run_id: run for run in runs})

    def copy_results(self, source_run: str, target_run: str, params: bool = True, description: bool = True) -> None:
        """Copy the latest metrics (and the params) of one run onto another, and its description; a
        learning curve (``CURVES``) point by point at its steps, so a cached training run still shows its
        curve (and the description's curves figure, served from the origin run)."""
        try:
            run = self._read.pop(source_run, None) or self.client.get_run(source_run)
        except mlflow.exceptions.MlflowException:
            return
        now = int(time.time() * 1000)
        metrics = []
        for key, value in run.data.metrics.items():
            curve = self._history(source_run, key, now) if key.startswith(CURVES) else []
            metrics += curve or [Metric(key, value, now, 0)]
        # its description too (a training's convergence line and curves, whose figure is the origin's)
        note = run.data.tags.get("mlflow.note.content") if description else None
        tags = {"mlflow.note.content": note} if note else None
        self.log(target_run, params=dict(run.data.params) if params else None, metrics=metrics, tags=tags)
        if run.inputs and run.inputs.dataset_inputs:  # a cached training step still shows its data
            self._log_inputs(target_run, list(run.inputs.dataset_inputs))

    def _history(self, run_id: str, key: str, now: int) -> list[Metric]:
        """Every point of ``key`` in ``run_id`` at its step (empty when it cannot be read)."""
        try:
            points = self.client.get_metric_history(run_id, key)
        except mlflow.exceptions.MlflowException:
            return []
        return [Metric(key, m.value, now, m.step) for m in points]

    def log_dataset(self, run_id: str, dataset: DatasetInput) -> None:
        """Record a dataset input on a step run and on its parent (the row the runs table shows)."""
        parent = self.client.get_run(run_id).data.tags.get("mlflow.parentRunId")
        for target in (run_id, parent) if parent else (run_id,):
            self._log_inputs(target, [dataset])

    def _log_inputs(self, run_id: str, datasets: list[DatasetInput]) -> None:
        # Steps training on one dataset race to create it in the store (a unique key): the
        # loser's retry finds it. Lineage is worth a warning, not a failed training run.
        for attempt in range(3):
            try:
                with _DATASETS:
                    self.client.log_inputs(run_id, datasets=datasets)
                return
            except mlflow.exceptions.MlflowException as e:
                if attempt == 2:
                    names = ", ".join(d.dataset.name for d in datasets)
                    logging.getLogger("bottlenecks.tracking").warning(
                        "could not record dataset %s on run %s: %s", names, run_id, e
                    )
                time.sleep(0.2 * (attempt + 1))


def experiment_links(base: str) -> list[str]:
    """One URL per experiment that opens its runs table in the model-training view."""
    exps = MlflowClient().search_experiments(max_results=200, order_by=["last_update_time DESC"])
    return [
        f"{e.name}: {base}/#/experiments/{e.experiment_id}{MODEL_TRAINING_VIEW}" for e in exps if e.name != "Default"
    ]


def _artifact_location(experiment: str) -> str | None:
    root = home.artifact_root()
    if root is None:
        return None
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in experiment)
    return f"{root}/{safe}"


class MlflowContext(Context):
    """A component context whose logs land in the step's MLflow run and the progress view."""

    def __init__(self, *, tracker: Tracker, run_id: str, view=None, **kwargs):
        kwargs.setdefault("environment_source", environment.describe)  # ctx.environment(), torch imported
        super().__init__(**kwargs)
        self.tracker = tracker
        self.run_id = run_id
        self.view = view
        if self.run_link_source is None:  # ctx.run_link(id): the pages of this run's siblings
            self.run_link_source = links.run_pages(lambda: tracker.client.get_run(run_id).info.experiment_id)
        self._pending: list[Metric] = []
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()

    def log_params(self, params: dict[str, Any]) -> None:
        super().log_params(params)
        self.tracker.log(self.run_id, params=flatten(params))

    def log_metric(self, key: str, value: float, step: int | None = None) -> None:
        key = self.metric_name(key)  # the namespace docs/metrics.md describes
        super().log_metric(key, value, step)
        value = float(value)
        if not math.isfinite(value):  # MLflow would store inf as 1.8e308, a number; the run diverged here
            self._diverged(key, value, step)
            value = math.nan
        with self._lock:  # NaN is kept: MLflow stores it, so a diverged run shows where it broke
            self._pending.append(Metric(key, value, int(time.time() * 1000), int(step or 0)))
            due = len(self._pending) >= 500 or time.monotonic() - self._last_flush > 2.0
        if due:
            self.flush()

    def _diverged(self, key: str, value: float, step: int | None) -> None:
        """Tag the run with the first non-finite value it logged: ``train/loss = inf at step 12``."""
        if getattr(self, "_diverged_at", None) is None:
            self._diverged_at = f"{key} = {value} at step {step if step is not None else '-'}"
            self.tracker.log(self.run_id, tags={"bottlenecks.diverged": self._diverged_at})

    def flush(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
            self._last_flush = time.monotonic()
        if batch:
            self.tracker.log(self.run_id, metrics=batch)

    def log_artifact(self, path: str | Path) -> None:
        super().log_artifact(path)
        path = Path(path)
        if path.is_dir():
            self.tracker.client.log_artifacts(self.run_id, str(path), artifact_path=path.name)
        else:
            self.tracker.client.log_artifact(self.run_id, str(path))

    def set_tags(self, tags: dict[str, str]) -> None:
        super().set_tags(tags)
        self.tracker.log(self.run_id, tags=tags)

    def log_dataset(
        self, name: str, source: str, digest: str, sizes: dict[str, int] | None = None, context: str = "training"
    ) -> None:
        super().log_dataset(name, source, digest, sizes, context)
        sizes = dict(sizes or {})
        profile = json.dumps({"num_rows": sum(sizes.values()), **{f"{k}_rows": v for k, v in sizes.items()}})
        dataset = Dataset(
            name=name,
            digest=digest,
            source_type="local",
            source=json.dumps({"uri": Path(source).resolve().as_uri()}),
            profile=profile,
        )
        self.tracker.log_dataset(self.run_id, DatasetInput(dataset, tags=[InputTag("mlflow.data.context", context)]))

    def log_model(self, model: Any, name: str = "model", example: tuple | None = None) -> None:
        super().log_model(model, name, example)
        import mlflow.pytorch
        import torch

        io = {}
        if example is not None:  # the model page shows its inputs and outputs
            from mlflow.models import infer_signature

            io = {"signature": infer_signature(example[0], example[1]), "input_example": example[0]}

        # pickle: the default pt2 export traces fixed shapes and breaks variable-length models.
        # Pinned requirements: inferring them imports and probes packages for every model.
        requirements = [f"torch=={torch.__version__.split('+')[0]}"]
        with mlflow.start_run(run_id=self.run_id, nested=True):
            mlflow.pytorch.log_model(
                model, name=name, serialization_format="pickle", pip_requirements=requirements, **io
            )

    def progress(self, total: float | None = None, description: str = ""):
        if self.view is None:
            return super().progress(total, description)
        return self.view.component_progress(self.step_name, total, description)
