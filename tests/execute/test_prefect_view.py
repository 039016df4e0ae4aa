"""A run as Prefect shows it, read back through Prefect's client: the flow run's name, tags and
parameters, each step's log lines, a failed step's error, the scorecard and MLflow artifacts."""

import logging
import re
import textwrap
from datetime import datetime
from uuid import UUID

import pytest
from prefect import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    ArtifactFilterTaskRunId,
    FlowRunFilter,
    FlowRunFilterId,
    FlowRunFilterTags,
    LogFilter,
    LogFilterFlowRunId,
)

from components.report.text import headline
from flows.execute import prefect_view
from flows.execute.runner import run
from flows.plan.build import build

C = "tests.support.engine_components"
NAME = re.compile(r"^prefect-view/tiny \d{4}-\d\d-\d\d \d\d:\d\d$")
PIPELINE = f"""\
name: prefect-view
default_profile: tiny
params: {{n: 3}}
profiles:
  tiny: {{params: {{n: 2}}}}
steps:
  nums:
    uses: {C}:numbers
    with: {{n: "${{params.n}}", offset: "${{matrix.offset}}"}}
    matrix: {{offset: [0, 10]}}
  sum:
    uses: {C}:total
    with: {{values: "${{nums.values}}"}}
    matrix: {{offset: [0, 10]}}
  card:
    uses: report.scorecard
    with:
      title: Tiny card
      measurements: {{sum: "${{sum.total}}"}}
      expect:
        - {{id: 1, claim: offsets add up, check: above, value: "sum.10", than: 20, exact: true}}
"""
FAILING = f"""\
name: prefect-view-fail
steps:
  nums:
    uses: {C}:numbers
  broken:
    uses: {C}:fail
    with: {{message: "the probe found no signal at lag 50"}}
    needs: [nums]
  after:
    uses: {C}:total
    with: {{values: "${{nums.values}}"}}
    needs: [broken]
"""


def _write(tmp_path, text, executor, name):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).replace("steps:\n", f"settings: {{executor: {executor}}}\nsteps:\n", 1))
    return path


def _seen(flow_run_id: str):
    """The flow run, its task runs by name, its log lines, and its artifacts, from Prefect's API."""
    fid = UUID(flow_run_id)
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(fid)
        tasks = {
            t.name: t for t in client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[fid])))
        }
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[fid])))
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[fid]))
        )
        by_task = {
            name: client.read_artifacts(
                artifact_filter=ArtifactFilter(task_run_id=ArtifactFilterTaskRunId(any_=[t.id]))
            )
            for name, t in tasks.items()
        }
    return flow_run, tasks, logs, artifacts, by_task


def _lines(logs, task_run_id=None):
    return [log.message for log in logs if task_run_id is None or log.task_run_id == task_run_id]


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["processes", "dask"])
def test_a_finished_run_reads_well_in_prefect(tmp_path, home, executor):
    result = run(build(_write(tmp_path, PIPELINE, executor, "p.yaml")))
    assert result.ok, result.errors
    flow_run, tasks, logs, artifacts, _ = _seen(result.flow_run_id)

    assert NAME.match(flow_run.name), flow_run.name
    assert {"pipeline:prefect-view", "profile:tiny"} <= set(flow_run.tags)
    assert any(t.startswith("commit:") and len(t) == len("commit:") + 12 for t in flow_run.tags), flow_run.tags
    assert flow_run.parameters == {"params": {"n": 2}}
    assert set(tasks) == {"nums[offset=0]", "nums[offset=10]", "sum[offset=0]", "sum[offset=10]", "card"}
    for name, task_run in tasks.items():
        # untagged: a tagged task run would ask the API for tag concurrency slots as it starts
        assert task_run.tags == [], (name, task_run.tags)
        lines = _lines(logs, task_run.id)
        assert f"{name} started on the {executor} executor" in lines, lines
        assert any(
            re.match(rf"{re.escape(name)} finished in \d+\.\ds, computed on .+ pid \d+ \(cpu\)$", m) for m in lines
        )
    flow_lines = _lines(logs)
    assert any(m.startswith("prefect-view: 5 done in ") for m in flow_lines), flow_lines

    keyed = {a.key: a for a in artifacts}
    card = keyed["prefect-view-tiny-card"]
    assert card.type == "markdown"
    assert card.description == f"card: {headline(result.outputs['card']['summary'])}"
    assert card.description.startswith("card: 1 of 1 claims hold (1 at family-wise 5%, Holm) · 0 fail · ")
    assert "# Tiny card" in card.data and "| 1 |" in card.data and "offsets add up" in card.data
    link = keyed["prefect-view-tiny-mlflow"]  # a link artifact, stored as Markdown
    assert link.data.startswith(f"[MLflow parent run {result.parent_run_id}](http") and "/runs/" in link.data

    again = run(build(_write(tmp_path, PIPELINE, executor, "p.yaml")))  # a rerun says where outputs came from
    _, tasks, logs, artifacts, _ = _seen(again.flow_run_id)
    lines = _lines(logs, tasks["sum[offset=10]"].id)
    origin = result.outputs["sum[offset=10]"]["run_id"]
    assert any(
        re.match(rf"sum\[offset=10\] finished in \d+\.\ds from cache \(outputs of MLflow run {origin}\)$", m)
        for m in lines
    )
    assert any(a.type == "markdown" and a.key == "prefect-view-tiny-card" for a in artifacts)  # a cached card too
    with get_client(sync_client=True) as client:
        tagged = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=["pipeline:prefect-view"]))
        )
    assert {str(result.flow_run_id), str(again.flow_run_id)} <= {str(f.id) for f in tagged}


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["processes", "dask"])
def test_a_failed_step_is_explained_in_prefect(tmp_path, home, executor):
    result = run(build(_write(tmp_path, FAILING, executor, "f.yaml")))
    assert not result.ok and set(result.errors) == {"broken"}
    flow_run, tasks, logs, artifacts, by_task = _seen(result.flow_run_id)

    assert flow_run.name.startswith("prefect-view-fail 20") and flow_run.state.is_failed()
    assert "pipeline:prefect-view-fail" in flow_run.tags and not any(t.startswith("profile:") for t in flow_run.tags)
    error = [log for log in logs if log.task_run_id == tasks["broken"].id and log.level == logging.ERROR]
    text = "\n".join(log.message for log in error)
    assert "broken failed on " in text and "RuntimeError: the probe found no signal at lag 50" in text
    assert "Traceback (most recent call last)" in text and "engine_components.py" in text  # the full error
    assert any("failed: broken" in m for m in _lines(logs))
    summary = by_task["broken"]
    assert len(summary) == 1 and summary[0].description == "broken: RuntimeError: the probe found no signal at lag 50"
    assert "Traceback" in summary[0].data
    assert not by_task["nums"] and "nums finished in " in " ".join(_lines(logs, tasks["nums"].id))
    # a step that never started is named too (Prefect names a task run when it starts), and says why
    assert "after skipped: upstream broken did not finish" in _lines(logs, tasks["after"].id)


