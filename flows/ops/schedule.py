"""Nightly runs: the flow every schedule's deployment runs, and its Prefect deployment object.

Every deployment runs the module-level flow ``run_pipeline`` with the pipeline file, profile and
overrides as parameters, so ``bottlenecks serve`` on this machine and a Prefect worker on another
host (importing ``flows.ops.schedule``) execute the same thing. A slot is one Prefect flow run: the
pipeline's steps are task runs of the deployment's flow run, which carries the run's name and tags.
After the run it records the slots its run made Prefect skip, and, when the schedule says whom to
tell, runs ``bottlenecks history PIPELINE --notify TARGET``.

Making, listing and removing schedules is ``flows/ops/deployments.py`` (no Prefect import), serving
them ``flows/ops/serve.py``, missed and skipped slots ``flows/ops/slots.py``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from prefect import flow

from flows import home
from flows.ops.deployments import (  # noqa: F401  (the schedule API, importable from here as before)
    ENTRYPOINT,
    FLOW_NAME,
    TAG,
    ScheduleError,
    ScheduleSpec,
    apply,
    deployment_name,
    deployments,
    pipeline_name,
    remove,
    spec_from_deployment,
    spec_from_file,
)

NOTIFY_TIMEOUT = 600.0  # seconds `history --notify` may take before the slot gives up on telling


@flow(name=FLOW_NAME, persist_result=False, log_prints=False)
def run_pipeline(
    pipeline: str,
    profile: str | None = None,
    sets: list[str] | None = None,
    notify: str | None = None,
    notify_on: str = "regression",
    fresh: bool = False,
) -> Any:
    """Build and run one pipeline file (relative paths from the working directory) as this flow run."""
    from prefect.states import Cancelled

    from flows.execute import prefect_view
    from flows.execute.runner import run
    from flows.ops import slots
    from flows.plan.build import build
    from flows.services import connect

    home.configure()  # Prefect started this process (`serve`'s runner, a worker): MLflow's store, quiet logs
    connect.check_servers()
    if not Path(pipeline).is_file():
        raise FileNotFoundError(
            f"pipeline file {pipeline!r} not found from {os.getcwd()}; a relative path is "
            "resolved in the project folder: deploy with --working-dir set to it on the worker"
        )
    plan = build(Path(pipeline), profile=profile, sets=sets)
    prefect_view.name_current_flow_run(plan)  # `pipeline/profile 2026-12-01 02:00`, tagged, as a run by hand
    try:
        result = _run_until_decided(plan, pipeline, profile, sets or [], fresh) or run(
            plan, use_cache=not fresh, in_flow_run=True
        )
    finally:
        # the slots Prefect skipped meanwhile
        slots.record_current_deployment(plan.name, plan.profile, by=prefect_view.flow_run_name(plan))
    if result.stopped_by is not None:
        return Cancelled(message=f"stopped by signal {result.stopped_by}; finished steps are in the cache")
    if notify:
        tell(plan.name, notify, notify_on)
    if not result.ok:
        failed = ", ".join(f"{i} ({e.splitlines()[0][:200]})" for i, e in result.errors.items())
        raise RuntimeError(
            f"pipeline {plan.name!r} finished with failed steps: {failed or 'see MLflow'}; "
            f"parent run {result.parent_run_id}"
        )
    return {"pipeline": plan.name, "parent_run_id": result.parent_run_id, "status": result.status}


def _run_until_decided(plan, pipeline: str, profile: str | None, sets: list[str], fresh: bool):
    """A pipeline whose settings ask ``until_decided``: its looks as this flow run's task runs, going
    on where the last night stopped (``flows/ops/decide.py``); None for any other pipeline."""
    from flows.execute.runner import run
    from flows.ops.looks import run_looks
    from flows.settings import until_decided as design_of

    design = design_of(plan.settings.until_decided)
    if design is None:
        return None

    def run_look(look_plan, first: bool):  # --fresh applies to the first look; later looks reuse what it ran
        return run(look_plan, use_cache=not (fresh and first), in_flow_run=True)

    log = _logger()

    def say(line: str) -> None:
        log.info(f"until decided: {line}")

    done = run_looks(pipeline, profile=profile, sets=sets, design=design, run=run_look, say=say)
    return done.result


def history_command(pipeline: str, target: str, on: str) -> list[str]:
    """The ``bottlenecks history`` command a slot runs to tell ``target`` (this interpreter's); a night
    asks for the trend plot on the run it judged (`history` by hand writes nothing unless asked)."""
    return [sys.executable, "-m", "flows.cli", "history", pipeline, "--plot", "--notify", target, "--notify-on", on]


def tell(pipeline: str, target: str, on: str) -> int | None:
    """Run ``history --notify`` on the pipeline's runs; its exit status (1: it found a regression),
    None when it could not run. Never fails the slot: what went wrong is in the flow run's log."""
    logger = _logger()
    try:
        done = subprocess.run(
            history_command(pipeline, target, on), capture_output=True, text=True, timeout=NOTIFY_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        logger.warning(f"could not tell {target}: `bottlenecks history --notify` did not finish: {e}")
        return None
    said = (done.stdout + done.stderr).strip()
    if done.returncode in (0, 1):
        logger.info(f"history --notify {target} --notify-on {on} (exit {done.returncode}):\n{said[-4000:]}")
    else:
        logger.warning(
            f"could not tell {target}: `bottlenecks history --notify` exited {done.returncode}:\n{said[-4000:]}"
        )
    return done.returncode


def _logger():
    try:
        from prefect.logging import get_run_logger

        return get_run_logger()
    except Exception:  # outside a flow run (called directly)
        return logging.getLogger("bottlenecks")


def to_deployment(spec: ScheduleSpec, work_pool: str | None = None, job_variables: dict | None = None):
    """The Prefect ``RunnerDeployment`` of a spec (what ``serve`` runs): cron schedule, one run at a time."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
    from prefect.deployments.runner import EntrypointType
    from prefect.schedules import Cron

    from flows.ops.deployments import description

    return run_pipeline.to_deployment(
        name=spec.deployment,
        schedule=Cron(spec.cron, timezone=spec.timezone),
        parameters=spec.parameters,
        concurrency_limit=ConcurrencyLimitConfig(limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW),
        description=description(spec),
        tags=[TAG, f"pipeline:{spec.pipeline}"],
        work_pool_name=work_pool,
        job_variables=job_variables or None,
        # imported by module name, so any host with the project installed can run it
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
