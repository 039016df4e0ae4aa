"""One pipeline's runs as a table: one row per judged run (oldest first), its start, status, steps served
from the cache and the seeds' mean of each chosen metric; what the judge needs besides rides in ``attrs``."""

from __future__ import annotations

import fnmatch
import glob
import re

import pandas as pd

from flows.ops.history import read
from flows.ops.history._model import HistoryError
from flows.track.environment import from_tags

INFO_COLUMNS = ("start_time", "status", "cached")
CLAIM = re.compile(r"(^|/)claim/[^/]+$")  # a report's verdicts, coded as in claims.VERDICTS


def _claim_globs(columns) -> list[str]:
    """Default to the step runs that judged claims (a report), when there are any."""
    judged = {name.rsplit("/claim", 1)[0] for name in columns if CLAIM.search(name) or "/claims/" in name}
    return sorted(f"{glob.escape(step)}/*" for step in judged)  # step runs may be 'report[seed=0]'


def _chosen(nights: list[read.Night], metrics: list[str] | None, pipeline: str) -> list[str]:
    """The columns ``metrics`` globs select; by default the parent runs' own metrics, or when they have
    none the metrics of the step runs that judged claims (every step run's when none did)."""
    every = sorted({c for n in nights for c in n.values})
    if not metrics:
        own = sorted({c for n in nights for c in n.own})
        if own:
            return own
        metrics = _claim_globs(every) or ["*"]
    keep = [c for c in every if any(fnmatch.fnmatchcase(c, g) for g in metrics)]
    if not keep and every:
        raise HistoryError(
            f"no metric matches {', '.join(metrics)}; metrics of {pipeline!r}: {', '.join(every[:30])}"
            f"{' ...' if len(every) > 30 else ''}"
        )
    return keep


def _cached(night: read.Night) -> str:
    return f"{night.cached}/{night.steps}" if night.steps else ""


def table(pipeline: str, last: int = 10, metrics: list[str] | None = None, path: str | None = None) -> pd.DataFrame:
    """One row per finished (or failed, killed, dead) parent run, oldest first, indexed by run id.

    ``metrics`` are globs over the parent runs' metrics and the step runs' (``train[arch=lstm]/test/acc``,
    seeds grouped). ``attrs``: ``seeds`` (run -> column -> one value per seed), ``keys`` (column -> the
    metric's name within its run), ``logged`` (run -> the columns it has, so a logged NaN is told from a
    missing metric), ``why`` (why a run was killed or is dead), ``environment``, ``commit``, ``spec``
    (the pipeline's spec hash), ``flow_run`` (its Prefect flow run), ``experiment``, ``running`` (runs
    still running, left out), ``stopped`` (runs an operator stopped since the newest row, left out: who
    stopped each), ``slots`` (slots that did not run since the oldest row) and ``files`` (pipeline file
    -> runs, where several files share the name and no ``path`` chose one).
    """
    newest_first = read.all_parent_runs(pipeline, last, path)
    files = read.files_of(newest_first) if path is None else {}
    judged, live = read.split_running(newest_first)
    judged, stopped = read.split_stopped(judged)
    runs = judged[:last][::-1]
    if not runs:
        told = f"; {len(stopped)} stopped by an operator" if stopped else ""
        raise HistoryError(f"pipeline {pipeline!r} has no finished run yet{told}; {_running(live)}")
    current = read.current_name()
    nights = [read.read_night(r, current) for r in runs]
    columns = _chosen(nights, metrics, pipeline)
    ids = [r.info.run_id for r in runs]
    values = pd.DataFrame([{c: read.mean(n.values[c]) for c in columns if c in n.values} for n in nights], index=ids)
    values = values.reindex(columns=columns)
    info = pd.DataFrame(
        {
            "start_time": pd.to_datetime([r.info.start_time for r in runs], unit="ms", utc=True),
            "status": [r.info.status for r in runs],
            "cached": [_cached(n) for n in nights],
        },
        index=ids,
    )
    frame = pd.concat([info, values], axis=1)
    frame.attrs.update(
        experiment=runs[-1].info.experiment_id,
        keys={c: k for n in nights for c, k in n.keys.items() if c in columns},
        seeds={n.run_id: {c: n.values[c] for c in columns if c in n.values} for n in nights},
        logged={n.run_id: set(n.values) for n in nights},
        why={r.info.run_id: _why_unfinished(r) for r in runs},
        environment={r.info.run_id: from_tags(r.data.tags) for r in runs},
        commit={r.info.run_id: r.data.tags.get("git_commit") for r in runs},
        spec={r.info.run_id: r.data.tags.get("spec_hash") for r in runs},
        flow_run={r.info.run_id: r.data.tags.get("prefect_flow_run_id") for r in runs},
        running=[r.info.run_id for r in live if r.info.start_time >= runs[-1].info.start_time],
        stopped={
            r.info.run_id: read.stopped_by(r) for r in stopped[::-1] if r.info.start_time >= runs[-1].info.start_time
        },
        slots=read.slots(pipeline, runs[0].info.start_time if len(runs) >= last else None),
        files=files if len(files) > 1 else {},
    )
    return frame


def _running(live: list) -> str:
    if not live:
        return "none has started"
    return f"run {live[0].info.run_id} is still running"


def _why_unfinished(run) -> str | None:
    """Why a KILLED run was killed, or why a RUNNING one cannot still be running."""
    from flows.track import zombies

    if run.info.status == "KILLED":
        return run.data.tags.get(zombies.REASON) or "no reason recorded"
    if run.info.status == "RUNNING":
        return zombies.why_dead(run)
    return None


def metric_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c not in INFO_COLUMNS]


def from_values(nights: list[dict[str, tuple[float, ...]]], keys: dict[str, str] | None = None) -> pd.DataFrame:
    """A table over nights given in memory (column -> one value per seed, oldest first), shaped as ``table``
    shapes MLflow's: for judging simulated nights (benchmarks/history_calibration.py) and for tests."""
    ids = [f"night{i:04d}" for i in range(len(nights))]
    columns = sorted({c for n in nights for c in n})
    values = pd.DataFrame([{c: read.mean(v) for c, v in n.items()} for n in nights], index=ids)
    info = pd.DataFrame(
        {
            "start_time": pd.to_datetime([i * 86_400_000 for i in range(len(nights))], unit="ms", utc=True),
            "status": "FINISHED",
            "cached": "",
        },
        index=ids,
    )
    frame = pd.concat([info, values.reindex(columns=columns)], axis=1)
    frame.attrs.update(
        keys=keys or {},
        seeds={rid: dict(n) for rid, n in zip(ids, nights)},
        logged={rid: set(n) for rid, n in zip(ids, nights)},
    )
    return frame
