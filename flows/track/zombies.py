"""Runs left RUNNING by a process that is gone (SIGKILL, a crash, a reboot) are marked KILLED.

Every parent and step run carries its owner's host, pid and the pid's start time as tags. At the
start of a run, the RUNNING runs of the same experiment are checked: one whose owner was on this
host and is no longer alive (or whose pid now belongs to another process) is a zombie. An owner
on another host cannot be asked, so its run counts as a zombie only once it is older than
``STALE_HOURS`` (no pipeline run here takes that long); neither can a run without owner tags.

The same sweep closes the Prefect side: the flow run a killed parent run recorded (tag
``prefect_flow_run_id``) and its unfinished task runs are set Crashed with the reason, so no flow run
stays RUNNING in Prefect after its process died. ``close_flow_runs`` also finds Prefect flow runs left
RUNNING whose MLflow run a sweep closed before (``bottlenecks serve`` calls it on start).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

HOST, PID, STARTED = "bottlenecks.host", "bottlenecks.pid", "bottlenecks.pid_started"
REASON = "bottlenecks.killed_reason"
STOPPED_BY = "bottlenecks.stopped_by"  # on a run an operator stopped (a signal), never on a crash
STALE_HOURS = float(os.environ.get("BOTTLENECKS_STALE_RUN_HOURS", 72))


def _start_token(pid: int) -> str | None:
    """An id of the process ``pid`` that changes when the pid is reused (boot id + start tick)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}:{stat.rsplit(')', 1)[1].split()[19]}"  # field 22, after the command name
    except (OSError, IndexError):
        pass
    try:
        import psutil  # where there is no /proc (macOS, Windows)

        return f"psutil:{psutil.Process(pid).create_time():.3f}"
    except Exception:  # not installed, or no such process
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


def owner_tags() -> dict[str, str]:
    """Tags naming this process as the owner of a run."""
    return {HOST: socket.gethostname(), PID: str(os.getpid()), STARTED: _start_token(os.getpid()) or ""}


def why_dead(run, now_ms: int | None = None) -> str | None:
    """Why a RUNNING ``run`` cannot still be running, or None when it may be."""
    tags = run.data.tags
    host, pid, started = tags.get(HOST), tags.get(PID, ""), tags.get(STARTED, "")
    age_h = ((now_ms or int(time.time() * 1000)) - run.info.start_time) / 3_600_000
    if host == socket.gethostname() and pid.isdigit():
        if not _alive(int(pid)):
            return f"its process {pid} on {host} is gone (killed or crashed)"
        token = _start_token(int(pid))
        if started and token and token != started:
            return f"pid {pid} on {host} now belongs to another process (the owner is gone)"
        return None
    if age_h > STALE_HOURS:
        owner = f"process {pid} on {host}" if host else "an unrecorded process"
        return f"started {age_h:.0f} h ago by {owner}, longer than any run takes ({STALE_HOURS:g} h)"
    return None


_HOW = {"SIGINT": "Ctrl-C (SIGINT)", "SIGTERM": "SIGTERM", "SIGHUP": "SIGHUP (its terminal closed)"}


def stopped_by(reason: str) -> str | None:
    """The signal an operator stopped a run with, read from the reason it recorded (``stopped by SIGTERM``,
    ``interrupted (KeyboardInterrupt)`` for a second Ctrl-C); None for any other end (a crash, a dead process)."""
    if reason.startswith("stopped by SIG"):
        return reason.removeprefix("stopped by ").split()[0].rstrip(":;,")
    if reason == "interrupted (KeyboardInterrupt)":
        return "SIGINT"
    return None


def who_stopped(reason: str) -> str | None:
    """Who stopped a run, for its ``bottlenecks.stopped_by`` tag: the signal, how it came (a Prefect runner
    cancelling its flow run, the command's own process gone) and the user; None when no operator did."""
    signame = stopped_by(reason)
    if signame is None:
        return None
    how = os.environ.get("BOTTLENECKS_STOPPED_BY") or _HOW.get(signame, signame)
    if os.environ.get("PREFECT__FLOW_RUN_ID") and signame == "SIGTERM":
        how += " from its Prefect runner (`bottlenecks serve` stopping, or the flow run cancelled)"
    try:
        import getpass

        user = getpass.getuser()
    except Exception:  # no name for this uid
        user = str(os.getuid())
    return f"{how}, user {user} on {socket.gethostname()}"


@dataclass
class Killed:
    """One run marked KILLED."""

    run_id: str
    name: str
    reason: str


