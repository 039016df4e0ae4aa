"""Slots that did not run (serve down, the server down, the previous run still going) become rows
of the pipeline's history, once each; serve catches up the newest missed slot; a slot runs as the
schedule asks (fresh, telling someone)."""

import itertools
import os
import signal
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import mlflow
import pytest

from flows.ops import slots
from flows.ops.deployments import ScheduleSpec

UTC = timezone.utc
T0 = datetime(2026, 12, 1, tzinfo=UTC)
_names = itertools.count()


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def flow_run(hours: float, state: str, message: str | None = None) -> dict:
    return {
        "id": f"run-{hours}",
        "expected_start_time": at(hours).isoformat().replace("+00:00", "Z"),
        "state_type": state,
        "state": {"type": state, "message": message},
    }


def dep(created_hours: float = 0.0) -> dict:
    return {"id": "dep-1", "name": "nightly", "created": at(created_hours).isoformat()}


def test_missed_slots_are_late_runs_and_the_slots_no_server_was_up_to_make():
    runs = [
        flow_run(1, "COMPLETED"),
        flow_run(2, "SCHEDULED"),  # the server made it, serve was down: Late
        flow_run(3, "SCHEDULED"),
        flow_run(9, "SCHEDULED"),  # not due yet
    ]  # then the server was down too: 04:00 to 06:00 have no flow run
    found = slots.missed(dep(), "0 * * * *", "UTC", runs, now=at(6.5))
    assert [(s.time, s.flow_run_id) for s in found] == [
        (at(2), "run-2"),
        (at(3), "run-3"),
        (at(4), None),
        (at(5), None),
        (at(6), None),
    ]
    assert "Late" in found[0].reason and "neither serve nor the Prefect server" in found[-1].reason
    assert slots.missed(dep(created_hours=5.5), "0 * * * *", "UTC", [], now=at(6.5))[0].time == at(6)  # not before


# clocks that change: an hour at 02:00 (Berlin), at 02:00 local after midnight UTC (New York), half
# an hour (Lord Howe), a whole skipped day (Apia, 2011-12-30)
DST_CHANGES = [
    ("Europe/Berlin", datetime(2026, 3, 28, tzinfo=UTC)),
    ("Europe/Berlin", datetime(2026, 10, 24, tzinfo=UTC)),
    ("America/New_York", datetime(2026, 3, 7, tzinfo=UTC)),
    ("America/New_York", datetime(2026, 10, 31, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2026, 4, 3, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2026, 10, 2, tzinfo=UTC)),
    ("Pacific/Apia", datetime(2011, 12, 28, tzinfo=UTC)),
]
CRONS = ["0 2 * * *", "30 2 * * *", "*/20 * * * *", "45 1-3 * * *", "0 0 */2 * 1", "0 9 * * 0#1", "15 2 L * *"]


@pytest.mark.parametrize("cron", CRONS)
def test_the_slots_are_the_ones_prefects_scheduler_makes_across_a_clock_change(cron):
    """The slots that had no flow run are the cron's slots as Prefect's scheduler reads them: a
    reading of our own would record a slot Prefect never meant, or miss one it did (croniter's
    zone-aware walk, used before, differed on 209 of 388,951 such slots)."""
    import asyncio

    from prefect.server.schemas.schedules import CronSchedule

    for tz, start in DST_CHANGES:
        end = start + timedelta(days=3, hours=7)
        for after in (start, start + timedelta(hours=25, minutes=10)):  # before the change; inside it
            dates = asyncio.run(CronSchedule(cron=cron, timezone=tz).get_dates(n=1000, start=after, end=end))
            prefects = [d.astimezone(UTC) for d in dates if after < d < end]
            assert slots.cron_slots(cron, tz, after, end) == prefects, (cron, tz, after)


def test_a_long_downtime_keeps_the_newest_slots():
    every_minute = slots.cron_slots("* * * * *", "Europe/Berlin", T0, T0 + timedelta(days=30), cap=1000)
    assert len(every_minute) == 1000 and every_minute[-1] == T0 + timedelta(days=30, minutes=-1)


DOWNTIMES = [((10, 20), None), ((10, 30), (15, 30)), ((0, 30), (0, 30)), ((5, 30), (8, 12)), ((5, 12), (8, 12))]


