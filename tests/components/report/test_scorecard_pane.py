"""The scorecard reads in a 700-pixel pane (MLflow's description and artifact view, Prefect's markdown
artifact): its first table is a short label per claim (linked to the claim below), the verdict, margin,
interval and seeds; sentences and evidence follow as lists; claim text is escaped for the renderer;
the run's description is the headline and that table; run ids link to their MLflow pages."""

import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from components import Context, get
from components.report.markdown import to_markdown
from components.report.note import summary as note_of
from components.report.text import MARKS, by_verdict, headline
from tests.components.report.test_scorecard_component import ARCHS, EXPECT, MEASUREMENTS, RUN_IDS

UI = "http://mlflow.example:5000/#/experiments/7/runs/{}?workflowType=machine_learning"
DOCS = Path(__file__).resolve().parents[3] / "docs"
# a 708-pixel pane shows about 95 characters of table text at the panes' font (the old verdicts table's
# 236 characters measured about 1,700 pixels), less each cell's padding: 80 leaves room for it
PANE_CHARS = 80
RENDER = MarkdownIt("commonmark").enable("table")  # CommonMark with GFM tables, as marked and GitHub read it


def _card(tmp_path, ctx: Context, expect=EXPECT, measurements=MEASUREMENTS, run_ids=RUN_IDS) -> tuple[dict, str, str]:
    out = get("report.scorecard")(ctx, measurements=measurements, run_ids=run_ids, expect=expect, architectures=ARCHS)
    card = json.loads(open(out["scorecard"]).read())
    return card, open(out["markdown"]).read(), open(out["html"]).read()


@pytest.fixture
def linked(tmp_path):
    return _card(tmp_path, Context(tmp_path / "linked", run_link_source=UI.format))


def _tables(markdown: str) -> list[list[list[str]]]:
    """Every table of the rendered document: its rows (header first) as the text a reader sees per cell."""
    html = RENDER.render(markdown)
    tables = []
    for table in re.findall(r"<table>(.*?)</table>", html, re.S):
        rows = []
        for row in re.findall(r"<tr>(.*?)</tr>", table, re.S):
            cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
            rows.append([_text(c) for c in cells])
        tables.append(rows)
    return tables


def _text(html: str) -> str:
    """What a reader sees of an HTML fragment: its text, entities decoded."""
    import html as h

    return h.unescape(re.sub(r"<[^>]+>", "", html)).strip()


def _width(row: list[str]) -> int:
    """Characters a row of a table takes: its cells' text and a separator's worth between cells."""
    return sum(len(c) for c in row) + 3 * (len(row) - 1)


def test_the_first_table_is_a_short_label_verdict_margin_interval_and_seeds(linked):
    card, md, _ = linked
    header, *rows = _tables(md)[0]
    assert header == ["claim", "verdict", "margin", "interval", "seeds"]
    assert md.index("## Verdicts") < md.index("## Claims") and len(rows) == len(card["claims"])
    c4 = next(c for c in card["claims"] if c["id"] == "4")
    ev = c4["checks"][c4["deciding_check"]]["evidence"]
    assert rows[0] == ["4 · B2", "✓ holds", f"{ev['margin']:.4g}", f"[{ev['lo']:.4g}, {ev['hi']:.4g}]", "3"]
    assert "| 4 · B2 | ✓ holds |" in md  # MLflow's preview follows no link to a heading (test_scorecard_links)
    assert next(r for r in rows if r[0] == "13") == ["13", "? not measured", "—", "—", "—"]
    assert "Vanilla" not in str(rows) and "The vanilla RNN" not in str(rows)  # no sentence in the table


def test_each_label_names_its_claims_heading_below_in_the_same_order(linked):
    card, md, _ = linked
    html = RENDER.render(md)
    headings = [_text(h) for h in re.findall(r"<h3>(.*?)</h3>", html)]
    assert headings == [f"Claim {c['id']}" for c in card["claims"]]
    for c in card["claims"]:
        below = md[md.index(f"### Claim {c['id']}\n") :]
        assert below.splitlines()[2].endswith(c["claim"])  # the heading, a blank line, the sentence


@pytest.mark.parametrize("recorded", ["scorecard-quick.json", "scorecard-standard.json"])
def test_every_table_of_the_recorded_scorecards_fits_a_700_pixel_pane(recorded):
    """The recorded quick and standard runs (docs/): before, the verdicts table's widest row was 236
    characters (about 1,700 px) and the claims table's 1,453 (about 9,500 px)."""
    card = json.loads((DOCS / recorded).read_text()) | {"links": {}}
    md = to_markdown(card)
    tables = _tables(md)
    lead = tables[0]
    assert lead[0][0] == "claim" and len(lead) == 1 + len(card["claims"])
    widths = {i: max(_width(r) for r in t) for i, t in enumerate(tables)}
    assert widths[0] <= PANE_CHARS, [(r, _width(r)) for r in lead if _width(r) > PANE_CHARS]
    assert max(widths.values()) <= PANE_CHARS, widths
    for c in card["claims"]:  # each long sentence is still there, below the tables, as a line of its own
        assert f"** {c['claim']}" in md.replace("\\", "")


