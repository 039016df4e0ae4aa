"""Slots of a schedule that did not run, each kept as a row of the pipeline's history.

A *missed* slot came due while `bottlenecks serve` was not running: Prefect holds it as a Late
flow run when its server was up, and holds nothing when the server was down too (a slot of the
cron, since the schedule was last applied, without a flow run). A *skipped* slot came due while the
previous run still ran: Prefect cancelled it ("Deployment concurrency limit reached.").

Each becomes one MLflow run in the pipeline's experiment, FINISHED, without metrics, tagged
``pipeline``, ``bottlenecks.slot`` (missed or skipped), ``bottlenecks.slot_reason`` and
``bottlenecks.slot_time`` (ISO, UTC), started at the slot, so ``history`` shows it in its place.
A slot is recorded once, however often it is looked at.

When `serve` starts it catches up: the newest missed slot runs once, now (its Late flow run, or a
new flow run when Prefect has none), and the older ones are recorded and their Late flow runs
cancelled. When the next slot is due within ``CATCH_UP_GRACE`` that slot is the catch-up (running
both would overlap, and Prefect would skip one), and with ``--no-catch-up`` none runs: every
missed slot is recorded.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from flows.ops import prefect_api

MISSED, SKIPPED = "missed", "skipped"
SKIP_MESSAGE = "Deployment concurrency limit reached"  # how Prefect cancels a run that would overlap
CATCH_UP_GRACE = timedelta(minutes=10)  # a slot due this soon is the catch-up: running both would overlap
MAX_RECORDED = 100  # missed slots recorded one by one; older ones become one row saying how many
PAGE = 200  # the most flow runs the API returns at once
SLOT, REASON, TIME = "bottlenecks.slot", "bottlenecks.slot_reason", "bottlenecks.slot_time"


@dataclass
class Slot:
    """A slot that did not run: when, why, and the Prefect flow run that stood for it (if any)."""

    kind: str
    time: datetime  # aware, UTC
    reason: str
    flow_run_id: str | None = None


def iso(when: datetime) -> str:
    return when.astimezone(timezone.utc).isoformat(timespec="seconds")


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


# -- what Prefect knows ------------------------------------------------------------------------------


def flow_runs(url: str, deployment_id: str, states: list[str] | None = None, before: datetime | None = None) -> list:
    """The deployment's flow runs (the API's JSON) due before ``before`` (default: all), newest slot first."""
    body: dict = {"deployments": {"id": {"any_": [deployment_id]}}, "sort": "EXPECTED_START_TIME_DESC"}
    runs: dict = {}
    if states:
        runs["state"] = {"type": {"any_": states}}
    if before is not None:
        runs["expected_start_time"] = {"before_": iso(before)}
    if runs:
        body["flow_runs"] = runs
    found: list = []
    for offset in range(0, PAGE * 100, PAGE):  # at most 20,000 runs, a page at a time
        page = prefect_api.call(url, "POST", "/flow_runs/filter", {**body, "limit": PAGE, "offset": offset})
        found += page
        if len(page) < PAGE:
            break
    return found


def skipped(runs: list[dict], by: str | None = None) -> list[Slot]:
    """The runs Prefect cancelled because the previous run of the deployment still ran."""
    found = []
    for run in runs:
        state = run.get("state") or {}
        if run.get("state_type") == "CANCELLED" and SKIP_MESSAGE in (state.get("message") or ""):
            who = f" ({by})" if by else ""
            reason = f"the previous run{who} was still running; Prefect cancelled this slot (no overlap)"
            found.append(Slot(SKIPPED, _parse(run["expected_start_time"]), reason, run["id"]))
    return found


def cron_slots(cron: str, tz: str, after: datetime, before: datetime, cap: int = 100_000) -> list[datetime]:
    """The cron's slots strictly after ``after`` and before ``before`` (UTC), at most ``cap`` newest.

    Read as Prefect's scheduler reads a cron (its server ``CronSchedule``): the expression walks
    the zone's wall clock, a wall time is placed in the zone at its first occurrence (``fold=0``:
    once in the autumn's repeated hour; a time the spring skips lands as far after the jump as it
    was after the hour), and a slot landing on an instant already found counts once.
    """
    from cronsim import CronSim

    zone = ZoneInfo(tz)
    # a day before: wall times in a spring gap just before ``after`` may land after it
    wall = (after - timedelta(days=1)).astimezone(zone).replace(tzinfo=None)
    found: deque[datetime] = deque()
    seen: set[datetime] = set()
    for when in CronSim(prefect_reading(cron), wall):
        when = when.replace(tzinfo=zone, fold=0).astimezone(timezone.utc)
        if when >= before:
            break
        if when > after and when not in seen:
            seen.add(when)
            found.append(when)
            if len(found) > cap:
                seen.discard(found.popleft())
    return sorted(found)  # a spring gap's slots land after the jump, out of wall order


def prefect_reading(cron: str) -> str:
    """``cron`` as cronsim reads it the way Prefect does: with both day fields restricted a day
    matches either (Prefect's ``day_or``), where cronsim follows Debian cron and asks for both
    when one field starts with ``*`` (``*/2``); an explicit range (``1-31/2``) is read alike by both."""
    fields = cron.split()
    if len(fields) != 5 or "*" in (fields[2], fields[4]):
        return cron
    dom, dow = fields[2], fields[4]
    fields[2] = "1-31" + dom[1:] if dom.startswith("*") else dom
    fields[4] = "0-6" + dow[1:] if dow.startswith("*") else dow
    return " ".join(fields)


def missed(dep: dict, cron: str, tz: str, runs: list[dict], now: datetime) -> list[Slot]:
    """Slots before ``now`` that never ran, oldest first: Late flow runs, and the cron's slots with
    no flow run at all (the server was down) since the schedule was last applied (by `schedule` or
    a `serve` start; applying it again is also how its cron changes)."""
    due = [r for r in runs if _parse(r["expected_start_time"]) < now]
    late = [
        Slot(MISSED, _parse(r["expected_start_time"]), "serve was not running (Prefect marked it Late)", r["id"])
        for r in due
        if r.get("state_type") == "SCHEDULED"
    ]
    made = {_parse(r["expected_start_time"]) for r in runs}
    applied = [dep["created"]] + [s["created"] for s in dep.get("schedules") or [] if s.get("created")]
    gap = [
        Slot(MISSED, t, "neither serve nor the Prefect server was running (no flow run was made)")
        for t in cron_slots(cron, tz, max(map(_parse, applied)), now)
        if t not in made
    ]
    return sorted(late + gap, key=lambda s: s.time)


# -- what serve does at start ------------------------------------------------------------------------


def catch_up(spec, dep: dict, run_newest: bool = True, now: datetime | None = None) -> list[str]:
    """Record the deployment's missed and skipped slots; run the newest missed one now when
    ``run_newest``. Returns what was done, a line each, for serve's console."""
    url = os.environ["PREFECT_API_URL"]
    now = now or datetime.now(timezone.utc)
    runs = flow_runs(url, dep["id"], before=now)
    lines = []
    late = missed(dep, spec.cron, spec.timezone, runs, now)
    soon = cron_slots(spec.cron, spec.timezone, now, now + CATCH_UP_GRACE)
    if late and run_newest and not soon:
        newest = late.pop()
        _run_now(url, dep, newest)
        for slot in late:
            slot.reason += f"; serve caught up by running the newest missed slot ({iso(newest.time)}) once"
        lines.append(f"{spec.deployment}: catching up the slot of {iso(newest.time)} now")
    elif late:
        why = "serve --no-catch-up" if not run_newest else f"the next slot, {iso(soon[0])}, runs instead"
        for slot in late:
            slot.reason += f"; not caught up ({why})"
        lines.append(f"{spec.deployment}: not catching up {len(late)} missed slot(s): {why}")
    for slot in late:
        if slot.flow_run_id:  # else the runner would start every Late run at once
            _cancel(url, slot.flow_run_id, f"missed: {slot.reason}")
    made = record(spec.pipeline, spec.profile, _fold(late) + skipped(runs), url=url)
    if made:
        lines.append(f"{spec.deployment}: recorded {made} missed or skipped slot(s) in MLflow")
    return lines


def _fold(slots: list[Slot]) -> list[Slot]:
    """At most ``MAX_RECORDED`` rows: the newest slots, and one row for all older ones."""
    if len(slots) <= MAX_RECORDED:
        return slots
    older, newest = slots[: -MAX_RECORDED + 1], slots[-MAX_RECORDED + 1 :]
    first = older[0]
    summary = Slot(
        MISSED, first.time, f"{len(older)} slots from {iso(first.time)} to {iso(older[-1].time)}: {first.reason}"
    )
    return [summary, *newest]


def _run_now(url: str, dep: dict, slot: Slot) -> None:
    """Run ``slot`` now: its Late flow run is picked up as it is; without one, a new flow run."""
    if slot.flow_run_id:
        return
    prefect_api.call(
        url,
        "POST",
        f"/deployments/{dep['id']}/create_flow_run",
        {"tags": ["catch-up"], "state": {"type": "SCHEDULED", "message": f"catching up the slot {iso(slot.time)}"}},
    )


def _cancel(url: str, flow_run_id: str, message: str) -> None:
    body = {"state": {"type": "CANCELLED", "name": "Missed", "message": message[:500]}, "force": True}
    prefect_api.call(url, "POST", f"/flow_runs/{flow_run_id}/set_state", body)


# -- what a scheduled run does at its end ------------------------------------------------------------


def record_current_deployment(pipeline: str, profile: str | None, by: str | None = None) -> int:
    """Record the slots of this flow run's deployment that Prefect skipped while a run went on
    (this one, named ``by``, usually); 0 outside a deployment's flow run. Never raises: a row is a courtesy."""
    try:
        from prefect.context import FlowRunContext

        ctx = FlowRunContext.get()
        run = ctx.flow_run if ctx else None
        url = os.environ.get("PREFECT_API_URL")
        if run is None or run.deployment_id is None or not url:
            return 0
        runs = flow_runs(url, str(run.deployment_id), ["CANCELLED"])
        return record(pipeline, profile, skipped(runs, by=by or run.name), url=url)
    except Exception as e:  # noqa: BLE001
        import logging

        logging.getLogger("bottlenecks").warning("could not record the skipped slots: %s", e)
        return 0


# -- the rows in MLflow ------------------------------------------------------------------------------


def recorded(client, experiment_id: str) -> set[tuple[str, str, str]]:
    """(kind, slot time, profile) of every slot row already in the experiment."""
    rows = client.search_runs([experiment_id], f"tags.`{SLOT}` = '{MISSED}'", max_results=5000)
    rows += client.search_runs([experiment_id], f"tags.`{SLOT}` = '{SKIPPED}'", max_results=5000)
    return {(r.data.tags[SLOT], r.data.tags.get(TIME, ""), r.data.tags.get("profile", "")) for r in rows}


def slot_name(pipeline: str, profile: str | None, slot: Slot) -> str:
    """``four-bottlenecks/quick 2026-12-01 02:00 (skipped)``: a run's name (``prefect_view.flow_run_name``)
    and what became of the slot."""
    who = f"{pipeline}/{profile}" if profile else pipeline
    return f"{who} {slot.time.astimezone():%Y-%m-%d %H:%M} ({slot.kind})"


def _name_flow_runs(url: str, pipeline: str, profile: str | None, slots: list[Slot]) -> None:
    """Give the Prefect flow runs that stood for the slots the slot's name instead of Prefect's random
    one (``discerning-viper``); a name is a courtesy: a refusal is logged, never raised."""
    for slot in slots:
        if not slot.flow_run_id:
            continue
        try:
            prefect_api.call(
                url, "PATCH", f"/flow_runs/{slot.flow_run_id}", {"name": slot_name(pipeline, profile, slot)}
            )
        except prefect_api.PrefectAPIError as e:
            import logging

            logging.getLogger("bottlenecks").warning("could not name the slot's flow run: %s", e)


def record(pipeline: str, profile: str | None, slots: list[Slot], url: str | None = None) -> int:
    """One FINISHED MLflow run per slot not recorded yet; how many were made. With the Prefect API
    ``url``, the slots' flow runs get the slot's name too."""
    if url:
        _name_flow_runs(url, pipeline, profile, slots)
    if not slots:
        return 0
    from flows.track.runs import Tracker

    tracker = Tracker(pipeline)
    client, seen, made = tracker.client, recorded(tracker.client, tracker.experiment_id), 0
    for slot in slots:
        if (slot.kind, iso(slot.time), profile or "") in seen:
            continue
        tags = {"pipeline": pipeline, SLOT: slot.kind, REASON: slot.reason, TIME: iso(slot.time)}
        if profile:
            tags["profile"] = profile
        if slot.flow_run_id:
            tags["prefect_flow_run_id"] = slot.flow_run_id
        ms = int(slot.time.timestamp() * 1000)
        name = f"{slot.kind} {slot.time.astimezone():%Y-%m-%d %H:%M}"
        run = client.create_run(tracker.experiment_id, start_time=ms, tags=tags, run_name=name)
        client.set_terminated(run.info.run_id, "FINISHED", end_time=ms)
        seen.add((slot.kind, iso(slot.time), profile or ""))
        made += 1
    return made