@pytest.mark.parametrize("serve_down,server_down", DOWNTIMES)
def test_every_slot_lost_to_a_downtime_is_found_and_no_other(serve_down, server_down):
    """Simulated nights: hourly slots over 30 hours, then serve starts; while serve was up every
    slot ran, while only serve was down Prefect made a Late run, while the server was down too nothing."""
    now, runs, lost = at(29.5), [], []
    for hour in range(30):
        if server_down and server_down[0] <= hour < server_down[1]:
            lost.append(at(hour))
        elif serve_down[0] <= hour < serve_down[1]:
            runs.append(flow_run(hour, "SCHEDULED"))
            lost.append(at(hour))
        else:
            runs.append(flow_run(hour, "COMPLETED"))
    found = slots.missed(dep(created_hours=-0.5), "0 * * * *", "UTC", runs[::-1], now)
    assert [s.time for s in found] == [t for t in lost if t < now]


def test_skipped_slots_are_the_runs_prefect_cancelled_because_the_previous_still_ran():
    runs = [
        flow_run(1, "CANCELLED", "Deployment concurrency limit reached."),
        flow_run(2, "CANCELLED", "cancelled by the user"),
        flow_run(3, "COMPLETED"),
    ]
    found = slots.skipped(runs, by="nightly 2026-12-01 00:00")
    assert [(s.kind, s.time, s.flow_run_id) for s in found] == [("skipped", at(1), "run-1")]
    assert found[0].reason.startswith("the previous run (nightly 2026-12-01 00:00) was still running")


class FakeAPI:
    """Prefect's answers for one deployment's flow runs; what was asked of it."""

    def __init__(self, runs):
        self.runs, self.calls = runs, []

    def __call__(self, url, method, path, body=None, **kw):
        self.calls.append((method, path, body))
        if path == "/flow_runs/filter":
            return self.runs if not body.get("offset") else []
        return {"id": "new-run"}


def rows(pipeline: str) -> list:
    client = mlflow.MlflowClient()
    experiment = client.get_experiment_by_name(pipeline)
    found = client.search_runs([experiment.experiment_id], "tags.`bottlenecks.slot` != ''") if experiment else []
    return sorted(found, key=lambda r: r.info.start_time)


@pytest.mark.parametrize("run_newest", [True, False])
def test_serve_catches_up_the_newest_missed_slot_once_and_records_the_rest_once(monkeypatch, run_newest):
    name = f"slots-{next(_names)}"
    runs = [
        flow_run(3, "CANCELLED", "Deployment concurrency limit reached."),
        flow_run(2, "SCHEDULED"),
        flow_run(1, "COMPLETED"),
    ]
    api = FakeAPI(runs)
    monkeypatch.setattr(slots.prefect_api, "call", api)
    monkeypatch.setenv("PREFECT_API_URL", "http://prefect.test/api")
    spec = ScheduleSpec(name, "p.yaml", "0 * * * *", profile="quick")
    said = slots.catch_up(spec, dep(), run_newest=run_newest, now=at(4.5))

    made = [(c[1], c[2]) for c in api.calls if c[0] == "POST" and c[1] != "/flow_runs/filter"]
    cancelled = [p for p, _ in made if p.endswith("/set_state")]
    assert cancelled == ["/flow_runs/run-2/set_state"]  # the Late run would start with serve otherwise
    assert [p for p, _ in made if p.endswith("/create_flow_run")] == (
        ["/deployments/dep-1/create_flow_run"] * run_newest
    )
    recorded = rows(name)
    kinds = [(r.data.tags["bottlenecks.slot"], r.data.tags["bottlenecks.slot_time"]) for r in recorded]
    missed = [("missed", "2026-12-01T02:00:00+00:00")] + (
        [] if run_newest else [("missed", "2026-12-01T04:00:00+00:00")]
    )
    assert sorted(kinds) == sorted(missed + [("skipped", "2026-12-01T03:00:00+00:00")])
    for row in recorded:
        assert row.info.status == "FINISHED" and row.data.metrics == {}
        assert row.data.tags["pipeline"] == name and row.data.tags["profile"] == "quick"
        assert row.info.start_time == int(slots._parse(row.data.tags["bottlenecks.slot_time"]).timestamp() * 1000)
    reason = next(r for r in recorded if r.data.tags["bottlenecks.slot"] == "missed").data.tags[
        "bottlenecks.slot_reason"
    ]
    assert ("by running the newest missed slot" in reason) == run_newest and ("--no-catch-up" in reason) != run_newest
    assert any("catching up the slot of 2026-12-01T04:00:00+00:00" in line for line in said) == run_newest
    named = {c[1]: c[2]["name"] for c in api.calls if c[0] == "PATCH"}  # Prefect's random names replaced
    assert named["/flow_runs/run-3"] == f"{name}/quick {at(3).astimezone():%Y-%m-%d %H:%M} (skipped)"
    assert named["/flow_runs/run-2"] == f"{name}/quick {at(2).astimezone():%Y-%m-%d %H:%M} (missed)"

    slots.catch_up(spec, dep(), run_newest=run_newest, now=at(4.5))
    assert len(rows(name)) == len(recorded)  # a slot is one row, however often serve starts


