"""The Prefect side of a run: a readable flow-run name and tags, each step's story through the
task run's logger, and the results (what reports declare, the MLflow link, a failed step's error)
as artifacts.

Workers (processes, Dask workers) have no Prefect context: their events come back to the flow
process (``flows/execute/pool.py``, the Dask event topic), where ``StepLogs`` writes them with the
task run's logger, bound in the task's own thread; Prefect's API handler ships them in the
background, so a log call costs the step a queue put. Progress lines are throttled.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from datetime import datetime
from typing import Any

PROGRESS_EVERY = 15.0  # seconds between progress lines of one step in Prefect's logs
ERROR_CHARS = 20_000  # a traceback longer than this keeps its end (where the error is)


def _commit(plan) -> str | None:
    """The git commit of the repository holding the pipeline file, else of the working directory."""
    folder = os.path.dirname(os.path.abspath(plan.pipeline.file))
    try:
        from flows.track.environment import git_commit
    except ImportError:  # an older tree: the working directory's commit
        from flows.track.runs import git_commit as _cwd_commit

        return _cwd_commit()
    return git_commit(folder) or git_commit(".")


def start_time(now: datetime | None = None) -> datetime:
    """When the run started: a scheduled flow run's slot (``02:00``, not when a worker picked it
    up), else now, in this machine's local time."""
    try:
        from prefect.context import FlowRunContext

        ctx = FlowRunContext.get()
        scheduled = ctx.flow_run.expected_start_time if ctx and ctx.flow_run else None
        if scheduled is not None:
            return scheduled.astimezone()
    except Exception:  # no Prefect context, or one without a schedule
        pass
    return (now or datetime.now()).astimezone()


def flow_run_name(plan, when: datetime | None = None) -> str:
    """``four-bottlenecks/quick 2026-12-01 02:00`` (the pipeline alone when it has no profile)."""
    when = when or start_time()
    who = f"{plan.name}/{plan.profile}" if plan.profile else plan.name
    return f"{who} {when:%Y-%m-%d %H:%M}"


def run_tags(plan) -> list[str]:
    """Tags that filter runs in the Prefect UI: ``pipeline:NAME``, ``profile:NAME``, ``commit:SHA12``."""
    tags = [f"pipeline:{plan.name}"]
    if plan.profile:
        tags.append(f"profile:{plan.profile}")
    commit = _commit(plan)
    if commit:
        tags.append(f"commit:{commit[:12]}")
    return tags


def name_current_flow_run(plan) -> None:
    """Give the flow run we are inside (a deployment's, started by a schedule) the run's name and
    tags, as a run started by hand gets them."""
    from prefect import get_client
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    if ctx is None or ctx.flow_run is None:
        return
    tags = sorted(set(ctx.flow_run.tags or []) | set(run_tags(plan)))
    try:
        with get_client(sync_client=True) as client:
            client.update_flow_run(ctx.flow_run.id, name=flow_run_name(plan), tags=tags)
    except Exception as e:  # a name is a courtesy; the run itself goes on
        logging.getLogger("bottlenecks").warning("could not name the Prefect flow run: %s", e)


LOGGER = "bottlenecks.prefect"  # the run's lines: to Prefect's API only, never the terminal


def _api_logger() -> logging.Logger:
    """A logger whose INFO lines reach Prefect's API and nothing else: ``home.configure`` keeps
    Prefect's own loggers at WARNING so the terminal shows the step view, not Prefect's lines."""
    logger = logging.getLogger(LOGGER)
    if not logger.handlers:
        from prefect.logging.handlers import APILogHandler

        logger.addHandler(APILogHandler())
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def run_logger():
    """The current task or flow run's logger (its ids attached), writing through ``_api_logger``;
    None outside a run."""
    try:
        from prefect.logging import get_run_logger
        from prefect.logging.loggers import PrefectLogAdapter

        return PrefectLogAdapter(_api_logger(), extra=dict(get_run_logger().extra))
    except Exception:  # outside a run (a test calling the runner directly)
        return None


def skipped(task_run_id, iid: str, why: str) -> None:
    """Say on a step's task run why it did not run."""
    try:
        base = run_logger()
        if base is not None:
            extra = {**base.extra, "task_run_id": str(task_run_id), "task_run_name": iid}
            logger = type(base)(base.logger, extra=extra)
            logger.warning(f"{iid} skipped: {why}")
    except Exception:  # a log line is a courtesy
        pass


def answers(timeout: float = 2.0) -> bool:
    """Whether the Prefect API this process was pointed at still answers (any HTTP reply counts;
    True where none is set: Prefect's temporary server then lives in this process)."""
    url = os.environ.get("PREFECT_API_URL")
    if not url:
        return True
    import httpx

    try:
        httpx.get(url.rstrip("/") + "/health", timeout=timeout)
    except httpx.TransportError:
        return False
    return True


def flush(timeout: float = 10.0) -> None:
    """Wait (up to ``timeout`` seconds) until the logs of this run are on the server."""
    try:
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=timeout)
    except Exception:  # no API to flush to: the logs stay where Prefect keeps them
        pass


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "run"


def _tail(text: str, limit: int = ERROR_CHARS) -> str:
    return text if len(text) <= limit else f"[... {len(text) - limit} characters cut ...]\n" + text[-limit:]


