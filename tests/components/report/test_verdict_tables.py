"""The verdict tables in docs/results.md are the ones rendered from the recorded quick- and standard-profile
scorecard.json files, and each recording still answers every reference of the shipped comparison's claims."""

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from benchmarks.verdict_table import RESULTS, TABLES, main, render, rewrite
from tests.support.scorecard_claims import unmeasured_references as unmeasured
from tests.support.scorecard_claims import unresolved

PIPELINE = Path(__file__).resolve().parents[3] / "pipelines" / "four_bottlenecks.yaml"


def card(table) -> dict:
    assert table.recorded.is_file(), (
        f"record a {table.profile}-profile run: "
        f"python benchmarks/verdict_table.py --profile {table.profile} --record PATH"
    )
    return json.loads(table.recorded.read_text())


@pytest.fixture(params=sorted(TABLES))
def table(request):
    return TABLES[request.param]


def test_results_table_is_rendered_from_the_recorded_scorecard(table):
    block = table.block.search(RESULTS.read_text())
    assert block, f"docs/results.md has no generated verdict block ({table.begin} ...)"
    assert block.group(0) == render(card(table), table), (
        f"docs/results.md is stale: run python benchmarks/verdict_table.py --profile {table.profile}"
    )
    assert main(["--check"]) == 0


def test_each_profiles_table_replaces_only_its_own_block():
    quick, standard = TABLES["quick"], TABLES["standard"]
    text = f"{quick.begin} x -->\nQUICK\n{quick.end}\nmiddle\n{standard.begin} x -->\nSTANDARD\n{standard.end}\n"
    out = rewrite(text, card(standard), standard)
    assert "QUICK" in out and "STANDARD" not in out and "middle" in out
    assert render(card(standard), standard) in out


def test_the_rendered_table_shows_each_claims_verdict_and_reason():
    recorded = card(TABLES["quick"])
    quick = TABLES["quick"]
    text = rewrite(f"before\n{quick.begin} x -->\nSTALE-ROW\n{quick.end}\nafter\n", recorded)
    assert text.startswith("before\n") and text.endswith("\nafter\n") and "STALE-ROW" not in text
    for claim in recorded["claims"]:
        row = next(line for line in text.splitlines() if line.startswith(f"| {claim['id']} |"))
        assert claim["verdict"] in row and claim["reason"].replace("|", "\\|")[:80] in row


def test_the_recorded_run_measured_every_reference_of_the_claims_it_shares_with_the_pipeline(table):
    recorded = card(table)
    # the standard run's claim 2 cliff is below its BLEU floor in seed 2: measured, not judged
    assert unresolved(without_floors(recorded), needs=recorded["min_seeds"]) == []
    if table.profile == "quick":
        assert unresolved(recorded, needs=recorded["min_seeds"]) == []
    by_id = {str(c["id"]): c for c in recorded["claims"]}
    scorecard = pipeline_step("report.scorecard")
    expect = scorecard["expect"]
    # a claim added since the recording is judged by the end-to-end test; the rest must still
    # point at measurements the recorded run has (a misspelt selector does not)
    shared = [c for c in expect if str(c["id"]) in by_id and by_id[str(c["id"])]["claim"] == c["claim"].strip()]
    assert shared, "the recorded scorecard shares no claim with the pipeline: record a new run"
    assert unmeasured_references(recorded, shared, set(scorecard["measurements"])) == []


# a flat/cliff check whose easy end is under base_at_least in every seed declines to judge the shape:
# "base below the floor 10 (seed 2: base 9.3): the model did not learn ..." (earlier runs) or "base
# below the floor (seed 2: base 9.3 (below the floor 10)): the model did not learn ..." (current)
FLOOR = re.compile(r"base below the floor .*\): the model did not learn the easy case.*")