def test_exact_claims_read_exact_not_an_interval_of_zero_width():
    card = json.loads((DOCS / "scorecard-quick.json").read_text()) | {"links": {}}
    rows = {r[0]: r for r in _tables(to_markdown(card))[0][1:]}
    methods = {c["id"]: c["checks"][c["deciding_check"]]["evidence"]["method"] for c in card["claims"]}
    exact = [i for i, m in methods.items() if m in ("exact", "identical")]
    assert exact and all(rows[f"{i} · {b}"][3] == "exact" for i, b in _labels(card, exact))
    assert "[0, 0]" not in str(rows)
    assert rows["1 · B1"][1:] == ["✓ holds", "0", "exact", "1"]  # a parameter count: exact


def _labels(card, ids):
    return [(c["id"], c["bottleneck"]) for c in card["claims"] if c["id"] in ids]


def test_exact_claims_read_exact_and_identical_seeds_do_not(tmp_path):
    """An ``exact: true`` claim shows "exact" where an interval of zero width would stand; values identical
    in every seed without it (the recorded claim 4's GRU at accuracy 1.0) are tested, not exact."""
    lag = {f"seed={s}": {"acc": 1.0} for s in range(3)}
    tested = [
        {"id": 1, "claim": "LSTM solves it.", "bottleneck": "B2"}
        | {"check": "at_least", "value": "lag[*].acc", "than": 0.9}
    ]
    _, md, _ = _card(tmp_path, Context(tmp_path / "tested"), expect=tested, measurements={"lag": lag}, run_ids={})
    assert _tables(md)[0][1] == ["1 · B2", "≈ inconclusive", "0.1", "—", "3"]  # tested, no interval: not exact
    expect = [
        {"id": 1, "claim": "LSTM solves it.", "bottleneck": "B2", "exact": True}
        | {"check": "at_least", "value": "lag[*].acc", "than": 0.9}
    ]
    _, md, html = _card(tmp_path, Context(tmp_path / "same"), expect=expect, measurements={"lag": lag}, run_ids={})
    assert _tables(md)[0][1] == ["1 · B2", "✓ holds", "0.1", "exact", "3"]
    assert "<td>0.1</td><td>exact</td><td>3</td>" in html


NASTY = [
    {
        "id": 7,
        "claim": "BLEU of *every* seed | on `bleu[*].bleu/seq2seq_small` stays<br>high",
        "bottleneck": "B3",
        "settings": "greedy_decoding <b>not</b> beam",
        "check": "at_least",
        "value": "bleu[*].bleu/seq2seq_small",
        "than": 10,
    }
]
BLEU = {f"seed={s}": {"bleu/seq2seq_small": v} for s, v in enumerate((20.0, 22.0, 21.0))}


def test_claim_text_is_shown_as_written_not_as_markdown_or_html(tmp_path):
    """``*`` is not italics, ``_`` not emphasis, ``|`` no column, ``<br>`` no line break and no literal
    tag in the lead, backticks are characters: what the reader sees is the claim's own text."""
    card, md, _ = _card(tmp_path, Context(tmp_path / "nasty"), expect=NASTY, measurements={"bleu": BLEU}, run_ids={})
    html = RENDER.render(md)
    assert "<em>" not in html and "<strong>every" not in html and "<br" not in html and "<b>" not in html
    claim = NASTY[0]["claim"]
    sentence = next(p for p in re.findall(r"<p>(.*?)</p>", html, re.S) if "BLEU of" in p)
    assert _text(sentence).endswith(claim)  # every character as written, the tag as text
    assert "greedy_decoding <b>not</b> beam" in _text(html)
    assert "bleu[*].bleu/seq2seq_small &gt;= 10" in html  # the expected text, [*] and _ as written
    assert all(len(r) == 5 for r in _tables(md)[0])  # a | in the text never adds a column
    assert "\\*every\\*" in md and "\\|" in md and "&lt;br>" in md and "seq2seq\\_small" in md


