"""A run started the way a schedule starts it (the deployment's flow ``run_pipeline``) is named
and tagged in Prefect as a run started by hand, and is one flow run whose task runs are the steps."""

import re
import textwrap
from datetime import datetime, timezone
from types import SimpleNamespace
from uuid import UUID

import pytest
from prefect import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterParentFlowRunId

from flows.execute import prefect_view
from flows.ops.schedule import run_pipeline
from flows.plan.build import build


@pytest.mark.slow
def test_a_scheduled_slot_is_one_flow_run_named_after_the_pipeline_with_the_steps_as_task_runs(
    tmp_path, home, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nightly.yaml").write_text(
        textwrap.dedent("""\
        name: named-nightly
        profiles: {quick: {params: {n: 2}}}
        params: {n: 3}
        settings: {executor: threads}
        steps:
          nums: {uses: tests.support.engine_components:numbers, with: {n: "${params.n}"}}
        """)
    )
    state = run_pipeline("nightly.yaml", profile="quick", return_state=True)
    assert state.is_completed(), state.message
    parent = UUID(str(state.state_details.flow_run_id))
    with get_client(sync_client=True) as client:
        outer = client.read_flow_run(parent)
        inner = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[parent]))
        )
        steps = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[parent])))
    name = re.compile(r"^named-nightly/quick \d{4}-\d\d-\d\d \d\d:\d\d$")
    assert name.match(outer.name), outer.name
    assert {"pipeline:named-nightly", "profile:quick"} <= set(outer.tags)
    assert inner == []  # no second flow run of the same name inside the deployment's
    assert [(t.name, t.state_type.value) for t in steps] == [("nums", "COMPLETED")]
    assert state.result()["status"] == {"nums": "done"}


def test_a_scheduled_run_is_named_after_its_slot_not_when_a_worker_took_it(tmp_path, monkeypatch):
    path = tmp_path / "p.yaml"
    path.write_text("name: slot\nsteps:\n  a: {uses: tests.support.engine_components:numbers}\n")
    plan = build(path)
    slot = datetime(2026, 12, 1, 2, 0, tzinfo=timezone.utc)
    fake = SimpleNamespace(flow_run=SimpleNamespace(expected_start_time=slot))
    monkeypatch.setattr("prefect.context.FlowRunContext.get", classmethod(lambda cls: fake))
    assert prefect_view.flow_run_name(plan) == f"slot {slot.astimezone():%Y-%m-%d %H:%M}"
    monkeypatch.setattr("prefect.context.FlowRunContext.get", classmethod(lambda cls: None))
    assert prefect_view.flow_run_name(plan, datetime(2026, 12, 1, 23, 59)) == "slot 2026-12-01 23:59"
