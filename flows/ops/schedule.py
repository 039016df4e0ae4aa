"""Nightly runs: one Prefect deployment per pipeline (and profile) with a cron schedule.

Every deployment runs the module-level flow ``run_pipeline`` with the pipeline file, profile and
overrides as parameters, so ``bottlenecks serve`` on this machine and a Prefect worker on another
host (importing ``flows.ops.schedule``) execute the same thing. A deployment admits one run at a
time and cancels a new one that collides with a run still going (no overlap of nightly runs).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows import home
from flows.language.errors import Collector, kind
from flows.language.yamlload import load

home.configure()

from prefect import flow  # noqa: E402

FLOW_NAME = "bottlenecks-pipeline"
TAG = "bottlenecks"


class ScheduleError(Exception):
    """A schedule cannot be created, found or served; the message says how to fix it."""


@flow(name=FLOW_NAME, persist_result=False, log_prints=False)
def run_pipeline(pipeline: str, profile: str | None = None, sets: list[str] | None = None) -> dict[str, Any]:
    """Build and run one pipeline file (relative paths from the working directory)."""
    from flows.execute import prefect_view
    from flows.execute.runner import run
    from flows.plan.build import build
    from flows.services import connect

    connect.check_servers()
    if not Path(pipeline).is_file():
        raise FileNotFoundError(
            f"pipeline file {pipeline!r} not found from {os.getcwd()}; a relative path is "
            "resolved in the project folder: deploy with --working-dir set to it on the worker"
        )
    plan = build(Path(pipeline), profile=profile, sets=sets)
    prefect_view.name_current_flow_run(plan)  # `pipeline/profile 2026-12-01 02:00`, tagged, as a run by hand
    result = run(plan)
    if not result.ok:
        failed = ", ".join(f"{i} ({e.splitlines()[0][:200]})" for i, e in result.errors.items())
        raise RuntimeError(
            f"pipeline {plan.name!r} finished with failed steps: {failed or 'see MLflow'}; "
            f"parent run {result.parent_run_id}"
        )
    return {"pipeline": plan.name, "parent_run_id": result.parent_run_id, "status": result.status}


@dataclass
class ScheduleSpec:
    """What one deployment runs and when."""

    pipeline: str  # the pipeline's name (MLflow experiment)
    file: str  # pipeline file, relative to the working directory when inside it
    cron: str
    timezone: str = "UTC"
    profile: str | None = None
    sets: list[str] = field(default_factory=list)

    @property
    def deployment(self) -> str:
        return deployment_name(self.pipeline, self.profile)

    @property
    def parameters(self) -> dict[str, Any]:
        return {"pipeline": self.file, "profile": self.profile, "sets": list(self.sets)}


def deployment_name(pipeline: str, profile: str | None) -> str:
    """``name`` or ``name@profile``: one deployment per pipeline and profile."""
    return f"{pipeline}@{profile}" if profile else pipeline


def _relative(path: Path) -> str:
    """Store paths inside the project relative to it, so a worker with the project elsewhere finds them."""
    path = path.resolve()
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _check_cron(cron: str, timezone: str) -> None:
    from prefect.client.schemas.schedules import CronSchedule
    from pydantic import ValidationError

    try:
        CronSchedule(cron=cron, timezone=timezone)
    except ValidationError as e:
        why = "; ".join(err["msg"] for err in e.errors())
        raise ScheduleError(
            f"invalid schedule cron={cron!r} timezone={timezone!r}: {why}. Use five cron "
            'fields (minute hour day month weekday), e.g. "0 2 * * *", and an IANA '
            "timezone such as UTC or Europe/Berlin"
        ) from None


def _as_sets(parameters: Any, file: str) -> list[str]:
    if parameters is None:
        return []
    if not isinstance(parameters, dict):
        raise ScheduleError(f"{file}: schedule.parameters must be a mapping of param to value, got {kind(parameters)}")
    return [f"{k}={v if _reads_back(v) else json.dumps(v)}" for k, v in parameters.items()]


def _reads_back(value: Any) -> bool:
    """Whether a ``--set`` reads the text ``value`` back as itself ('/data', not '[[[', 'a: b' or '12')."""
    found = Collector("--set")
    return isinstance(value, str) and load(value, found) == value and not found.errors


def spec_from_file(
    path: Path,
    *,
    cron: str | None = None,
    timezone: str | None = None,
    profile: str | None = None,
    sets: list[str] | None = None,
) -> ScheduleSpec:
    """Validate the pipeline and combine its ``schedule:`` key with command-line values (which win)."""
    from flows.plan.build import build

    plan = build(path, profile=profile, sets=sets)  # raises PipelineInvalid: nothing is scheduled
    declared = dict(plan.pipeline.schedule or {})
    cron = cron or declared.get("cron")
    if not cron:
        raise ScheduleError(
            f'{path}: no schedule: pass --cron "0 2 * * *" or add '
            "'schedule: {cron: \"0 2 * * *\"}' to the pipeline file"
        )
    timezone = timezone or declared.get("timezone") or "UTC"
    profile = profile if profile is not None else declared.get("profile")
    if profile is not None and profile != plan.profile:
        plan = build(path, profile=profile, sets=sets)
    all_sets = _as_sets(declared.get("parameters"), str(path)) + list(sets or [])
    if all_sets != list(sets or []):
        build(path, profile=profile, sets=all_sets)  # the declared parameters must apply too
    _check_cron(str(cron), str(timezone))
    return ScheduleSpec(
        pipeline=plan.name, file=_relative(path), cron=str(cron), timezone=str(timezone), profile=profile, sets=all_sets
    )


def spec_from_deployment(dep) -> ScheduleSpec | None:
    """Read a spec back from a deployment created here (None for a deployment without a cron)."""
    crons = [s.schedule for s in dep.schedules if getattr(s.schedule, "cron", None)]
    if not crons:
        return None
    params = dep.parameters or {}
    name, _, profile = dep.name.partition("@")
    return ScheduleSpec(
        pipeline=name,
        file=params.get("pipeline", ""),
        cron=crons[0].cron,
        timezone=crons[0].timezone or "UTC",
        profile=params.get("profile"),
        sets=list(params.get("sets") or []),
    )


def to_deployment(spec: ScheduleSpec, work_pool: str | None = None, job_variables: dict | None = None):
    """The Prefect ``RunnerDeployment`` of a spec: cron schedule, one run at a time."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
    from prefect.deployments.runner import EntrypointType
    from prefect.schedules import Cron

    return run_pipeline.to_deployment(
        name=spec.deployment,
        schedule=Cron(spec.cron, timezone=spec.timezone),
        parameters=spec.parameters,
        concurrency_limit=ConcurrencyLimitConfig(limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW),
        description=f"{spec.pipeline} ({spec.file}, profile {spec.profile or 'default'}) at '{spec.cron}' "
        f"{spec.timezone}",
        tags=[TAG, f"pipeline:{spec.pipeline}"],
        work_pool_name=work_pool,
        job_variables=job_variables or None,
        # imported by module name, so any host with the project installed can run it
        entrypoint_type=EntrypointType.MODULE_PATH,
    )


