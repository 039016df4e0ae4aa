"""Schedules from pipeline files and command-line values, and servers unreachable at start."""

import socket

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.language.errors import PipelineInvalid
from flows.ops.deployments import (
    ScheduleError,
    ScheduleSpec,
    _as_sets,
    deployment_name,
    payload,
    spec_from_deployment,
    spec_from_file,
)
from flows.ops.schedule import to_deployment
from tests.support.files import write as write_file

C = "tests.support.engine_components"


def write(tmp_path, schedule="", name="nightly"):
    return write_file(
        tmp_path,
        f"""\
        name: {name}
        params: {{n: 2}}
        profiles: {{small: {{params: {{n: 1}}}}}}
        {schedule}
        steps:
          nums: {{uses: {C}:numbers, with: {{n: "${{params.n}}"}}}}
        """,
    )


def test_schedule_key_is_honoured_and_options_win(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, 'schedule: {cron: "0 2 * * *", timezone: Europe/Berlin, profile: small, parameters: {n: 5}}')
    spec = spec_from_file(path)
    assert (spec.pipeline, spec.cron, spec.timezone, spec.profile) == ("nightly", "0 2 * * *", "Europe/Berlin", "small")
    assert spec.file == "p.yaml"  # relative to the project, so a worker elsewhere finds it
    assert spec.sets == ["n=5"] and spec.deployment == "nightly@small"
    over = spec_from_file(path, cron="15 3 * * 1-5", timezone="UTC", sets=["n=7"])
    assert (over.cron, over.timezone, over.profile, over.sets) == ("15 3 * * 1-5", "UTC", "small", ["n=5", "n=7"])


def test_deployment_runs_one_at_a_time_and_reads_back(tmp_path):
    spec = spec_from_file(write(tmp_path), cron="0 2 * * *", profile="small")
    dep = to_deployment(spec)
    assert dep.name == "nightly@small" and dep.entrypoint == "flows.ops.schedule.run_pipeline"
    assert dep.concurrency_limit == 1
    assert dep.concurrency_options.collision_strategy.value == "CANCEL_NEW"
    assert dep.parameters == {"pipeline": str(tmp_path / "p.yaml"), "profile": "small", "sets": []}
    stored = {"name": dep.name, "parameters": dep.parameters, "schedules": payload(spec, "f")["schedules"]}
    back = spec_from_deployment(stored)  # what the API returns for it
    assert (back.pipeline, back.cron, back.timezone, back.profile) == ("nightly", "0 2 * * *", "UTC", "small")
    assert (back.notify, back.notify_on, back.fresh) == (None, "regression", False)
    assert deployment_name("nightly", None) == "nightly"


@pytest.mark.parametrize("extra", [{}, {"notify": "https://chat.example/hook", "notify_on": "change", "fresh": True}])
def test_the_schedule_commands_send_what_prefects_own_client_sends(extra):
    """``schedule`` posts its deployment without importing Prefect: the body must be the one
    ``RunnerDeployment.apply`` would send, parameter schema included (else Prefect refuses runs)."""
    spec = ScheduleSpec("nightly", "p.yaml", "30 1 * * 1-5", "Europe/Berlin", "small", ["n=4"], **extra)
    ours, theirs = payload(spec, "flow-id"), to_deployment(spec)
    assert ours["parameter_openapi_schema"] == theirs._parameter_openapi_schema.model_dump(exclude_unset=True)
    assert ours["parameters"] == theirs.model_dump(mode="json", include={"parameters"})["parameters"]
    schedule = theirs._schedules_with_serialized_block_parameters()[0]
    assert ours["schedules"] == [{"schedule": schedule.schedule.model_dump(mode="json"), "active": schedule.active}]
    assert ours["concurrency_options"] == theirs.concurrency_options.model_dump(mode="json", exclude_none=True)
    same = ("name", "entrypoint", "description", "tags", "concurrency_limit", "paused", "enforce_parameter_schema")
    assert {k: ours[k] for k in same} == {k: getattr(theirs, k) for k in same}
    assert spec_from_deployment({"name": spec.deployment, **ours}) == spec


