"""Results of one pipeline over time: the parent runs in MLflow, their key metrics and claim
verdicts as a table, regressions against the recent median (and a failed, killed or dead newest
run), and a trend plot.

A claim's verdict (metric ``claim/<id>``: holds 1, inconclusive 0.5, fails 0, device-dependent
-1, not measured -2) compared with the run before: ``holds -> fails`` is a regression; any other
change (``holds <-> inconclusive``, ``inconclusive <-> fails``, ``fails -> holds``) is a change,
shown with the report's reasons on both sides (its verdicts file); a change that came with another environment
(the parent runs' ``env.*`` tags differ in a field that moves figures: machine, CPU, GPU, torch,
CUDA, library versions) is marked as such instead, with the fields that differ, since the
machine alone can move a figure.

A parent run is a run of the pipeline's experiment tagged ``pipeline`` without an
``mlflow.parentRunId`` tag. Its own metrics are the key metrics; when it has none (the runner
logs results on the step runs), each step run's latest metrics count, named
``<step run>/<metric>`` (e.g. ``report/claim/b2-lstm-beats-rnn``), which is stable across
runs because step run names come from the pipeline and its matrix.
"""

from __future__ import annotations

import fnmatch
import glob
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from flows.track import reports
from flows.track.environment import differences, from_tags

INFO_COLUMNS = ("start_time", "status")
CLAIM = re.compile(r"(^|/)claim/[^/]+$")  # a report's verdicts, coded as below
CLAIM_STATS = re.compile(r"(^|/)claim/[^/]+/")  # a claim's margin, interval and p-values: shown, not banded
VERDICTS = {1.0: "holds", 0.5: "inconclusive", 0.0: "fails", -1.0: "device-dependent", -2.0: "not measured"}
REGRESSIONS = ("threshold", "regression", "failed", "killed")  # kinds that make `history` exit 1


class HistoryError(Exception):
    """The history cannot be read (no such pipeline, bad option)."""


@dataclass
class Thresholds:
    """Relative change that counts as a regression: a default and per-metric glob overrides."""

    default: float = 0.25
    per_metric: list[tuple[str, float]] = field(default_factory=list)

    def of(self, metric: str) -> float:
        for pattern, value in reversed(self.per_metric):  # the last matching override wins
            if fnmatch.fnmatchcase(metric, pattern):
                return value
        return self.default


def parse_thresholds(values: list[str] | None) -> Thresholds:
    """Read ``0.1`` (the default) and ``GLOB=0.5`` (for matching metrics) options."""
    out = Thresholds()
    for raw in values or []:
        pattern, _, number = raw.rpartition("=")
        try:
            value = float(number)
        except ValueError:
            raise HistoryError(
                f"--threshold {raw!r}: expected a number like 0.2 (20% off the median) "
                "or METRIC_GLOB=NUMBER like 'train*/loss=0.5'"
            ) from None
        if value < 0 or math.isnan(value):
            raise HistoryError(f"--threshold {raw!r}: the relative change must be >= 0")
        if pattern:
            out.per_metric.append((pattern, value))
        else:
            out.default = value
    return out


@dataclass
class Flag:
    """One regression found in the newest run."""

    metric: str
    kind: str  # "threshold", "regression", "change", "environment", "failed" or "killed"
    newest: float | None
    baseline: float | None
    message: str

    @property
    def is_regression(self) -> bool:
        return self.kind in REGRESSIONS


def _experiment_id(client, pipeline: str) -> str:
    exp = client.get_experiment_by_name(pipeline)
    if exp is None:
        names = sorted(e.name for e in client.search_experiments(max_results=200))
        from components.imports import suggest

        raise _no_runs(pipeline, suggest(pipeline, names))
    return exp.experiment_id


def _no_runs(pipeline: str, hint: str = "") -> HistoryError:
    return HistoryError(
        f"no runs of pipeline {pipeline!r} in the MLflow store {_tracking_uri()}{hint}; the experiment is named "
        "after the pipeline's 'name:' (run it first, or point MLFLOW_TRACKING_URI at the right server)"
    )