def apply(spec: ScheduleSpec, work_pool: str | None = None, job_variables: dict | None = None) -> str:
    """Create or update the deployment of ``spec``; return its id."""
    deployment = to_deployment(spec, work_pool, job_variables)
    return str(deployment.apply(work_pool_name=work_pool))


def prefect_client():
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


def deployments() -> list:
    """Every deployment of the pipeline flow, sorted by name."""
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    with prefect_client() as client:
        found = client.read_deployments(flow_filter=FlowFilter(name=FlowFilterName(any_=[FLOW_NAME])))
    return sorted(found, key=lambda d: d.name)


def next_runs(deployment_id, count: int = 1) -> list:
    """The next scheduled flow runs of a deployment, soonest first."""
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterId,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.client.schemas.sorting import FlowRunSort

    with prefect_client() as client:
        return client.read_flow_runs(
            deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id])),
            flow_run_filter=FlowRunFilter(
                state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED]))
            ),
            sort=FlowRunSort.EXPECTED_START_TIME_ASC,
            limit=count,
        )


def remove(pipeline: str, profile: str | None = None) -> str:
    """Delete the deployment of ``pipeline`` (a name or a file) and profile; return its name."""
    from prefect.exceptions import ObjectNotFound

    name = deployment_name(pipeline_name(pipeline), profile)
    with prefect_client() as client:
        try:
            dep = client.read_deployment_by_name(f"{FLOW_NAME}/{name}")
        except ObjectNotFound:
            known = ", ".join(d.name for d in deployments()) or "none"
            raise ScheduleError(
                f"no schedule named {name!r} in the Prefect API at {api_url()}; "
                f"schedules: {known} (see `bottlenecks schedule --list`)"
            ) from None
        client.delete_deployment(dep.id)
    return name


def pipeline_name(pipeline: str) -> str:
    """A pipeline given as a YAML file stands for its ``name:``; a ``.yaml`` path that is no
    readable file is refused as ``FILE:1:1``, as ``check`` refuses it, not taken for a name."""
    path = Path(pipeline)
    if path.suffix in (".yaml", ".yml"):
        from flows.plan.build import build

        return build(path).name
    return pipeline


def api_url() -> str:
    return os.environ.get("PREFECT_API_URL") or "the embedded Prefect store (PREFECT_API_URL unset)"


def served_specs() -> list[ScheduleSpec]:
    """Every schedule made here that no work pool runs: what ``serve`` runs by default."""
    specs = [spec_from_deployment(d) for d in deployments() if not d.work_pool_name]
    specs = [s for s in specs if s is not None]
    if not specs:
        raise ScheduleError(
            "nothing to serve: create a schedule with `bottlenecks schedule PIPELINE "
            '--cron "0 2 * * *"` or pass pipeline files with a schedule: key'
        )
    return specs


def serve(specs: list[ScheduleSpec], limit: int | None = None) -> None:
    """Run the scheduled pipelines on this machine until interrupted (needs a Prefect server)."""
    from prefect import serve as prefect_serve

    if not os.environ.get("PREFECT_API_URL"):
        raise ScheduleError(
            "serving schedules needs a Prefect server (the embedded store runs no "
            "scheduler); set PREFECT_API_URL or let `bottlenecks serve` start a local one"
        )
    prefect_serve(*[to_deployment(s) for s in specs], limit=limit, print_starting_message=False)
