"""Close what a killed run left open, in both stores, before a command reads them.

Every command that opens a folder's stores calls ``close_dead_runs`` first: ``run`` (``_run.py``),
``plan``, ``history`` and ``ui`` (``serve`` closes every flow run left running, ``zombies.close_flow_runs``).
It lists the folder's open-run notes (``flows/track/open_runs.py``); only when one names a process that
is gone does it open MLflow (the tracking URI the run used) and Prefect (the command's own API: the
configured server, the folder's background server, else Prefect's temporary one) and close them as
``flows/track/zombies.py`` says: parent runs KILLED and their flow runs Crashed (a parent the process
had already closed keeps its end, and its flow run agrees with it), step runs whose result the cache
holds FINISHED (their task runs Completed), the other step runs KILLED (task runs Crashed). A note is
dropped once both stores agree, or once its run is deleted; one whose tracking server or Prefect API did
not answer is tried again by the next command.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from flows import home
from flows.execute.cache import StepCache
from flows.track import open_runs, zombies


def recorded(cache: StepCache) -> Callable[[object], bool]:
    """Whether a computed step run's result is in the cache (its process died after recording it): the
    cache entry of its key names it. A run of a step served from the cache that was left open died while
    its results were being copied onto it: it is not finished (it is closed KILLED, and the next run
    reuses the cache entry again)."""

    def finished(run) -> bool:
        tags = run.data.tags
        if tags.get("cached") == "true":
            return False
        entry = cache.peek(tags.get("cache_key", "")) if tags.get("cache_key") else None
        return isinstance(entry, dict) and entry.get("run_id") == run.info.run_id

    return finished


def close_dead_runs(prefect_url: Callable[[], None] | None = None) -> list[zombies.Killed]:
    """Close the runs of this folder whose process is gone (nothing is opened when there are none); the
    runs closed. ``prefect_url``: points Prefect at the command's API before it is imported (the default
    reads ``PREFECT_API_URL``, else starts or reuses the folder's background server)."""
    notes = open_runs.dead()
    if not notes:
        return []
    (prefect_url or _point_prefect)()
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    cache = StepCache(home.home(), create=False)
    finished = recorded(cache)
    closed: list[zombies.Killed] = []
    for note in notes:
        client = MlflowClient(tracking_uri=note.get("tracking_uri") or None)
        try:
            client.get_run(note["parent_run_id"])
        except MlflowException as e:
            if e.error_code == "RESOURCE_DOES_NOT_EXIST":  # the run was deleted: nothing left to close
                open_runs.remove(Path(note["path"]))
            continue  # else a store that does not answer now: the next command tries again
        except Exception:  # a tracking server that is down or restarting: the same
            continue
        closed += zombies.sweep(client, note["experiment_id"], finished)
        if _prefect_agrees(client, note, client.get_run(note["parent_run_id"])):
            open_runs.remove(Path(note["path"]))
    return closed


def _prefect_agrees(client, note: dict, parent) -> bool:
    """Bring the parent's flow run into agreement with the parent's end (again, where an earlier command
    could not reach Prefect); whether it now agrees."""
    flow_run = parent.data.tags.get(zombies.FLOW_RUN)
    status = parent.info.status
    if not flow_run or status == "RUNNING":
        return status != "RUNNING"
    reason = parent.data.tags.get(zombies.REASON) or f"its MLflow run ended {status}"
    flows = {flow_run: (reason, parent.info.run_id)}
    return bool(zombies.close_prefect(client, note["experiment_id"], flows, {flow_run: status}))


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
