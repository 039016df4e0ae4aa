"""Close what a killed run left open, in both stores, before a command reads them.

Every command that opens a folder's stores calls ``close_dead_runs`` first: ``run`` (``_run.py``),
``plan``, ``history`` and ``ui`` (``serve`` closes every flow run left running, ``zombies.close_flow_runs``).
It lists the folder's open-run notes (``flows/track/open_runs.py``); only when one names a process that
is gone does it open MLflow (the tracking URI the run used) and Prefect (the command's own API: the
configured server, the folder's background server, else Prefect's temporary one) and close them as
``flows/track/zombies.py`` says: parent runs KILLED and their flow runs Crashed, step runs whose result
the cache holds FINISHED (their task runs Completed), the other step runs KILLED (task runs Crashed).
A note is dropped once both stores agree; one whose Prefect API did not answer is tried again by the
next command.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from flows import home
from flows.execute.cache import StepCache
from flows.track import open_runs, zombies


def recorded(cache: StepCache) -> Callable[[object], bool]:
    """Whether a step run's result is in the cache (its process died after recording it): the cache
    entry of its key names it, or, for a step served from the cache, the run it reused."""

    def finished(run) -> bool:
        tags = run.data.tags
        entry = cache.peek(tags.get("cache_key", "")) if tags.get("cache_key") else None
        if not isinstance(entry, dict):
            return False
        return entry.get("run_id") in (run.info.run_id, tags.get("reused_from"))

    return finished


def close_dead_runs(prefect_url: Callable[[], None] | None = None) -> list[zombies.Killed]:
    """Close the runs of this folder whose process is gone (nothing is opened when there are none); the
    runs closed. ``prefect_url``: points Prefect at the command's API before it is imported (the default
    reads ``PREFECT_API_URL``, else starts or reuses the folder's background server)."""
    notes = open_runs.dead()
    if not notes:
        return []
    (prefect_url or _point_prefect)()
    from mlflow.tracking import MlflowClient

    cache = StepCache(home.home(), create=False)
    finished = recorded(cache)
    closed: list[zombies.Killed] = []
    for note in notes:
        client = MlflowClient(tracking_uri=note.get("tracking_uri") or None)
        try:
            parent = client.get_run(note["parent_run_id"])
        except Exception:  # the store or the run is gone: nothing left to close
            open_runs.remove(_path(note))
            continue
        closed += zombies.sweep(client, note["experiment_id"], finished)
        if _prefect_agrees(client, note, client.get_run(parent.info.run_id)):
            open_runs.remove(_path(note))
    return closed


def _prefect_agrees(client, note: dict, parent) -> bool:
    """Bring the parent's flow run into agreement (again, where an earlier command could not reach
    Prefect); whether it now agrees."""
    flow_run = parent.data.tags.get(zombies.FLOW_RUN)
    if not flow_run or parent.info.status == "RUNNING":
        return parent.info.status != "RUNNING"
    reason = parent.data.tags.get(zombies.REASON) or f"its MLflow run ended {parent.info.status}"
    return bool(zombies.close_prefect(client, note["experiment_id"], {flow_run: (reason, parent.info.run_id)}))


def _path(note: dict):
    from pathlib import Path

    return Path(note["path"])


def _point_prefect() -> None:
    """Point Prefect at this folder's API before it is imported: a configured server, else the folder's
    background server (started if it is not up: the flow runs are in its database), else Prefect's
    temporary server on the same database."""
    if os.environ.get("PREFECT_API_URL"):
        return
    from flows.services import prefect_server

    if prefect_server.enabled():
        try:
            os.environ["PREFECT_API_URL"] = prefect_server.use(home.home())
        except prefect_server.ServerError:
            return  # Prefect's temporary server then; a failure there leaves the note for the next command