def test_bad_schedules_are_refused_with_the_fix(tmp_path):
    with pytest.raises(ScheduleError, match="no schedule: pass --cron"):
        spec_from_file(write(tmp_path))
    with pytest.raises(ScheduleError, match=r"invalid schedule cron='0 25 \* \* \*'.*five cron fields"):
        spec_from_file(write(tmp_path), cron="0 25 * * *")
    with pytest.raises(ScheduleError, match="timezone='Mars/Olympus'"):
        spec_from_file(write(tmp_path), cron="0 2 * * *", timezone="Mars/Olympus")
    with pytest.raises(PipelineInvalid, match="unknown param 'm'"):
        spec_from_file(write(tmp_path, 'schedule: {cron: "0 2 * * *", parameters: {m: 1}}'))
    with pytest.raises(PipelineInvalid, match="schedule needs a 'cron'"):
        spec_from_file(write(tmp_path, "schedule: {timezone: UTC}"))


def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.parametrize("command", [["run"], ["schedule"], ["history", "nightly"]])
def test_unreachable_servers_fail_before_any_work_naming_the_url(tmp_path, home, monkeypatch, command):
    mlflow_url, prefect_url = closed_url(), closed_url() + "/api"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_url)
    monkeypatch.setenv("PREFECT_API_URL", prefect_url)
    path = write(tmp_path, 'schedule: {cron: "0 2 * * *"}')
    args = command + ([str(path)] if command[0] != "history" else [])
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (1, 2), result.output
    text = " ".join(result.output.split())
    assert f"MLflow server at {mlflow_url} is unreachable" in text
    assert f"Prefect API at {prefect_url} is unreachable" in text
    assert not (home / "cache").exists() or not any((home / "cache").iterdir())  # nothing ran


def test_serve_and_deploy_explain_what_they_need(tmp_path, monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    result = CliRunner().invoke(app, ["deploy", "--work-pool", "gpu"])
    assert result.exit_code == 1 and "needs a shared Prefect server: set PREFECT_API_URL" in result.output
    missing = CliRunner().invoke(app, ["schedule"])
    assert missing.exit_code == 2 and "give a PIPELINE file (or --list)" in missing.output


@pytest.mark.slow
def test_scheduled_flow_reports_a_missing_file_and_failed_steps(tmp_path, home, monkeypatch):
    from flows.ops.schedule import run_pipeline

    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="deploy with --working-dir set to it on the worker"):
        run_pipeline.fn("pipelines/nightly.yaml")
    path = tmp_path / "bad.yaml"
    path.write_text(f"name: nightly-bad\nsteps:\n  bad: {{uses: {C}:fail, with: {{message: disk on fire}}}}\n")
    with pytest.raises(
        RuntimeError, match=r"'nightly-bad' finished with failed steps: bad \(RuntimeError: disk on fire\)"
    ):
        run_pipeline.fn("bad.yaml")


@pytest.mark.slow
def test_a_slow_or_starting_server_is_asked_again_and_a_refused_one_fails_at_once():
    """A server on a loaded host that answers its health check late (or with 503 while it starts)
    is not reported unreachable; a refused connection is reported without waiting."""
    import http.server
    import threading
    import time

    from flows.services import connect

    calls = []

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            calls.append(time.monotonic())
            if len(calls) == 1:
                time.sleep(1.5)  # the first answer is later than the client waits
            status = 503 if len(calls) == 2 else 200  # then "starting", then up
            self.send_response(status)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/health"
        assert connect._health(url, timeout=0.5, patience=20) is None
        assert len(calls) == 3
        assert connect._health(url, timeout=0.5, patience=20) is None  # up: one call
        assert len(calls) == 4
    finally:
        server.shutdown()
    started = time.monotonic()
    why = connect._health(closed_url() + "/health", timeout=0.5, patience=20)
    assert why and "refused" in why.lower() and time.monotonic() - started < 10  # not the 20 s of patience