def _tracking_uri() -> str:
    import mlflow

    return mlflow.get_tracking_uri()


def parent_runs(pipeline: str, last: int) -> list:
    """The newest ``last`` parent runs of ``pipeline``, oldest first, as MLflow ``Run`` objects."""
    import mlflow

    from flows.services.mlflow_db import database_file

    store = database_file(_tracking_uri())
    if store is not None and not store.exists():  # reading must not create the local store
        raise _no_runs(pipeline)
    client = mlflow.MlflowClient()
    exp = _experiment_id(client, pipeline)
    quoted = pipeline.replace("'", "\\'")
    runs = client.search_runs(
        [exp],
        f"tags.pipeline = '{quoted}' and attributes.run_name = '{quoted}'",
        order_by=["attributes.start_time DESC"],
        max_results=max(4 * last, 50),
    )
    runs = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    if not runs:
        raise HistoryError(f"pipeline {pipeline!r} has an experiment but no parent runs yet")
    return runs[:last][::-1]


def _child_metrics(experiment_id: str, run_id: str) -> dict[str, float]:
    """Latest metrics of every step run of one parent run, keyed ``<step run>/<metric>``."""
    import mlflow

    kids = mlflow.MlflowClient().search_runs([experiment_id], f"tags.mlflow.parentRunId = '{run_id}'", max_results=5000)
    out: dict[str, float] = {}
    for kid in kids:
        name = kid.data.tags.get("mlflow.runName") or kid.info.run_id[:8]
        out.update({f"{name}/{k}": float(v) for k, v in kid.data.metrics.items()})
    return out


def _claim_globs(rows: list[dict[str, float]]) -> list[str]:
    """Default to the step runs that judged claims (a report), when there are any."""
    judged = {name.rsplit("/claim", 1)[0] for row in rows for name in row if CLAIM.search(name) or "/claims/" in name}
    return sorted(f"{glob.escape(step)}/*" for step in judged)  # step runs may be 'report[seed=0]'


def table(pipeline: str, last: int = 10, metrics: list[str] | None = None) -> pd.DataFrame:
    """One row per parent run (oldest first, indexed by run id): start time, status, key metrics.

    ``metrics`` are globs that select columns; by default all of the parent's own metrics, or
    when it has none, the metrics of the step runs that judged claims (all if none did).
    ``frame.attrs["logged"]`` maps each run id to the metric names it logged, so a logged NaN
    (a diverged run) is told apart from a metric the run does not have.
    """
    runs = parent_runs(pipeline, last)
    if any(r.data.metrics for r in runs):
        rows = [{k: float(v) for k, v in r.data.metrics.items()} for r in runs]
    else:
        rows = [_child_metrics(r.info.experiment_id, r.info.run_id) for r in runs]
        if not metrics:
            metrics = _claim_globs(rows)
    ids = [r.info.run_id for r in runs]
    values = pd.DataFrame(rows, index=ids)
    if metrics:
        keep = [c for c in values.columns if any(fnmatch.fnmatchcase(c, g) for g in metrics)]
        if not keep:
            raise HistoryError(
                f"no metric matches {', '.join(metrics)}; metrics of {pipeline!r}: "
                f"{', '.join(sorted(values.columns)[:30]) or 'none'}"
            )
        values = values[keep]
    values = values[sorted(values.columns)]
    info = pd.DataFrame(
        {
            "start_time": pd.to_datetime([r.info.start_time for r in runs], unit="ms", utc=True),
            "status": [r.info.status for r in runs],
        },
        index=ids,
    )
    frame = pd.concat([info, values], axis=1)
    frame.attrs["logged"] = {rid: set(row) for rid, row in zip(ids, rows)}
    frame.attrs["why"] = {r.info.run_id: _why_unfinished(r) for r in runs}
    frame.attrs["environment"] = {r.info.run_id: from_tags(r.data.tags) for r in runs}
    frame.attrs["commit"] = {r.info.run_id: r.data.tags.get("git_commit") for r in runs}
    return frame


