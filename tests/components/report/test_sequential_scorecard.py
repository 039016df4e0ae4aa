"""report.scorecard with a sequential ``design``: each claim judged at the planned looks over the first
n_k seeds of its measurements, its ``sequential`` block, the stage-wise p Holm reads, the hint that
names ``--until-decided``; without a design nothing changes."""

import json

import pytest

from components import Context, get
from components.report import sequential
from components.report.scorecard import claim_sources, until_decided_command
from components.report.vocabulary import validate_expectations

LARGE = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.0]
MODERATE = [0.9, 1.4, 0.2, 1.6, 0.5, 1.1, 0.8, 1.3, 0.4, 1.2]
SMALL = [0.9, -0.3, 1.2, 0.1, 0.8, -0.4, 1.1, 0.0, 0.7, -0.6]  # t = 1.66 at 10 seeds
NULLISH = [0.5, -0.5, 0.1, -0.1, 0.4, -0.4, 0.2, -0.2, 0.05, -0.05]
NEGATIVE = [-1.0, -1.01, -0.99, -1.01, -0.99, -1.0, -1.0, -1.01, -0.99, -1.0]

MEASUREMENTS = {
    "m": {
        f"seed={s}": {"large": LARGE[s], "moderate": MODERATE[s], "small": SMALL[s], "nullish": NULLISH[s]}
        for s in range(10)
    },
    "few": {f"seed={s}": {"small": SMALL[s]} for s in range(8)},  # 8 seeds so far: looks 3 and 6 taken
    "neg": {str(s): {"x": NEGATIVE[s]} for s in range(10)},  # a single-axis matrix: bare labels
    "timing": {"speedup": 7.0},
}
EXPECT = [
    {"id": "large", "claim": "A large effect.", "check": "at_least", "value": "m[*].large", "than": 0},
    {"id": "moderate", "claim": "A moderate effect.", "check": "at_least", "value": "m[*].moderate", "than": 0},
    {"id": "small", "claim": "A small effect.", "check": "at_least", "value": "m[*].small", "than": 0},
    {"id": "nullish", "claim": "No effect.", "check": "at_least", "value": "m[*].nullish", "than": 0},
    {"id": "few", "claim": "Not all seeds in yet.", "check": "at_least", "value": "few[*].small", "than": 0},
    {"id": "neg", "claim": "Claimed positive, is negative.", "check": "above", "value": "neg[*].x", "than": 0},
    {"id": "fixed", "claim": "Not seeded.", "check": "above", "value": "timing.speedup", "than": 5, "exact": True},
]
DESIGN = {"max_seeds": 10, "first_look": {"m": 3, "few": 3, "neg": 3}}
COMMAND = "bottlenecks run pipelines/p.yaml --profile quick --set seeds={seeds}"


def _run(tmp_path, name="step", **kw):
    ctx = Context(work_dir=tmp_path / name)
    out = get("report.scorecard")(ctx, measurements=MEASUREMENTS, expect=EXPECT, seeds_command=COMMAND, **kw)
    card = json.loads(open(out["scorecard"]).read())
    return out, card, {c["id"]: c for c in card["claims"]}


@pytest.fixture
def made(tmp_path):
    return _run(tmp_path, design=DESIGN)


def test_each_claim_records_its_walk(made):
    _, card, by_id = made
    levels = [pytest.approx(x, rel=1e-4) for x in sequential.Design.planned(3, 10).levels]
    spent = [pytest.approx(x, rel=1e-4) for x in sequential.Design.planned(3, 10).spent]
    seq = {k: c["sequential"] for k, c in by_id.items()}
    assert seq["large"] == {
        "looks": [3, 6, 10],
        "taken": [3],
        "seeds": 3,
        "spent": spent[0],
        "stopped": "decided",
        "next_seeds": None,
        "level": levels[0],
        "levels": levels,
        "spending": "obrien-fleming",
        "p_look": {"holds": pytest.approx(by_id["large"]["p_holds"]), "fails": pytest.approx(1.0, abs=1e-3)},
        "conditional_power": None,
        "sources": ["m"],
    }
    assert by_id["large"]["verdict"] == "holds"
    assert (by_id["moderate"]["verdict"], seq["moderate"]["taken"], seq["moderate"]["stopped"]) == (
        "holds",
        [3, 6],
        "decided",
    )
    assert seq["moderate"]["level"] == levels[1] and seq["moderate"]["spent"] == spent[1]
    assert (by_id["small"]["verdict"], seq["small"]["stopped"], seq["small"]["taken"]) == (
        "inconclusive",
        "max_seeds",
        [3, 6, 10],
    )
    assert seq["small"]["spent"] == pytest.approx(0.025)
    assert (seq["nullish"]["stopped"], seq["nullish"]["taken"], seq["nullish"]["next_seeds"]) == ("futile", [3], None)
    assert max(seq["nullish"]["conditional_power"].values()) < 0.05
    assert (seq["few"]["stopped"], seq["few"]["taken"], seq["few"]["seeds"], seq["few"]["next_seeds"]) == (
        "open",
        [3, 6],
        6,
        10,
    )
    assert (by_id["neg"]["verdict"], seq["neg"]["taken"], seq["neg"]["stopped"]) == ("fails", [3], "decided")
    assert by_id["fixed"]["sequential"] is None and by_id["fixed"]["verdict"] == "holds"
    assert card["design"] == DESIGN | {"spending": "obrien-fleming", "futility": 0.05}


