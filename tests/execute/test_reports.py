"""A report shows what its component declares (``shows=`` on ``@component``), and a user's report
shows itself as the shipped scorecard does: its headline after `bottlenecks run`, its Markdown as
the MLflow parent run's description and as a Prefect artifact, its figures on the parent run, its
verdicts where `bottlenecks history` reads reasons."""

import json
from uuid import UUID

import mlflow
import pytest
from prefect import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
from typer.testing import CliRunner

from components import Context, component
from components.registry import SHOW_ROLES, ComponentError, get
from flows.cli import app
from flows.ops import history

C = "tests.support.engine_components"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)
PAGE = "# Brief\n\nThe numbers add up to **6**.\n"


@component(
    "reporttest.brief",
    outputs=["line", "page", "plots", "judged"],
    promote=True,
    shows={
        "headline": "line",
        "description": "page",
        "artifact": "page",
        "console": "page",
        "figures": "plots",
        "verdicts": "judged",
    },
)
def brief(ctx: Context, *, total: float) -> dict:
    """Say what the numbers add up to, in one line and on a page, with a plot."""
    page = ctx.path("brief.md")
    page.write_text(f"# Brief\n\nThe numbers add up to **{total:g}**.\n")
    plot = ctx.path("total.png")
    plot.write_bytes(PNG)
    judged = ctx.path("judged.json")
    judged.write_text(json.dumps({"claims": [{"id": "1", "verdict": "holds", "reason": f"they add up to {total:g}"}]}))
    return {"line": f"the numbers add up to {total:g}", "page": str(page), "plots": [str(plot)], "judged": str(judged)}


PIPELINE = f"""\
name: user-report
settings: {{executor: threads}}
steps:
  nums: {{uses: {C}:numbers, with: {{n: 4}}}}
  sum: {{uses: {C}:total, with: {{values: "${{nums.values}}"}}}}
  brief: {{uses: "tests.execute.test_reports:brief", with: {{total: "${{sum.total}}"}}}}
"""


def _artifacts(flow_run_id: str) -> dict:
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(flow_run_id)]))
        )
    return {a.key: a for a in found}


@pytest.mark.slow
def test_a_users_report_shows_its_headline_description_artifact_and_figures(tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE)
    result = CliRunner().invoke(app, ["run", str(path)])
    assert result.exit_code == 0, result.output
    assert "brief: the numbers add up to 6" in result.output  # the headline
    assert PAGE in result.output  # the console role, as Markdown text when the output is not a terminal

    (parent_id,) = mlflow.search_runs(
        experiment_names=["user-report"], filter_string="attributes.run_name = 'user-report'"
    )["run_id"]
    parent = mlflow.get_run(parent_id)
    assert parent.data.tags["mlflow.note.content"] == PAGE
    assert parent.data.tags["headline"] == "the numbers add up to 6"  # above the description, and a column
    figures = [a.path for a in mlflow.MlflowClient().list_artifacts(parent_id, "figures")]
    assert figures == ["figures/total.png"]
    assert history._reason(parent_id, "1") == "they add up to 6"  # through the verdicts file it names

    page = _artifacts(parent.data.tags["prefect_flow_run_id"])["user-report-brief"]
    assert page.type == "markdown" and page.description == "brief: the numbers add up to 6"
    assert page.data == PAGE


def test_the_scorecard_declares_what_it_shows_and_renders_tables_on_a_terminal(tmp_path):
    from rich.table import Table

    from components.report.console import render
    from flows.track import reports

    card = get("report.scorecard")  # the declaration, read from source
    assert set(card.shows) == set(SHOW_ROLES)
    assert reports.renderer(card) == "components.report.console:render"
    path = tmp_path / "scorecard.json"
    summary = {"claims": 0, "holds": 0, "fails": 0, "device_dependent": 0, "not_measured": 0}
    summary |= {"device_independent": 0, "device_independent_holds": 0}
    card_json = {"title": "t", "device": "cpu", "summary": summary, "claims": [], "architectures": {}}
    path.write_text(json.dumps(card_json))
    assert [type(part) for part in render(str(path), terminal=True)] == [Table, Table]
    (text,) = render(str(path), terminal=False)
    assert text.startswith("# t\n")


def test_a_declaration_names_known_roles_and_its_own_outputs():
    with pytest.raises(ComponentError, match=r"unknown role 'headlin' \(did you mean 'headline'\?\)"):
        component("reporttest.bad_role", outputs=["line"], shows={"headlin": "line"})
    with pytest.raises(ComponentError, match=r"shows description as 'pages', which is not among its outputs"):
        component("reporttest.bad_output", outputs=["page"], shows={"description": "pages"})
    with pytest.raises(ComponentError, match=r"\[output, 'module:function'\]"):
        component("reporttest.bad_renderer", outputs=["page"], shows={"console": ["page", "no_colon"]})