def _why_unfinished(run) -> str | None:
    """Why a KILLED run was killed, or why a RUNNING one cannot still be running."""
    from flows.track import zombies

    if run.info.status == "KILLED":
        return run.data.tags.get(zombies.REASON) or "no reason recorded"
    if run.info.status == "RUNNING":
        return zombies.why_dead(run)
    return None


def regressions(frame: pd.DataFrame, thresholds: Thresholds) -> list[Flag]:
    """Compare the newest run with the ones before it (the frame is oldest first)."""
    if frame.empty:
        return []
    newest = frame.iloc[-1]
    before = frame.iloc[:-1]
    flags: list[Flag] = []
    why = frame.attrs.get("why", {}).get(frame.index[-1])
    if newest["status"] == "FAILED":
        flags.append(Flag("status", "failed", None, None, f"the newest run {frame.index[-1][:8]} FAILED"))
    elif newest["status"] == "KILLED":
        flags.append(Flag("status", "killed", None, None, f"the newest run {frame.index[-1][:8]} was KILLED: {why}"))
    elif newest["status"] == "RUNNING" and why:
        flags.append(
            Flag(
                "status",
                "killed",
                None,
                None,
                f"the newest run {frame.index[-1][:8]} never finished: {why}; the next run marks it KILLED",
            )
        )
    for metric in frame.columns.drop(list(INFO_COLUMNS)):
        now = newest[metric]
        history = before[metric].dropna()
        logged = metric in frame.attrs.get("logged", {}).get(frame.index[-1], ())
        if history.empty or (pd.isna(now) and not logged):
            continue
        now = float(now)
        if CLAIM_STATS.search(metric):  # their verdict's change is judged through claim/<id> itself
            continue
        if CLAIM.search(metric):
            previous = float(history.iloc[-1])
            if now != previous:
                flags.append(_verdict_change(frame, metric, now, previous, history.index[-1]))
            continue
        median = float(history.median())
        limit = thresholds.of(metric)
        change = _relative(now, median)
        if change > limit:
            flags.append(
                Flag(
                    metric,
                    "threshold",
                    now,
                    median,
                    f"{metric} = {now:.4g} is {change:.0%} off the median {median:.4g} of the "
                    f"{len(history)} run(s) before (threshold {limit:.0%})",
                )
            )
    return flags


def verdict_name(code: float) -> str:
    """The verdict a ``claim/<id>`` metric codes (runs before ``inconclusive`` existed logged 0 for
    every verdict but holds)."""
    return VERDICTS.get(code, f"{code:g}")


def _verdict_change(frame: pd.DataFrame, metric: str, now: float, previous: float, previous_run: str) -> Flag:
    """Classify a claim whose verdict differs from the run before: a regression (holds -> fails),
    a change (any other move), or a change that came with another environment."""
    newest_run = frame.index[-1]
    before, after = verdict_name(previous), verdict_name(now)
    envs = frame.attrs.get("environment", {})
    moved = differences(envs.get(previous_run), envs.get(newest_run))
    commits = frame.attrs.get("commit", {})
    code = (commits.get(previous_run), commits.get(newest_run))
    code_note = f"; code {code[0][:8]} -> {code[1][:8]}" if all(code) and code[0] != code[1] else ""
    evidence = _evidence(metric, previous_run, newest_run)
    head = f"{metric}: {before} -> {after}"
    if moved:
        shown = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in sorted(moved.items())[:6])
        text = (
            f"{head} with another environment ({shown}){code_note}: a machine or library can move "
            f"the figure; rerun one commit on both to tell it from a regression{evidence}"
        )
        return Flag(metric, "environment", now, previous, text)
    if before == "holds" and after == "fails":
        return Flag(metric, "regression", now, previous, f"{head} (same environment){code_note}{evidence}")
    return Flag(metric, "change", now, previous, f"{head}{code_note}{evidence}")


def _evidence(metric: str, previous_run: str, newest_run: str) -> str:
    """`` (before: <reason>; now: <reason>)`` from the runs' verdicts files, when either has one."""
    claim_id = metric.rsplit("claim/", 1)[-1]
    reasons = [_reason(run, claim_id) for run in (previous_run, newest_run)]
    if not any(reasons):
        return ""
    return f" (before: {reasons[0] or 'no reason recorded'}; now: {reasons[1] or 'no reason recorded'})"