def test_every_claim_names_its_runs_or_why_it_has_none(linked, tmp_path):
    card, md, _ = linked
    c4 = md[md.index("### Claim 4\n") : md.index("### Claim 5\n")]
    rid = "run-arch=lstm,seed=0"
    assert f"[{rid[:8]}]({UI.format(rid)})" in c4 and card["links"][rid] == UI.format(rid)
    # a source the pipeline's run_ids leaves out: the claim says which (pipelines/four_bottlenecks.yaml's
    # lag_rnn, lag_lstm and lag_gru once did, and claim 4 showed a bare "—")
    _, plain, html = _card(tmp_path, Context(tmp_path / "none"), run_ids={"grad": RUN_IDS["grad"]})
    c4 = plain[plain.index("### Claim 4\n") : plain.index("### Claim 5\n")]
    assert "- runs: — (no run id was given for `lag`: the step's `run_ids`)" in c4
    assert "no run id was given for <code>lag</code>" in html


def test_without_a_ui_address_run_ids_stay_plain_text(tmp_path):
    card, md, html = _card(tmp_path, Context(tmp_path / "plain"))
    assert card["links"] == {}
    assert "- runs: run-arch=lstm,seed=0, " in md and "](http" not in md
    assert "<a href='http" not in html


def test_the_mlflow_description_is_the_headline_and_the_lead_table(linked):
    """MLflow's run page puts the description beside its "About this run" column: the note is short and
    narrow, the rest one link away."""
    card, md, _ = linked
    note = note_of(md)
    assert note.startswith("**") and "claims hold" in note.splitlines()[0] and "# " not in note.split("## Verdicts")[0]
    (lead,) = _tables(note)
    assert lead == _tables(md)[0] and max(_width(r) for r in lead) <= PANE_CHARS
    assert "## Claims" not in note and "The vanilla RNN" not in note and "](#claim-" not in note
    assert "[scorecard.html](artifacts/scorecard.html)" in note and "[scorecard.md](artifacts/scorecard.md)" in note
    assert len(note.splitlines()) <= 12 + len(card["claims"])


def test_a_collapsed_description_names_every_claims_verdict_before_the_table():
    """MLflow shows a long description collapsed (a few lines, then "Show more"): the line under the
    headline names each claim under its verdict, so the answer is on the run page without a click."""
    card = json.loads((DOCS / "scorecard-quick.json").read_text()) | {"links": {}}
    lines = note_of(to_markdown(card)).splitlines()
    assert lines[0].startswith(f"**{headline(card['summary'])}**: ")
    assert lines[2] == f"**{card['title']}**" and lines.index("## Verdicts") > 2
    found = {}
    for part in lines[0].split("**: ", 1)[1].rstrip(".").split(" · "):
        mark, verdict, ids = re.fullmatch(r"(\S) ([a-z -]+?) (\d.*)", part).groups()
        found.update({int(i.split()[0]): (mark, verdict) for i in ids.split(", ")})
    assert found == {int(c["id"]): (MARKS[c["verdict"]], c["verdict"]) for c in card["claims"]}
    open_claim = dict(card["claims"][1], verdict="inconclusive", sequential={"stopped": "open"})
    assert by_verdict([open_claim]) == "≈ inconclusive 2 (open)"


def test_the_recorded_scorecards_note_is_short():
    card = json.loads((DOCS / "scorecard-quick.json").read_text()) | {"links": {}}
    md = to_markdown(card)
    note = note_of(md)
    assert len(note) < 2_000 < len(md) // 10  # was 19,164 characters: the headline, claims table and more
    assert max(_width(r) for r in _tables(note)[0]) <= PANE_CHARS


def test_the_parent_runs_note_links_the_full_scorecard_to_its_mlflow_artifact_page(monkeypatch):
    from flows.track.note import artifact_links

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    text = "the rest: [scorecard.html](artifacts/scorecard.html), [a plot](figures/x.png)"
    page = "http://127.0.0.1:5000/#/experiments/7/runs/abc/artifacts/scorecard.html?workflowType=machine_learning"
    assert artifact_links(text, "7", "abc") == f"the rest: [scorecard.html]({page}), [a plot](figures/x.png)"
    assert artifact_links(text, None, "abc") == "the rest: scorecard.html, [a plot](figures/x.png)"


def test_the_html_opens_on_the_narrow_verdicts_table_linked_to_the_evidence(linked):
    _, _, html = linked
    assert html.index("<table class='verdicts'>") < html.index("<h2>Claims</h2>")
    verdicts = html[html.index("<table class='verdicts'>") : html.index("</table>")]
    assert verdicts.count("<tr>") == 1 + len(EXPECT) and "<th>seeds</th>" in verdicts
    assert "<a href='#claim-4'><b>4</b></a>" in verdicts and "id='claim-4'" in html
    assert "table.verdicts{width:auto;max-width:46em}" in html  # not stretched to the page
