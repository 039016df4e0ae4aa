"""The README's verdict table is the one rendered from the recorded quick-profile scorecard.json,
and that recording still answers every reference of the shipped comparison's claims."""
import json
from pathlib import Path

import yaml

from benchmarks.verdict_table import BEGIN, BLOCK, README, RECORDED, render, rewrite
from tests.scorecard_claims import unmeasured_references, unresolved

PIPELINE = Path(__file__).resolve().parents[1] / "pipelines" / "four_bottlenecks.yaml"


def card() -> dict:
    assert RECORDED.is_file(), "record a quick-profile run: python benchmarks/verdict_table.py --record PATH"
    return json.loads(RECORDED.read_text())


def test_readme_table_is_rendered_from_the_recorded_scorecard():
    block = BLOCK.search(README.read_text())
    assert block, f"README.md has no generated verdict block ({BEGIN} ...)"
    assert block.group(0) == render(card()), "README.md is stale: run python benchmarks/verdict_table.py"


def test_the_rendered_table_shows_each_claims_verdict_and_reason():
    recorded = card()
    text = rewrite(f"before\n{BEGIN} x -->\nSTALE-ROW\n<!-- verdicts: end -->\nafter\n", recorded)
    assert text.startswith("before\n") and text.endswith("\nafter\n") and "STALE-ROW" not in text
    for claim in recorded["claims"]:
        row = next(line for line in text.splitlines() if line.startswith(f"| {claim['id']} |"))
        assert claim["verdict"] in row and claim["reason"].replace("|", "\\|")[:80] in row


def test_the_recorded_run_measured_every_reference_of_the_claims_it_shares_with_the_pipeline():
    recorded = card()
    assert unresolved(recorded, needs=recorded["min_seeds"]) == []
    by_id = {str(c["id"]): c for c in recorded["claims"]}
    expect = next(s for s in yaml.safe_load(PIPELINE.read_text())["steps"].values()
                  if s["uses"] == "report.scorecard")["with"]["expect"]
    # a claim added since the recording is judged by the end-to-end test; the rest must still
    # point at measurements the recorded run has (a misspelt selector does not)
    shared = [c for c in expect if str(c["id"]) in by_id and by_id[str(c["id"])]["claim"] == c["claim"].strip()]
    assert shared, "the recorded scorecard shares no claim with the pipeline: record a new run"
    assert unmeasured_references(recorded, shared) == []