class _Recorder:
    def __init__(self):
        self.lines = []

    def log(self, level, message):
        self.lines.append((level, message))


def test_progress_lines_are_throttled_and_the_full_bar_is_said_once():
    logs = prefect_view.StepLogs(progress_every=3600)
    logs.loggers["train"] = rec = _Recorder()
    for i in range(1, 501):
        logs.progress("train", i, 500, "steps")
    logs.progress("train", 500, 500, "steps")
    assert [m for _, m in rec.lines] == ["train progress 1/500 (0%): steps", "train progress 500/500 (100%): steps"]
    logs.progress("other", 3, None)  # a step that is not bound has no lines, and no error
    assert len(rec.lines) == 2


def test_a_long_traceback_keeps_its_end_and_a_step_without_a_run_logs_nothing():
    logs = prefect_view.StepLogs()
    logs.loggers["s"] = rec = _Recorder()
    trace = "Traceback (most recent call last):\n" + "x\n" * 20_000 + "ValueError: the real reason"
    logs.failed("s", "ValueError: the real reason", trace, "host pid 1 (cpu)")
    level, message = rec.lines[0]
    assert level == logging.ERROR and message.startswith("s failed on host pid 1 (cpu): ValueError: the real reason")
    assert message.endswith("ValueError: the real reason") and "characters cut" in message
    logs.failed("unbound", "boom")  # outside Prefect: nothing to log to, nothing raised


def test_names_and_tags(tmp_path):
    plan = build(_write(tmp_path, PIPELINE, "threads", "p.yaml"))
    assert prefect_view.flow_run_name(plan, datetime(2026, 12, 1, 2, 0)) == "prefect-view/tiny 2026-12-01 02:00"
    plan = build(_write(tmp_path, FAILING, "threads", "f.yaml"))
    assert prefect_view.flow_run_name(plan, datetime(2026, 12, 1, 2, 0)) == "prefect-view-fail 2026-12-01 02:00"


@pytest.mark.slow
def test_braces_in_a_step_run_name_are_kept_as_written(tmp_path, home):
    path = tmp_path / "b.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: prefect-braces
        settings: {{executor: threads}}
        steps:
          who:
            uses: {C}:whoami
            with: {{tag: "${{matrix.tag}}"}}
            matrix: {{tag: ["{{x}}"]}}
        """)
    )
    result = run(build(path))
    assert result.ok, result.errors
    _, tasks, logs, _, _ = _seen(result.flow_run_id)
    assert set(tasks) == {"who[tag={x}]"}  # Prefect formats a string name with the parameters: a KeyError
    assert "who[tag={x}] started on the threads executor" in _lines(logs, tasks["who[tag={x}]"].id)


def test_a_prefect_api_that_refuses_connections_is_gone_and_one_that_refuses_the_login_answers(monkeypatch):
    import socket
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Refuse(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(401)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    try:
        monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{server.server_port}/api")
        assert prefect_view.answers(timeout=5) is True  # any reply counts: the server is there
        monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{closed}/api")
        assert prefect_view.answers(timeout=5) is False
        monkeypatch.delenv("PREFECT_API_URL")
        assert prefect_view.answers() is True  # Prefect's temporary server lives in the process itself
    finally:
        server.shutdown()
        server.server_close()
