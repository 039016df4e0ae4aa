"""Schedules as Prefect deployments: made from a pipeline file, read back, listed and removed.

One deployment per pipeline and profile, of the flow ``bottlenecks-pipeline`` (``run_pipeline`` in
``flows/ops/schedule.py``), with a cron schedule, one run at a time (a run that comes due while the
previous one still runs is cancelled). This module imports no Prefect: the schedule commands talk
to the server through ``flows/ops/prefect_api.py`` and take a second, not the seconds of importing
Prefect's client.
"""

from __future__ import annotations

import json
import os
import zoneinfo
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.language.errors import Collector, kind
from flows.language.yamlload import load
from flows.ops import prefect_api
from flows.ops.notify import WHEN as NOTIFY_ON

FLOW_NAME = "bottlenecks-pipeline"
TAG = "bottlenecks"
ENTRYPOINT = "flows.ops.schedule.run_pipeline"  # imported by module name: any host with the project runs it


class ScheduleError(Exception):
    """A schedule cannot be created, found or served; the message says how to fix it."""


@dataclass
class ScheduleSpec:
    """What one deployment runs and when, and whom it tells."""

    pipeline: str  # the pipeline's name (MLflow experiment)
    file: str  # pipeline file, relative to the working directory when inside it
    cron: str
    timezone: str = "UTC"
    profile: str | None = None
    sets: list[str] = field(default_factory=list)
    notify: str | None = None  # a target `bottlenecks history --notify` understands
    notify_on: str = "regression"
    fresh: bool = False  # recompute every step each night (`run --no-cache`)

    @property
    def deployment(self) -> str:
        return deployment_name(self.pipeline, self.profile)

    @property
    def parameters(self) -> dict[str, Any]:
        """The flow run's parameters; the newer ones only when set, so older deployments read the same."""
        params: dict[str, Any] = {"pipeline": self.file, "profile": self.profile, "sets": list(self.sets)}
        if self.notify:
            params.update(notify=self.notify, notify_on=self.notify_on)
        if self.fresh:
            params["fresh"] = True
        return params


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


def check_cron(cron: str, timezone: str) -> None:
    """Refuse a cron or timezone Prefect would refuse, with the fix (without importing Prefect)."""
    why = _cron_problem(cron)
    if why is None and timezone not in zoneinfo.available_timezones():
        why = f'Invalid timezone: "{timezone}"'
    if why is not None:
        raise ScheduleError(
            f"invalid schedule cron={cron!r} timezone={timezone!r}: {why}. Use five cron "
            'fields (minute hour day month weekday), e.g. "0 2 * * *", and an IANA '
            "timezone such as UTC or Europe/Berlin"
        )


def _cron_problem(cron: str) -> str | None:
    """Why ``cron`` is no five-field cron expression (None when it is one)."""
    from datetime import datetime

    from cronsim import CronSim, CronSimError  # the reader `slots.cron_slots` walks, a dependency of ours

    if len(cron.split()) != 5:
        return f'Invalid cron string: "{cron}" has {len(cron.split())} field(s), not 5'
    try:
        CronSim(cron, datetime(2026, 1, 1))
    except CronSimError as e:
        return f'Invalid cron string: "{cron}" ({e})'
    return None


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
    notify: str | None = None,
    notify_on: str = "regression",
    fresh: bool = False,
) -> ScheduleSpec:
    """Validate the pipeline and combine its ``schedule:`` key with command-line values (which win)."""
    from flows.plan.build import build

    check_notify(notify, notify_on)

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
    check_cron(str(cron), str(timezone))
    return ScheduleSpec(
        pipeline=plan.name,
        file=_relative(path),
        cron=str(cron),
        timezone=str(timezone),
        profile=profile,
        sets=all_sets,
        notify=notify,
        notify_on=notify_on,
        fresh=fresh,
    )