def test_a_slot_due_within_minutes_is_the_catch_up(monkeypatch):
    """Started at 04:55 with 05:00 next, serve runs no extra slot that 05:00 would collide with."""
    name = f"slots-{next(_names)}"
    api = FakeAPI([flow_run(1, "COMPLETED")])
    monkeypatch.setattr(slots.prefect_api, "call", api)
    monkeypatch.setenv("PREFECT_API_URL", "http://prefect.test/api")
    said = slots.catch_up(ScheduleSpec(name, "p.yaml", "0 * * * *"), dep(), now=at(4.92))
    assert not [c for c in api.calls if c[1].endswith("/create_flow_run")]
    assert (
        said[0] == f"{name}: not catching up 3 missed slot(s): the next slot, 2026-12-01T05:00:00+00:00, runs instead"
    )
    assert [r.data.tags["bottlenecks.slot_time"][11:16] for r in rows(name)] == ["02:00", "03:00", "04:00"]


def test_more_missed_slots_than_rows_fold_into_one_row_saying_how_many():
    many = [slots.Slot("missed", at(h), "serve was not running") for h in range(250)]
    folded = slots._fold(many)
    assert len(folded) == slots.MAX_RECORDED and folded[-1].time == at(249)
    assert folded[0].reason.startswith("151 slots from 2026-12-01T00:00:00+00:00 to 2026-12-07T06:00:00+00:00")


def test_a_slot_tells_its_target_through_the_history_command(monkeypatch):
    from flows.cli import app
    from flows.ops import schedule

    seen = []

    def run(cmd, **kw):
        seen.append(cmd)
        return SimpleNamespace(returncode=len(seen) - 1 and 2, stdout="REGRESSION x", stderr="")

    monkeypatch.setattr(schedule.subprocess, "run", run)
    assert schedule.tell("nightly", "https://hooks.example/x", "change") == 0
    assert seen[0] == [sys.executable, "-m", "flows.cli", "history", "nightly"] + [
        "--plot",
        "--notify",
        "https://hooks.example/x",
        "--notify-on",
        "change",
    ]
    assert schedule.tell("nightly", "cmd:false", "always") == 2  # logged, never a failed slot
    history = next(c for c in app.registered_commands if c.callback.__name__ == "history")
    options = {p for p in history.callback.__annotations__}
    assert {"notify", "notify_on"} <= options  # the options the slot passes exist


def test_a_fresh_schedule_recomputes_and_tells_after_the_run(tmp_path, monkeypatch):
    from flows.execute import runner
    from flows.ops import schedule

    monkeypatch.chdir(tmp_path)
    Path("p.yaml").write_text("name: fresh-nightly\nsteps:\n  a: {uses: tests.support.engine_components:numbers}\n")
    asked = {}
    result = SimpleNamespace(ok=True, stopped_by=None, parent_run_id="r1", status={"a": "done"}, errors={})
    monkeypatch.setattr(runner, "run", lambda plan, **kw: asked.update(kw) or result)
    monkeypatch.setattr(schedule, "tell", lambda *a: asked.setdefault("told", a))
    out = schedule.run_pipeline.fn("p.yaml", fresh=True, notify="cmd:cat", notify_on="always")
    assert asked == {"use_cache": False, "in_flow_run": True, "told": ("fresh-nightly", "cmd:cat", "always")}
    assert out["parent_run_id"] == "r1"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_stops_in_one_line_on_a_signal_before_and_while_it_polls(monkeypatch, signum):
    from flows.ops import serve

    before = signal.getsignal(
        signal.SIGINT
    )  # Python's own, or ignored where a shell started the suite in the background

    def signalled_while_catching_up(*args):
        os.kill(os.getpid(), signum)
        time.sleep(5)

    monkeypatch.setattr(serve, "_prepare", signalled_while_catching_up)
    said = serve.serve([], catch_up=True)
    assert said == f"stopped serving on {signum.name} before it polled for runs"

    runner = serve._runner(None)  # a real Prefect runner on the test server, serving nothing
    threading.Timer(2.0, os.kill, (os.getpid(), signum)).start()
    started = time.monotonic()
    said = serve._run(runner)
    assert said.startswith(f"stopped serving on {signum.name}; any run in progress was cancelled")
    assert time.monotonic() - started < 30
    assert signal.getsignal(signal.SIGINT) is before  # the command's own again
