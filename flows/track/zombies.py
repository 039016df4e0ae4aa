"""Runs left RUNNING by a process that is gone (SIGKILL, a crash, a reboot) are marked KILLED.

Every parent and step run carries its owner's host, pid and the pid's start time as tags. At the
start of a run, the RUNNING runs of the same experiment are checked: one whose owner was on this
host and is no longer alive (or whose pid now belongs to another process) is a zombie. An owner
on another host cannot be asked, so its run counts as a zombie only once it is older than
``STALE_HOURS`` (no pipeline run here takes that long); neither can a run without owner tags.

The two stores are made to agree, whatever moment the process died at:

- a parent run left RUNNING is KILLED, and its Prefect flow run (tag ``prefect_flow_run_id``) Crashed,
  even one that had reached COMPLETED or FAILED: the process died before the run was closed (its note,
  its reports); a parent the process had closed FINISHED or FAILED (it died before dropping its
  open-run note) keeps its end, and its flow run takes the same end (Completed, Failed) unless it has one;
- a step run whose result the cache holds (``finished``, given by the caller that knows the cache) is
  FINISHED, the process having died between recording the result and closing the run; any other
  step run left RUNNING is KILLED;
- each task run the flow run left unfinished takes its step run's end: Completed for FINISHED, Failed
  for FAILED, else (KILLED, or never started) Crashed, each with the reason.

``close_flow_runs`` also finds Prefect flow runs left RUNNING whose MLflow run a sweep closed before
(``bottlenecks serve`` calls it on start). Which commands sweep: ``flows/execute/sweep.py``.
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


def alive(pid: int, started: str = "") -> bool:
    """Whether process ``pid`` on this host is alive and is the one that recorded ``started``."""
    if not _alive(pid):
        return False
    token = _start_token(pid)
    return not (started and token and token != started)


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
    status: str = "KILLED"  # FINISHED: a step whose result was recorded before its process died
    flow_run: str = ""  # a parent's Prefect flow run
    prefect_closed: bool = False  # that flow run and its task runs now agree with the MLflow runs


def sweep(client, experiment_id: str, finished=None) -> list[Killed]:
    """Close the experiment's runs that a dead process left RUNNING (end time now, reason tag): step runs
    whose result was recorded (``finished(run)`` true) FINISHED, the others KILLED; then bring the Prefect
    flow runs of the parents closed into agreement (``close_prefect``). The runs closed."""
    now = int(time.time() * 1000)
    killed, flows = [], {}
    for run in _running(client, experiment_id):
        reason = why_dead(run, now)
        if reason is None:
            continue
        parent = run.data.tags.get("mlflow.parentRunId")
        status = "FINISHED" if parent and finished is not None and finished(run) else "KILLED"
        client.set_tag(run.info.run_id, REASON, reason)
        client.set_terminated(run.info.run_id, status, end_time=now)
        killed.append(Killed(run.info.run_id, run.info.run_name or run.info.run_id[:8], reason, status))
        if not parent and run.data.tags.get(FLOW_RUN):
            flows[run.data.tags[FLOW_RUN]] = (reason, run.info.run_id)
    agreed = set(close_prefect(client, experiment_id, flows))
    for k in killed:
        k.flow_run = next((f for f, (_, parent) in flows.items() if parent == k.run_id), "")
        k.prefect_closed = k.flow_run in agreed
    return killed


FLOW_RUN = "prefect_flow_run_id"
UNFINISHED = ["RUNNING", "PENDING", "SCHEDULED", "PAUSED", "CANCELLING"]
STOPPED_TYPES = ("CRASHED", "CANCELLED")  # a flow run's end that agrees with a KILLED parent run


CLOSED_ENDS = ("FINISHED", "FAILED")  # a parent run its own process closed: its flow run takes the same end


def close_prefect(
    client, experiment_id: str, flows: dict[str, tuple[str, str]], ended: dict[str, str] | None = None
) -> list[str]:
    """Bring each Prefect flow run (id -> (reason, its MLflow parent run)) into agreement with its closed
    MLflow runs, through the Prefect API the command uses: each unfinished task run takes its step run's
    end (``task_state``); the flow run takes its parent's end (``ended``: flow run id -> the parent's
    MLflow status, KILLED where not given): after KILLED it is set Crashed unless it already reads Crashed
    or Cancelled; after FINISHED or FAILED a flow run that ended keeps its end and one left unfinished is
    set Completed or Failed. The flow runs now in agreement. A Prefect API that cannot be reached leaves
    them as they are (the next sweep of a RUNNING flow run, `bottlenecks serve`'s, tries again)."""
    if not flows:
        return []
    ended = ended or {}
    try:
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.filters import FlowRunFilter, TaskRunFilter

        closed = []
        with get_client(sync_client=True) as prefect:
            for flow_run_id, (reason, parent_id) in flows.items():
                try:
                    flow_run = prefect.read_flow_run(flow_run_id)
                except Exception:  # not in this Prefect API (another server, a deleted run)
                    continue
                message = f"its process died: {reason}"
                steps = _step_runs(client, experiment_id, parent_id)
                tasks = prefect.read_task_runs(
                    flow_run_filter=FlowRunFilter(id={"any_": [flow_run_id]}),
                    task_run_filter=TaskRunFilter(state={"type": {"any_": UNFINISHED}}),
                )
                for task in tasks:
                    state = task_state(steps.get(task.name), message)
                    prefect.set_task_run_state(task.id, state, force=True)
                parent_end = ended.get(flow_run_id, "KILLED")
                if parent_end in CLOSED_ENDS:  # closed by its own process: the flow run takes that end
                    if flow_run.state is None or not flow_run.state.is_final():
                        why = f"its MLflow run ended {parent_end}; then {message}"
                        prefect.set_flow_run_state(flow_run_id, _ended_state(parent_end, why), force=True)
                elif flow_run.state is None or flow_run.state.type.value not in STOPPED_TYPES:
                    if flow_run.state is not None and flow_run.state.is_final():
                        message = (
                            f"its process died after the flow run ended {flow_run.state.type.value}, before "
                            f"its MLflow run was closed (now KILLED): {reason}"
                        )
                    _crash(prefect, flow_run_id, message)
                closed.append(flow_run_id)
        return closed
    except Exception:  # the Prefect API is gone or refuses: the MLflow side is closed all the same
        return []


def task_state(step_run, message: str):
    """The Prefect state of a task run left unfinished, from its step's MLflow run (None: never started)."""
    from prefect.states import Completed, Crashed, Failed

    status = step_run.info.status if step_run is not None else None
    if status == "FINISHED":
        return Completed(message=f"its step finished (MLflow run {step_run.info.run_id}) before {message}")
    if status == "FAILED":
        return Failed(message=f"its step failed (MLflow run {step_run.info.run_id}); then {message}")
    return Crashed(message=message)


def _ended_state(status: str, message: str):
    """The Prefect state of a flow run whose MLflow parent run ended FINISHED or FAILED."""
    from prefect.states import Completed, Failed

    return (Completed if status == "FINISHED" else Failed)(message=message)


def _crash(prefect, flow_run_id: str, message: str) -> None:
    from prefect.states import Crashed

    prefect.set_flow_run_state(flow_run_id, Crashed(message=message), force=True)


def _step_runs(client, experiment_id: str, parent_id: str) -> dict:
    """The newest MLflow step run of each step run name under ``parent_id`` (a retry makes another)."""
    if client is None or not parent_id:
        return {}
    runs = client.search_runs(
        [experiment_id], f"tags.mlflow.parentRunId = '{parent_id}'", order_by=["attributes.start_time ASC"]
    )
    return {run.info.run_name: run for run in runs}


def close_flow_runs(client, limit: int = 200, finished=None) -> list[str]:
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
    closed = []
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
            kill_children(client, run.info.experiment_id, run.info.run_id, reason, finished)
            client.set_terminated(run.info.run_id, "KILLED", end_time=now)
        else:
            reason = run.data.tags.get(REASON) or f"its MLflow run ended {run.info.status}"
        status = "KILLED" if run.info.status == "RUNNING" else run.info.status
        flows = {str(flow_run.id): (reason, run.info.run_id)}
        closed += close_prefect(client, run.info.experiment_id, flows, {str(flow_run.id): status})
    return closed


def kill_children(client, experiment_id: str, parent_id: str, reason: str, finished=None) -> None:
    """Mark a parent run's RUNNING step runs KILLED (the parent was interrupted), or FINISHED where
    ``finished(run)`` says the step's result was recorded."""
    now = int(time.time() * 1000)
    for run in _running(client, experiment_id, f" and tags.mlflow.parentRunId = '{parent_id}'"):
        status = "FINISHED" if finished is not None and finished(run) else "KILLED"
        client.set_tag(run.info.run_id, REASON, reason)
        client.set_terminated(run.info.run_id, status, end_time=now)


def summary(killed: list[Killed]) -> str:
    """One line for the terminal."""
    ended = [k for k in killed if k.status == "KILLED"]
    first = (ended or killed)[0]
    done = len(killed) - len(ended)
    also = f", and {done} step run(s) FINISHED whose results were recorded" if done else ""
    flows = [k for k in killed if k.flow_run]
    agreed = sum(k.prefect_closed for k in flows)
    prefect = f"; {agreed} Prefect flow run(s) set Crashed, their unfinished task runs ended as their step runs"
    if agreed < len(flows):
        prefect += f" ({len(flows) - agreed} not: the Prefect API did not answer; the next command retries)"
    return (
        f"marked {len(ended)} run(s) KILLED that a dead process had left RUNNING{also}, e.g. {first.name} "
        f"{first.run_id[:8]}: {first.reason} (tag {REASON})" + (prefect if flows else "")
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