def without_floors(recorded: dict) -> dict:
    """The scorecard less the checks and cells not measured because a curve's easy end is under its
    floor: a result of the measured run, not a reference that failed to resolve."""
    out = copy.deepcopy(recorded)
    for claim in out["claims"]:
        claim["checks"] = [c for c in claim["checks"] if not FLOOR.fullmatch(c["reason"])]
    for arch, row in out["architectures"].items():
        out["architectures"][arch] = {b: c for b, c in row.items() if not FLOOR.fullmatch(c.get("reason") or "")}
    return out


def test_a_floor_is_recognised_in_both_wordings_and_nothing_else_is():
    def checks(*reasons):
        return {
            "claims": [
                {"id": 2, "checks": [{"check": "cliff", "verdict": "not measured", "reason": r}]} for r in reasons
            ],
            "architectures": {},
        }

    old = "base below the floor 10 (seed 2: base 9.315): the model did not learn the easy case, so ..."
    new = "base below the floor (seed 2: base 9.3 (below the floor 10)): the model did not learn the easy case"
    assert unresolved(without_floors(checks(old, new)), needs=3) == []
    assert unresolved(without_floors(checks("no source 'bleu' in measurements")), needs=3) == [
        "claim 2 [cliff]: no source 'bleu' in measurements"
    ]


def pipeline_step(uses: str) -> dict:
    steps = yaml.safe_load(PIPELINE.read_text())["steps"]
    return next(s for s in steps.values() if s["uses"] == uses)["with"]


def source(ref: str) -> str:
    return re.split(r"[.\[]", ref, maxsplit=1)[0]


def same_measurement(ref: str) -> str:
    """``src[*].key`` and ``src.key`` name the same values once ``src`` is matrixed over seeds only
    (the resolver takes every instance for both), so a step matrixed since the recording still
    answers its claim's reference."""
    return re.sub(r"^([^.\[\]]+)\[\*\]\.", r"\1.", ref)


def unmeasured_references(recorded: dict, shared: list[dict], wired: set[str]) -> list[str]:
    """The pipeline's references the recorded run shows no value for, less those of a step added
    since the recording: a source the pipeline wires into the scorecard that the recorded run
    measured nowhere (a misspelt source is not wired, and is still reported)."""
    measured = {ref for c in recorded["claims"] for ref in c["measured"]}
    measured |= {cell["ref"] for row in recorded["architectures"].values() for cell in row.values() if cell.get("ref")}
    recorded_sources = {source(ref) for ref in measured}
    by_id = {str(c["id"]): {same_measurement(r) for r in c["measured"]} for c in recorded["claims"]}
    missing = []
    for line in unmeasured(recorded, shared):
        claim, _, ref = line.partition(": ")
        if same_measurement(ref) in by_id[claim.removeprefix("claim ")]:
            continue
        if source(ref) in wired and source(ref) not in recorded_sources:
            continue
        missing.append(line)
    return missing


def test_a_reference_the_recording_cannot_answer_is_still_reported():
    recorded = {
        "claims": [{"id": 1, "claim": "c", "measured": {"entropy.drop": 0.3, "timing.exp/rnn": 1.0}}],
        "architectures": {},
    }

    def expect(*refs):
        return [{"id": 1, "claim": "c", "checks": [{"check": "below", "value": r, "than": 1} for r in refs]}]

    wired = {"entropy", "timing", "rnn_memory"}
    # matrixed since the recording, and a step added since: both answered
    assert unmeasured_references(recorded, expect("entropy[*].drop", "rnn_memory.exp/rnn"), wired) == []
    # a misspelt key, a selector, a source that the pipeline does not wire, or one the recording had
    assert unmeasured_references(
        recorded, expect("entropy[*].dropp", "entropy[d=1].drop", "rnn_mem.exp/rnn", "timing.exp/lstm"), wired
    ) == [
        "claim 1: entropy[*].dropp",
        "claim 1: entropy[d=1].drop",
        "claim 1: rnn_mem.exp/rnn",
        "claim 1: timing.exp/lstm",
    ]