class StepLogs:
    """Each step's start, finish, progress, warnings and error on its Prefect task run."""

    def __init__(self, progress_every: float = PROGRESS_EVERY):
        self.progress_every = progress_every
        self.loggers: dict[str, Any] = {}
        self._last: dict[str, float] = {}  # instance -> when its last progress line went out
        self._lock = threading.Lock()

    def bind(self, iid: str) -> None:
        """Take the task run's logger (call in the task's thread, where Prefect knows the run)."""
        from prefect.context import TaskRunContext

        logger = run_logger() if TaskRunContext.get() is not None else None
        if logger is not None:
            self.loggers[iid] = logger

    def _log(self, iid: str, level: int, message: str) -> None:
        logger = self.loggers.get(iid)
        if logger is None:
            return
        try:
            logger.log(level, message)
        except Exception:  # a log line must never fail a step
            pass

    def started(self, iid: str, where: str) -> None:
        self._log(iid, logging.INFO, f"{iid} started on {where}")

    def cached(self, iid: str, origin: str, seconds: float) -> None:
        self._log(iid, logging.INFO, f"{iid} finished in {seconds:.1f}s from cache (outputs of MLflow run {origin})")

    def finished(self, iid: str, seconds: float, worker: str) -> None:
        self._log(iid, logging.INFO, f"{iid} finished in {seconds:.1f}s, computed on {worker}")

    def stopped(self, iid: str) -> None:
        self._log(iid, logging.WARNING, f"{iid} stopped: the run was interrupted")

    def progress(self, iid: str, completed: float, total: float | None, description: str = "") -> None:
        """A progress line at most every ``progress_every`` seconds, and one when the bar is full."""
        now = time.monotonic()
        done = bool(total) and completed >= total
        with self._lock:
            last = self._last.get(iid)
            if last is not None and not done and now - last < self.progress_every:
                return
            if done and last == float("inf"):
                return  # the full bar is reported once
            self._last[iid] = float("inf") if done else now
        amount = f"{completed:g}/{total:g} ({100.0 * completed / total:.0f}%)" if total else f"{completed:g}"
        self._log(iid, logging.INFO, f"{iid} progress {amount}{': ' + description if description else ''}")

    def warning(self, iid: str, level: int, message: str) -> None:
        self._log(iid, max(int(level), logging.WARNING), f"{iid}: {message}")

    def failed(self, iid: str, message: str, trace: str = "", worker: str = "") -> None:
        """The full error in the logs, and its summary as an artifact on the task run."""
        where = f" on {worker}" if worker else ""
        body = f"{iid} failed{where}: {message}"
        if trace and trace.strip() not in message:
            body += "\n" + _tail(trace.rstrip())
        self._log(iid, logging.ERROR, body)
        try:
            from prefect.artifacts import create_markdown_artifact
            from prefect.context import TaskRunContext

            if TaskRunContext.get() is None:
                return
            first = message.strip().splitlines()[0] if message.strip() else "failed"
            markdown = f"# {iid} failed{where}\n\n**{first}**\n\n```\n{_tail((trace or message).rstrip(), 8000)}\n```\n"
            create_markdown_artifact(markdown, description=f"{iid}: {first[:200]}")
        except Exception:  # the artifact is a courtesy; the logs hold the error
            pass


class ProgressArtifacts:
    """Each step's progress as a progress artifact on its Prefect task run, updated at most every
    ``every`` seconds; only from the task's own thread, where Prefect knows the task run."""

    def __init__(self, every: float = 5.0):
        self.every = every
        self._artifacts: dict[str, tuple] = {}  # instance -> (Prefect progress artifact, last update)
        self._lock = threading.Lock()

    def update(self, iid: str, event: dict) -> None:
        total = event.get("total")
        if not total:
            return
        percent = min(100.0, 100.0 * float(event.get("completed", 0)) / float(total))
        now = time.monotonic()
        with self._lock:
            artifact, last = self._artifacts.get(iid, (None, 0.0))
            if artifact is not None and percent < 100.0 and now - last < self.every:
                return
            self._artifacts[iid] = (artifact, now)
        try:
            from prefect.artifacts import create_progress_artifact, update_progress_artifact
            from prefect.context import TaskRunContext

            if TaskRunContext.get() is None:
                return
            description = f"{iid}: {event.get('description') or 'progress'}"
            if artifact is None:
                artifact = create_progress_artifact(percent, description=description)
            else:
                update_progress_artifact(artifact, percent, description=description)
            with self._lock:
                self._artifacts[iid] = (artifact, now)
        except Exception:  # progress is a courtesy; never fail a step over it
            pass


def publish_results(plan, result, experiment_id: str) -> None:
    """On the flow run: the Markdown each report declares as its ``artifact``, described by its
    ``headline``, and a link to the MLflow parent run."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact

    from flows.track import links, reports

    base = _slug(f"{plan.name}-{plan.profile}" if plan.profile else plan.name)
    for shown in reports.shown(plan, result, "artifact"):
        markdown = reports.markdown(shown.value)
        if markdown is None:
            continue
        head = shown.component.shown("headline", result.outputs[shown.step]) or shown.component.name
        create_markdown_artifact(markdown, key=_slug(f"{base}-{shown.step}"), description=f"{shown.step}: {head}")
    create_link_artifact(
        links.mlflow_run(experiment_id, result.parent_run_id),
        link_text=f"MLflow parent run {result.parent_run_id}",
        key=_slug(f"{base}-mlflow"),
        description=f"{plan.name}: this run's parameters, metrics and artifacts in MLflow",
    )