def test_a_look_reads_only_its_first_seeds(made):
    _, _, by_id = made
    assert list(by_id["large"]["measured"]["m[*].large"]) == ["0", "1", "2"]  # decided at 3 seeds
    assert len(by_id["moderate"]["measured"]["m[*].moderate"]) == 6
    assert len(by_id["few"]["measured"]["few[*].small"]) == 6  # seeds 6 and 7 wait for the look at 10
    assert by_id["moderate"]["checks"][0]["evidence"]["seeds"] == 6


def test_holm_reads_the_stagewise_p(made):
    _, card, by_id = made
    c = by_id["moderate"]
    levels = card["claims"][1]["sequential"]["levels"]
    look_p = c["sequential"]["p_look"]["holds"]
    assert c["p_holds"] == pytest.approx(levels[0] + look_p, rel=1e-4)
    assert c["p"] == pytest.approx(2 * min(c["p_holds"], c["p_fails"]), rel=1e-6)
    assert c["p_holds"] <= c["sequential"]["spent"]
    assert c["p_holm"] >= c["p"]


def test_the_summary_and_headline_count_the_open_claims(made):
    out, card, _ = made
    assert card["summary"]["open"] == 1
    assert out["headline"].endswith("· 1 open")


def test_the_hint_names_until_decided(made):
    _, _, by_id = made
    cmd = "`bottlenecks run pipelines/p.yaml --profile quick --until-decided --max-seeds 10`"
    assert "Open: look 2 of 3 (6 seeds" in by_id["few"]["reason"]
    assert f"the next look is at 10 seeds: {cmd}" in by_id["few"]["reason"]
    assert "--set seeds=" not in by_id["few"]["reason"]
    assert "Undecided at the design's last look, look 3 of 3 (10 seeds" in by_id["small"]["reason"]
    assert "--set seeds=" not in by_id["small"]["reason"]
    assert "Futile: after look 1 of 3 (3 seeds" in by_id["nullish"]["reason"]


def test_a_rerun_with_the_same_seeds_gives_the_same_card(tmp_path, made):
    _, card, _ = made
    _, again, _ = _run(tmp_path, name="again", design=DESIGN)
    assert again["claims"] == card["claims"]
    assert again["summary"] == card["summary"]


def test_without_a_design_nothing_changes(tmp_path):
    out, card, by_id = _run(tmp_path)
    assert all("sequential" not in c for c in card["claims"])
    assert "open" not in card["summary"] and "design" not in card
    assert "open" not in out["headline"]
    # the fixed design judges all 10 seeds at 2.5%
    assert len(by_id["small"]["measured"]["m[*].small"]) == 10
    assert "--until-decided --max-seeds 21` (the seeds already run come from the cache)" in by_id["few"]["reason"]


def test_a_claim_min_seeds_raises_its_first_look(tmp_path):
    expect = [{"id": 1, "claim": "c", "check": "at_least", "value": "m[*].moderate", "than": 0, "min_seeds": 5}]
    out = get("report.scorecard")(
        Context(work_dir=tmp_path / "s"), measurements=MEASUREMENTS, expect=expect, design=DESIGN
    )
    c = json.loads(open(out["scorecard"]).read())["claims"][0]
    assert c["sequential"]["looks"] == [5, 10]


def test_a_bad_design_is_refused(tmp_path):
    with pytest.raises(Exception, match="max_seeds"):
        get("report.scorecard")(
            Context(work_dir=tmp_path / "s"), measurements=MEASUREMENTS, expect=EXPECT, design={"first_look": {}}
        )


def test_claim_sources_and_the_command():
    claims = validate_expectations(
        [
            {"id": 1, "claim": "c", "check": "beats", "a": "bleu[*].bleu/A/longest", "b": "bleu[*].bleu/B/longest"},
            {"id": 2, "claim": "c", "check": "increasing", "values": ["lag.a", "grad[rnn].b", 3]},
        ]
    )
    assert [claim_sources(c) for c in claims] == [["bleu"], ["lag", "grad"]]
    assert until_decided_command(COMMAND, 10) == (
        "bottlenecks run pipelines/p.yaml --profile quick --until-decided --max-seeds 10"
    )
    assert until_decided_command("", 8) == "bottlenecks run PIPELINE.yaml --until-decided --max-seeds 8"


def test_without_a_seeds_command_the_hint_uses_the_command_that_ran_the_pipeline(tmp_path):
    ctx = Context(work_dir=tmp_path / "own", run_command="bottlenecks run mine/compare.yaml --set steps=300")
    out = get("report.scorecard")(ctx, measurements=MEASUREMENTS, expect=EXPECT, design=DESIGN)
    few = next(c for c in json.loads(open(out["scorecard"]).read())["claims"] if c["id"] == "few")
    assert "`bottlenecks run mine/compare.yaml --set steps=300 --until-decided --max-seeds 10`" in few["reason"]
    assert "<pipeline>" not in few["reason"] and "PIPELINE.yaml" not in few["reason"]


def test_the_rerun_command_is_the_users_own_without_the_added_seeds(tmp_path):
    from flows.execute._step_payload import rerun_command
    from flows.plan.build import build
    from tests.plan.test_plan import PIPE

    path = tmp_path / "p.yaml"
    path.write_text(PIPE)
    plan = build(path, profile="big", sets=["n=4"], axes_of={"sum": {"seed": [0, 1, 2]}})
    assert rerun_command(plan) == f"bottlenecks run {path} --profile big --set n=4"