def test_text_parameters_reach_the_run_as_text():
    """A --set reads its value as YAML: text that would read as something else goes quoted."""
    parameters = {"a": "/data", "b": "[[[", "c": "x: y", "d": "12", "e": 3, "f": [1, "a b"], "g": ""}
    assert _as_sets(parameters, "p.yaml") == ["a=/data", 'b="[[["', 'c="x: y"', 'd="12"', "e=3", 'f=[1, "a b"]', 'g=""']
    with pytest.raises(ScheduleError, match="schedule.parameters must be a mapping of param to value, got a list"):
        _as_sets([1, 2], "p.yaml")


def test_list_prints_every_column_in_full_when_piped(tmp_path, monkeypatch):
    """Piped into a file or `grep`, --list is tab-separated lines, a header first, nothing cut."""
    import re

    from flows.cli.schedules import COLUMNS

    monkeypatch.chdir(tmp_path)
    name = "a-pipeline-with-a-name-long-enough-that-an-eighty-column-table-would-cut-it"
    path = write(tmp_path, 'schedule: {cron: "15 3 * * 1-5", timezone: Europe/Berlin}', name=name)
    hook = "https://hooks.example/services/T000/B000/a-long-webhook-path"
    options = ["--notify", hook, "--notify-on", "change", "--fresh"]
    made = CliRunner().invoke(app, ["schedule", str(path), *options])
    assert made.exit_code == 0, made.output
    try:
        listed = CliRunner().invoke(app, ["schedule", "--list"])
    finally:
        removed = CliRunner().invoke(app, ["schedule", "--remove", name])
    assert listed.exit_code == 0 and removed.exit_code == 0, listed.output + removed.output
    lines = [line.split("\t") for line in listed.stdout.splitlines()]
    assert lines[0] == list(COLUMNS)
    row = next(line for line in lines if line[0] == name)
    assert row[:6] + row[7:] == [name, "p.yaml", "-", "15 3 * * 1-5", "Europe/Berlin", "bottlenecks serve"] + [
        f"{hook} on change",
        "yes",
    ]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC|-", row[6]), row[6]  # - until Prefect's scheduler ran


def test_serve_without_schedules_says_how_to_make_one(monkeypatch):
    monkeypatch.setattr("flows.ops.deployments.deployments", lambda: [])  # the test server may hold others'
    done = CliRunner().invoke(app, ["serve"])
    assert done.exit_code == 1
    text = " ".join(done.output.split())
    assert "nothing to serve: create a schedule with `bottlenecks schedule PIPELINE" in text


def test_list_keeps_a_long_name_whole_on_an_80_column_terminal(monkeypatch):
    """On a narrow terminal the other columns fold; the schedule's name, what --remove takes, stays whole."""
    import io

    from rich.console import Console

    from flows.cli import schedules

    name = "a-pipeline-with-a-name-long-enough-that-an-eighty-column-table-would-cut-it@quick"
    dep = {"id": "d1", "name": name, "parameters": {"pipeline": "pipelines/a.yaml", "profile": "quick"}}
    monkeypatch.setattr("flows.ops.deployments.deployments", lambda: [dep])
    monkeypatch.setattr("flows.ops.deployments.next_runs", lambda ids: {})
    monkeypatch.setattr("flows.ops.deployments.spec_from_deployment", lambda d: None)
    screen = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)
    monkeypatch.setattr(schedules, "out", screen)
    schedules._list()
    shown = screen.file.getvalue().splitlines()
    assert name in shown  # its own line, whole
    assert "  pipeline file: pipelines/a.yaml" in shown and "  profile: quick" in shown
    short = {**dep, "name": "nightly@quick"}  # a name that fits: the table, the name whole in its column
    monkeypatch.setattr("flows.ops.deployments.deployments", lambda: [short])
    screen.file = io.StringIO()
    schedules._list()
    assert "┃ schedule" in screen.file.getvalue() and "│ nightly@quick │" in screen.file.getvalue()