def sweep(client, experiment_id: str) -> list[Killed]:
    """Mark the experiment's zombie runs KILLED (end time now, reason tag) and close the Prefect flow
    runs of those that recorded one (Crashed, with the reason); return them."""
    now = int(time.time() * 1000)
    killed, flows = [], {}
    for run in _running(client, experiment_id):
        reason = why_dead(run, now)
        if reason is None:
            continue
        client.set_tag(run.info.run_id, REASON, reason)
        client.set_terminated(run.info.run_id, "KILLED", end_time=now)
        killed.append(Killed(run.info.run_id, run.info.run_name or run.info.run_id[:8], reason))
        if run.data.tags.get(FLOW_RUN):
            flows[run.data.tags[FLOW_RUN]] = reason
    crash_flow_runs(flows)
    return killed


FLOW_RUN = "prefect_flow_run_id"
UNFINISHED = ["RUNNING", "PENDING", "SCHEDULED", "PAUSED", "CANCELLING"]


def crash_flow_runs(reasons: dict[str, str]) -> list[str]:
    """Set each Prefect flow run (id -> reason) that is not final yet, and its unfinished task runs,
    Crashed with the reason (through the Prefect API the command uses); the flow runs closed. A Prefect
    API that cannot be reached leaves them as they are (the next sweep tries again)."""
    if not reasons:
        return []
    try:
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.filters import FlowRunFilter, TaskRunFilter
        from prefect.states import Crashed

        closed = []
        with get_client(sync_client=True) as prefect:
            for flow_run_id, reason in reasons.items():
                try:
                    flow_run = prefect.read_flow_run(flow_run_id)
                except Exception:  # not in this Prefect API (another server, a deleted run)
                    continue
                message = f"its process died: {reason}"
                tasks = prefect.read_task_runs(
                    flow_run_filter=FlowRunFilter(id={"any_": [flow_run_id]}),
                    task_run_filter=TaskRunFilter(state={"type": {"any_": UNFINISHED}}),
                )
                for task in tasks:
                    prefect.set_task_run_state(task.id, Crashed(message=message), force=True)
                if flow_run.state is None or not flow_run.state.is_final():
                    prefect.set_flow_run_state(flow_run_id, Crashed(message=message), force=True)
                    closed.append(flow_run_id)
        return closed
    except Exception:  # the Prefect API is gone or refuses: the MLflow side is closed all the same
        return []


def close_flow_runs(client, limit: int = 200) -> list[str]:
    """Close the Prefect flow runs left RUNNING whose MLflow parent run is closed or whose process is
    gone (marking that run KILLED first): for `bottlenecks serve` on start and any command that wants
    every record closed. The flow runs set Crashed."""
    try:
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.filters import FlowRunFilter

        with get_client(sync_client=True) as prefect:
            flow_runs = prefect.read_flow_runs(
                flow_run_filter=FlowRunFilter(state={"type": {"any_": ["RUNNING", "PENDING", "CANCELLING"]}}),
                limit=limit,
            )
    except Exception:  # no Prefect API here: nothing to close
        return []
    experiments = [e.experiment_id for e in client.search_experiments()]
    reasons = {}
    now = int(time.time() * 1000)
    for flow_run in flow_runs:
        found = (
            client.search_runs(experiments, f"tags.{FLOW_RUN} = '{flow_run.id}'", max_results=5) if experiments else []
        )
        parents = [r for r in found if "mlflow.parentRunId" not in r.data.tags]
        if not parents:
            continue  # not a pipeline run this store knows: another's, left alone
        run = parents[0]
        if run.info.status == "RUNNING":
            reason = why_dead(run, now)
            if reason is None:
                continue  # still running somewhere
            client.set_tag(run.info.run_id, REASON, reason)
            kill_children(client, run.info.experiment_id, run.info.run_id, reason)
            client.set_terminated(run.info.run_id, "KILLED", end_time=now)
        else:
            reason = run.data.tags.get(REASON) or f"its MLflow run ended {run.info.status}"
        reasons[str(flow_run.id)] = reason
    return crash_flow_runs(reasons)


def kill_children(client, experiment_id: str, parent_id: str, reason: str) -> None:
    """Mark a parent run's RUNNING step runs KILLED (the parent was interrupted)."""
    now = int(time.time() * 1000)
    for run in _running(client, experiment_id, f" and tags.mlflow.parentRunId = '{parent_id}'"):
        client.set_tag(run.info.run_id, REASON, reason)
        client.set_terminated(run.info.run_id, "KILLED", end_time=now)


def summary(killed: list[Killed]) -> str:
    """One line for the terminal."""
    first = killed[0]
    return (
        f"marked {len(killed)} run(s) KILLED that a dead process had left RUNNING, e.g. {first.name} "
        f"{first.run_id[:8]}: {first.reason} (tag {REASON})"
    )


def _running(client, experiment_id: str, extra: str = ""):
    token = None
    while True:
        page = client.search_runs(
            [experiment_id], f"attributes.status = 'RUNNING'{extra}", max_results=1000, page_token=token
        )
        yield from page
        token = page.token
        if not token:
            return
