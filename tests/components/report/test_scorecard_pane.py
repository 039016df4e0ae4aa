"""The scorecard reads in a narrow pane: its first table is each claim with its verdict, margin and
interval (MLflow's description and artifact pane, Prefect's markdown artifact), and its run ids link
to their MLflow pages when the engine knows the UI's address."""

import json
import re

import pytest

from components import Context, get
from components.report.note import summary as note_of
from tests.components.report.test_scorecard_component import ARCHS, EXPECT, MEASUREMENTS, RUN_IDS

UI = "http://mlflow.example:5000/#/experiments/7/runs/{}?workflowType=machine_learning"


def _card(tmp_path, ctx: Context) -> tuple[dict, str, str]:
    out = get("report.scorecard")(ctx, measurements=MEASUREMENTS, run_ids=RUN_IDS, expect=EXPECT, architectures=ARCHS)
    card = json.loads(open(out["scorecard"]).read())
    return card, open(out["markdown"]).read(), open(out["html"]).read()


@pytest.fixture
def linked(tmp_path):
    return _card(tmp_path, Context(tmp_path / "linked", run_link_source=UI.format))


def _first_table(markdown: str) -> list[list[str]]:
    """The rows (cells) of the document's first Markdown table, header included."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def test_the_first_table_is_the_claim_its_verdict_margin_and_interval(linked):
    card, md, _ = linked
    header, rule, *rows = _first_table(md)
    assert header == ["claim", "verdict", "margin", "95% interval"] and md.index("## Verdicts") < md.index("## Claims")
    assert len(rows) == len(card["claims"])
    c4 = next(c for c in card["claims"] if c["id"] == "4")
    ev = c4["checks"][c4["deciding_check"]]["evidence"]
    row = next(r for r in rows if r[0].startswith("**4** "))
    assert row[1:] == ["✓ holds", f"{ev['margin']:.4g}", f"[{ev['lo']:.4g}, {ev['hi']:.4g}]"]
    assert next(r for r in rows if r[0].startswith("**13** "))[1:] == ["? not measured", "—", "—"]
    # only the claim's own words wrap: the other cells are short enough for a side pane
    assert max(len(cell) for r in rows for cell in r[1:]) <= len("~ device-dependent")


def test_mlflow_description_keeps_the_verdicts_first(linked):
    _, md, _ = linked
    note = note_of(md)
    assert note.index("## Verdicts") < note.index("## Claims")
    assert "| claim | verdict | margin | 95% interval |" in note


def test_run_ids_link_to_their_mlflow_pages(linked):
    card, md, html = linked
    rid = "run-arch=lstm,seed=0"
    assert card["links"][rid] == UI.format(rid)
    runs = md[md.index("## Runs") :]
    assert f"[{rid[:8]}]({UI.format(rid)})" in runs
    assert f"<a href='{UI.format(rid)}' target='_blank' rel='noopener' title='{rid}'>{rid[:8]}</a>" in html


def test_without_a_ui_address_run_ids_stay_plain_text(tmp_path):
    card, md, html = _card(tmp_path, Context(tmp_path / "plain"))
    assert card["links"] == {}
    assert "- **4**: run-arch=lstm,seed=0, " in md and "](" not in md[md.index("## Runs") :]
    assert "<a href='http" not in html


def test_the_html_opens_on_the_narrow_verdicts_table_linked_to_the_evidence(linked):
    _, _, html = linked
    assert html.index("<table class='verdicts'>") < html.index("<h2>Claims</h2>")
    verdicts = html[html.index("<table class='verdicts'>") : html.index("</table>")]
    assert verdicts.count("<tr>") == 1 + len(EXPECT)
    assert "<a href='#claim-4'><b>4</b></a>" in verdicts and "id='claim-4'" in html
    assert "table.verdicts{width:auto;max-width:46em}" in html  # not stretched to the page