def check_notify(notify: str | None, notify_on: str = "regression") -> None:
    """Refuse a notification target or a --notify-on choice `bottlenecks history` would refuse, with its message."""
    from flows.ops.notify import NotifyError, parse_target

    if notify_on not in NOTIFY_ON:
        raise ScheduleError(f"--notify-on must be one of {', '.join(NOTIFY_ON)}, got {notify_on!r}")
    if notify is not None:
        try:
            parse_target(notify)
        except NotifyError as e:
            raise ScheduleError(str(e)) from None


def spec_from_deployment(dep: dict) -> ScheduleSpec | None:
    """Read a spec back from a deployment (the API's JSON) made here; None for one without a cron."""
    crons = [s["schedule"] for s in dep.get("schedules") or [] if (s.get("schedule") or {}).get("cron")]
    if not crons:
        return None
    params = dep.get("parameters") or {}
    name = dep["name"].partition("@")[0]
    return ScheduleSpec(
        pipeline=name,
        file=params.get("pipeline", ""),
        cron=crons[0]["cron"],
        timezone=crons[0].get("timezone") or "UTC",
        profile=params.get("profile"),
        sets=list(params.get("sets") or []),
        notify=params.get("notify"),
        notify_on=params.get("notify_on") or "regression",
        fresh=bool(params.get("fresh")),
    )


def parameter_schema() -> dict:
    """The OpenAPI schema of ``run_pipeline``'s parameters, as Prefect derives it from the signature."""

    def optional(position: int, item: dict, default: Any = None) -> dict:
        title = ("pipeline", "profile", "sets", "notify", "notify_on", "fresh")[position]
        return {"anyOf": [item, {"type": "null"}], "default": default, "position": position, "title": title}

    properties = {
        "pipeline": {"position": 0, "title": "pipeline", "type": "string"},
        "profile": optional(1, {"type": "string"}),
        "sets": optional(2, {"items": {"type": "string"}, "type": "array"}),
        "notify": optional(3, {"type": "string"}),
        "notify_on": {"default": "regression", "position": 4, "title": "notify_on", "type": "string"},
        "fresh": {"default": False, "position": 5, "title": "fresh", "type": "boolean"},
    }
    return {"title": "Parameters", "type": "object", "properties": properties, "required": ["pipeline"]}


def payload(spec: ScheduleSpec, flow_id: str, work_pool: str | None = None, job_variables: dict | None = None) -> dict:
    """The body of ``POST /deployments/`` for ``spec``: what ``RunnerDeployment.apply`` sends."""
    body: dict[str, Any] = {
        "flow_id": flow_id,
        "name": spec.deployment,
        "work_queue_name": None,
        "work_pool_name": work_pool,
        "paused": False,
        "schedules": [{"schedule": {"cron": spec.cron, "timezone": spec.timezone, "day_or": True}, "active": True}],
        "concurrency_limit": 1,
        "concurrency_options": {"collision_strategy": "CANCEL_NEW"},
        "parameters": spec.parameters,
        "description": description(spec),
        "tags": [TAG, f"pipeline:{spec.pipeline}"],
        "path": None,
        "entrypoint": ENTRYPOINT,
        "parameter_openapi_schema": parameter_schema(),
        "enforce_parameter_schema": True,
    }
    if work_pool:
        body.update(job_variables=job_variables or {}, pull_steps=[])
    return body


def description(spec: ScheduleSpec) -> str:
    told = f"; tells {spec.notify} on {spec.notify_on}" if spec.notify else ""
    fresh = "; recomputes every step" if spec.fresh else ""
    return (
        f"{spec.pipeline} ({spec.file}, profile {spec.profile or 'default'}) at '{spec.cron}' {spec.timezone}"
        f"{told}{fresh}"
    )


def api_url() -> str:
    url = os.environ.get("PREFECT_API_URL")
    if not url:
        raise ScheduleError("no Prefect server: set PREFECT_API_URL (the schedule commands start the folder's own)")
    return url