def _reason(run_id: str, claim_id: str, most: int = 400) -> str | None:
    card = _verdicts(run_id)
    for claim in (card or {}).get("claims", []):
        if str(claim.get("id")) == claim_id:
            reason = str(claim.get("reason") or "")
            return reason if len(reason) <= most else reason[: most - 3] + "..."
    return None


def _verdicts(run_id: str) -> dict | None:
    """The verdicts file a parent run names (its report's copy, ``shows={"verdicts": ...}``), or None."""
    import json
    import tempfile

    import mlflow

    try:
        client = mlflow.MlflowClient()
        name = client.get_run(run_id).data.tags.get(reports.VERDICTS_TAG)
        # a run recorded before the tag named its file: any JSON artifact at its root that holds claims
        names = [name] if name else [a.path for a in client.list_artifacts(run_id) if a.path.endswith(".json")]
        with tempfile.TemporaryDirectory() as tmp:
            for candidate in names:
                card = json.loads(Path(client.download_artifacts(run_id, candidate, tmp)).read_text())
                if isinstance(card, dict) and isinstance(card.get("claims"), list):
                    return card
    except Exception:  # noqa: BLE001  (no artifact, or an unreadable one: no evidence to show)
        return None
    return None


def _relative(value: float, median: float) -> float:
    """Relative change; a NaN (diverged) value against a finite median is infinitely off."""
    if math.isnan(value) or math.isinf(value):
        return 0.0 if (value == median or (math.isnan(value) and math.isnan(median))) else math.inf
    if math.isnan(median):
        return 0.0
    return abs(value - median) / max(abs(median), 1e-12)


def render(frame: pd.DataFrame, flags: list[Flag]) -> str:
    """The table as text: metrics as rows, runs as columns (oldest left), flagged rows marked."""
    body = frame.drop(columns=list(INFO_COLUMNS)).T
    body.columns = [f"{t:%m-%d %H:%M} {rid[:6]}" for rid, t in zip(frame.index, frame["start_time"])]
    flagged = {f.metric for f in flags}
    body.insert(
        len(body.columns),
        "flag",
        ["<-- " + next(f.kind for f in flags if f.metric == m) if m in flagged else "" for m in body.index],
    )
    status = pd.DataFrame([list(frame["status"]) + [""]], index=["(status)"], columns=body.columns)
    with pd.option_context(
        "display.max_rows",
        500,
        "display.max_columns",
        50,
        "display.width",
        250,
        "display.float_format",
        "{:.4g}".format,
    ):
        return pd.concat([status, body]).to_string()


def trend_plot(frame: pd.DataFrame, flags: list[Flag], path: Path, most: int = 12) -> Path:
    """Plot the metrics over time (flagged ones first, at most ``most``) into a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flagged = [f.metric for f in flags if f.metric in frame.columns]
    others = [c for c in frame.columns.drop(list(INFO_COLUMNS)) if c not in flagged]
    chosen = (flagged + others)[:most]
    cols = min(3, max(1, len(chosen)))
    rows = max(1, math.ceil(len(chosen) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.8 * rows), squeeze=False)
    for ax, metric in zip(axes.flat, chosen):
        ax.plot(
            frame["start_time"],
            frame[metric].astype(float),
            marker="o",
            color="tab:red" if metric in flagged else "tab:blue",
        )
        ax.set_title(metric, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.tick_params(axis="x", rotation=30)
    for ax in list(axes.flat)[len(chosen) :]:
        ax.axis("off")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def log_trend(run_id: str, png: Path, frame: pd.DataFrame) -> None:
    """Attach the plot and the table to the newest parent run under ``history/``."""
    import mlflow

    client = mlflow.MlflowClient()
    client.log_artifact(run_id, str(png), artifact_path="history")
    csv = png.with_suffix(".csv")
    frame.to_csv(csv)
    client.log_artifact(run_id, str(csv), artifact_path="history")
