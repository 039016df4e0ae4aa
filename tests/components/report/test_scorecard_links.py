"""The scorecard's links, held against what each place it is read does with them (docs/scorecard.md,
"Links"; the renderers' behaviour was read from MLflow 3's and Prefect 3's UI bundles and checked in
headless Chromium by ``benchmarks/link_screenshots.py``):

- MLflow's preview of scorecard.md (react-markdown, no raw HTML): headings get no id, raw HTML shows as
  text, and ``#claim-4`` is read by its hash router as a page ("Page Not Found"); a link to another
  address opens in a new tab. So scorecard.md holds no ``#`` link and no raw HTML.
- Prefect's markdown artifact (raw HTML kept, ids unprefixed): the anchored copy links each label to
  an explicit ``<a id>`` on its claim's heading.
- scorecard.html in a browser: ids and ``#`` links as written; in MLflow's preview, a frame sandboxed
  to ``allow-scripts``, its script scrolls to the claim and copies a run link it may not open."""

import re
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from components import Context, get
from tests.components.report.test_scorecard_component import ARCHS, EXPECT, MEASUREMENTS, RUN_IDS

UI = "http://mlflow.example:5000/#/experiments/7/runs/{}?workflowType=machine_learning"
RAW = MarkdownIt("commonmark", {"html": True}).enable("table")  # raw HTML kept, as Prefect's renderer does
NO_RAW = MarkdownIt("commonmark", {"html": False}).enable("table")  # MLflow's: raw HTML is text


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    ctx = Context(tmp_path_factory.mktemp("links"), run_link_source=UI.format)
    return get("report.scorecard")(ctx, measurements=MEASUREMENTS, run_ids=RUN_IDS, expect=EXPECT, architectures=ARCHS)


class _Links(HTMLParser):
    """The hrefs and ids of a rendered page, and the text after each id up to the next id."""

    def __init__(self):
        super().__init__()
        self.hrefs, self.ids, self.after, self._at = [], [], {}, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("href"):
            self.hrefs.append((a["href"], a.get("target")))
        if a.get("id"):
            self.ids.append(a["id"])
            self._at = a["id"]
            self.after[self._at] = ""

    def handle_data(self, data):
        if self._at:
            self.after[self._at] += data


def _parse(html: str) -> _Links:
    p = _Links()
    p.feed(html)
    return p


def test_mlflows_preview_gets_no_link_its_router_would_lose_and_no_raw_html(out):
    md = open(out["markdown"]).read()
    page = _parse(NO_RAW.render(md))
    assert not [h for h, _ in page.hrefs if h.startswith("#")]  # each would open MLflow's "Page Not Found"
    assert "&lt;a" not in NO_RAW.render(md)  # no tag shown as text
    runs = [h for h, _ in page.hrefs if "/runs/" in h]
    assert runs and all(h.startswith("http://mlflow.example:5000/#/experiments/7/runs/") for h in runs)


def test_prefects_copy_links_each_label_to_an_id_on_its_claims_heading(out, tmp_path):
    md, card = out["anchored"], out["summary"]
    page = _parse(RAW.render(md))
    claims = [h[1:] for h, _ in page.hrefs if h.startswith("#")]
    assert claims == [f"claim-{c['id']}".lower() for c in EXPECT]
    for target in claims:  # the link resolves, to the heading of its own claim
        assert page.ids.count(target) == 1
        assert page.after[target].startswith(f"Claim {target.removeprefix('claim-')}"), page.after[target]
    assert card["claims"] == len(EXPECT)


def test_the_anchored_copy_is_the_prefect_artifact_and_not_a_file_on_the_run(out):
    component = get("report.scorecard")
    assert component.shown("artifact", out) == out["anchored"]
    assert not out["anchored"].endswith(".md")  # text: the engine logs only output files on the parent run
    assert component.shown("description", out) == out["note"]


def test_the_html_links_each_claim_to_its_row_and_each_run_to_its_page(out):
    page = _parse(open(out["html"]).read())
    claims = [h[1:] for h, _ in page.hrefs if h.startswith("#claim-")]
    assert claims and all(page.ids.count(c) == 1 for c in claims)
    runs = [(h, t) for h, t in page.hrefs if "/runs/" in h]
    assert runs and all(t == "_blank" for _, t in runs)  # a browser opens a tab; the frame's script copes


def test_the_html_script_acts_only_inside_a_frame_and_only_as_its_sandbox_allows(out):
    html = open(out["html"]).read()
    script = re.search(r"<script>(.*?)</script>", html, re.S).group(1)
    assert "if (window.top === window) return;" in script  # a plain browser follows its links itself
    assert "scrollIntoView" in script and "window.open" in script and "execCommand('copy')" in script
    assert "top.location" not in script  # the preview's sandbox has no allow-top-navigation