def _api(method: str, path: str, body: Any = None) -> Any:
    try:
        return prefect_api.call(api_url(), method, path, body)
    except prefect_api.PrefectAPIError as e:
        raise ScheduleError(str(e)) from None


def apply(spec: ScheduleSpec, work_pool: str | None = None, job_variables: dict | None = None) -> str:
    """Create or update the deployment of ``spec``; return its id."""
    flow_id = _api("POST", "/flows/", {"name": FLOW_NAME})["id"]
    try:
        made = prefect_api.call(api_url(), "POST", "/deployments/", payload(spec, flow_id, work_pool, job_variables))
    except prefect_api.PrefectAPIError as e:
        if e.status == 422:  # the server's own validation of the schedule
            raise ScheduleError(f"invalid schedule cron={spec.cron!r} timezone={spec.timezone!r}: {e.detail}") from None
        raise ScheduleError(str(e)) from None
    return str(made["id"])


def deployments() -> list[dict]:
    """Every deployment of the pipeline flow (the API's JSON), sorted by name."""
    found = _api("POST", "/deployments/filter", {"flows": {"name": {"any_": [FLOW_NAME]}}})
    return sorted(found, key=lambda d: d["name"])


def next_runs(deployment_ids: list[str]) -> dict[str, str]:
    """Deployment id -> the expected start (ISO time, UTC) of its next scheduled flow run."""
    if not deployment_ids:
        return {}
    runs = _api(
        "POST",
        "/flow_runs/filter",
        {
            "deployments": {"id": {"any_": deployment_ids}},
            "flow_runs": {"state": {"type": {"any_": ["SCHEDULED"]}}},
            "sort": "EXPECTED_START_TIME_ASC",
            "limit": 200,
        },
    )
    first: dict[str, str] = {}
    for run in runs:
        first.setdefault(run["deployment_id"], run["expected_start_time"])
    return first


def find(name: str) -> dict | None:
    """The deployment named ``name`` (``pipeline`` or ``pipeline@profile``), or None."""
    try:
        return prefect_api.call(
            api_url(), "GET", f"/deployments/name/{prefect_api.quote(FLOW_NAME)}/{prefect_api.quote(name)}"
        )
    except prefect_api.PrefectAPIError as e:
        if e.status == 404:
            return None
        raise ScheduleError(str(e)) from None


def remove(pipeline: str, profile: str | None = None) -> str:
    """Delete the deployment of ``pipeline`` (a name or a file) and profile; return its name."""
    name = deployment_name(pipeline_name(pipeline), profile)
    dep = find(name)
    if dep is None:
        known = ", ".join(d["name"] for d in deployments()) or "none"
        raise ScheduleError(
            f"no schedule named {name!r} in the Prefect API at {api_url()}; "
            f"schedules: {known} (see `bottlenecks schedule --list`)"
        )
    _api("DELETE", f"/deployments/{dep['id']}")
    return name


def pipeline_name(pipeline: str) -> str:
    """A pipeline given as a YAML file stands for its ``name:``; a ``.yaml`` path that is no
    readable file is refused as ``FILE:1:1``, as ``check`` refuses it, not taken for a name."""
    path = Path(pipeline)
    if path.suffix in (".yaml", ".yml"):
        from flows.plan.build import build

        return build(path).name
    return pipeline


def served_specs() -> list[tuple[ScheduleSpec, dict]]:
    """Every schedule made here that no work pool runs, with its deployment: what ``serve`` runs."""
    found = [(spec_from_deployment(d), d) for d in deployments() if not d.get("work_pool_name")]
    found = [(s, d) for s, d in found if s is not None]
    if not found:
        raise ScheduleError(
            "nothing to serve: create a schedule with `bottlenecks schedule PIPELINE "
            '--cron "0 2 * * *"` or pass pipeline files with a schedule: key'
        )
    return found
